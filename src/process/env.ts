/**
 * Environments handed to the agent and to setup/verification commands: an allowlist, never handoff's own
 * environment. Secrets reach the agent only when the user names them with `--env NAME`.
 */
const PASSED_THROUGH = ["PATH", "LANG", "TZ", "TERM"] as const;

export interface EnvRequest {
  /** Private HOME and TMPDIR for this process. */
  readonly home: string;
  readonly tmp: string;
  /** Variable names the user allowed through (`--env NAME`). */
  readonly extraNames?: readonly string[];
  /** Variables handoff sets itself (e.g. HANDOFF_TASK). */
  readonly set?: Readonly<Record<string, string>>;
  readonly from?: NodeJS.ProcessEnv;
}

export function buildEnvironment(request: EnvRequest): Record<string, string> {
  const from = request.from ?? process.env;
  const env: Record<string, string> = {};
  for (const name of [...PASSED_THROUGH, ...(request.extraNames ?? [])]) {
    const value = from[name];
    if (value !== undefined) env[name] = value;
  }
  env.PATH ??= "/usr/local/bin:/usr/bin:/bin";
  env.HOME = request.home;
  env.TMPDIR = request.tmp;
  return { ...env, ...request.set };
}

/** `--env` takes names, not values: a value on the command line would end up in shell history and request.json. */
export function isValidEnvName(name: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name);
}
