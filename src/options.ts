import { existsSync, realpathSync } from "node:fs";
import { homedir, tmpdir, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { ExternalAgentBackend } from "./backend.js";
import type { HandoffConfig } from "./config.js";
import { UsageError } from "./errors.js";
import { isValidEnvName } from "./env.js";
import { globToRegExp } from "./glob.js";
import { isInside } from "./paths.js";
import { type PatchLimits, resolveLimits } from "./limits.js";
import type { PatchPolicy } from "./policy.js";
import type { ResourceCaps } from "./cgroup.js";
import { isSafeRunId } from "./run-dir.js";
import { SANDBOX_MODES, type SandboxMode } from "./sandbox.js";

/** What a caller asks of one run. Everything optional falls back to `.handoff.json`, then to the defaults. */
export interface RunOptions {
  /** The source repository (default: the current directory). */
  readonly repo?: string;
  readonly task: string;
  /** A backend object, or a built-in backend's name. */
  readonly backend?: ExternalAgentBackend | string;
  /** With the `command` backend: the shell command run as the agent. */
  readonly agentCmd?: string;
  readonly bin?: string;
  readonly model?: string;
  readonly verify?: readonly string[];
  readonly setup?: readonly string[];
  /** Approve without asking (`--yes`). */
  readonly yes?: boolean;
  /** Asked when `yes` is not set; resolves true to approve. Without it and without `yes`, the run is refused. */
  readonly approve?: (question: string) => Promise<boolean>;
  readonly timeoutMs?: number;
  readonly idleTimeoutMs?: number;
  readonly verifyTimeoutMs?: number;
  readonly allow?: readonly string[];
  readonly deny?: readonly string[];
  /** Patch and workspace limits, sizes in bytes (`--max-files`, `--max-file-size`, … on the command line). */
  readonly limits?: Partial<PatchLimits>;
  readonly runsDir?: string;
  readonly runId?: string;
  /** Where disposable clones live (default: $HANDOFF_WORKSPACE_DIR, else the system temp dir). A tmpfs is fastest. */
  readonly workspacesDir?: string;
  /** Where each run's private agent-CLI homes live (default: $HANDOFF_CLI_HOME_DIR, else $XDG_STATE_HOME/handoff/homes). */
  readonly cliHomesDir?: string;
  readonly keepWorkspace?: boolean;
  readonly allowDirty?: boolean;
  /** Run the verify commands on the untouched base first. */
  readonly baseline?: boolean;
  /** Names of environment variables passed through to the agent (e.g. its API key). */
  readonly env?: readonly string[];
  /**
   * `auto` (default): bubblewrap when it works here, else none with a warning; `bwrap`: bubblewrap or a usage
   * error; `none`: no sandbox. Never read from `.handoff.json`: a repository must not be able to switch it off.
   */
  readonly sandbox?: SandboxMode;
  /** Give verification commands the network (sandboxed verification has none by default). */
  readonly verifyNetwork?: boolean;
  /** Caps on each contained process tree (enforced where a writable cgroup exists). */
  readonly caps?: Partial<ResourceCaps>;
  readonly signal?: AbortSignal;
}

export const DEFAULTS = {
  backend: "codex",
  timeoutMs: 1800_000,
  idleTimeoutMs: 600_000,
  verifyTimeoutMs: 900_000,
  sandbox: "auto",
  maxProcesses: 4096,
} as const;

/** Half the machine's memory, at most 8 GiB, for each contained process tree. */
export function defaultMemoryCap(total = totalmem()): number {
  return Math.min(8 * 1024 ** 3, Math.floor(total / 2));
}

/** `$XDG_STATE_HOME/handoff` (absolute only), else `~/.local/state/handoff`. */
function stateDir(env: NodeJS.ProcessEnv): string {
  const state = env.XDG_STATE_HOME && env.XDG_STATE_HOME.startsWith("/") ? env.XDG_STATE_HOME : join(homedir(), ".local", "state");
  return join(state, "handoff");
}

export function defaultRunsDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(stateDir(env), "runs");
}

/** Not under the temp dir: Codex will not put its sandbox helpers there. */
export function defaultCliHomesDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.HANDOFF_CLI_HOME_DIR ? resolve(env.HANDOFF_CLI_HOME_DIR) : join(stateDir(env), "homes");
}

export function defaultWorkspacesDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.HANDOFF_WORKSPACE_DIR ? resolve(env.HANDOFF_WORKSPACE_DIR) : join(tmpdir(), "handoff");
}

/** Real path of `path`, or of its nearest existing ancestor joined with the rest. */
export function realPathOrAncestor(path: string): string {
  let current = resolve(path);
  const rest: string[] = [];
  while (!existsSync(current)) {
    rest.unshift(current.slice(dirname(current).length + 1));
    const parent = dirname(current);
    if (parent === current) break;
    current = parent;
  }
  return join(realpathSync(current), ...rest);
}

/** Options after merging `.handoff.json`, validated. */
export interface ResolvedOptions {
  readonly backendName: string;
  readonly model: string | null;
  readonly verify: readonly string[];
  readonly setup: readonly string[];
  readonly timeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly verifyTimeoutMs: number;
  readonly policy: PatchPolicy;
  readonly runsDir: string;
  readonly workspacesDir: string;
  readonly cliHomesDir: string;
  readonly envNames: readonly string[];
  readonly sandbox: SandboxMode;
  readonly verifyNetwork: boolean;
  readonly caps: ResourceCaps;
}

export function resolveOptions(options: RunOptions, config: HandoffConfig, sourceTop: string): ResolvedOptions {
  if (options.task.trim() === "") throw new UsageError("empty_task", "the task text is empty");
  if (options.runId !== undefined && !isSafeRunId(options.runId)) {
    throw new UsageError("bad_run_id", `--run-id '${options.runId}' must be one path segment of letters, digits, '.', '_' or '-'`);
  }
  for (const name of options.env ?? []) {
    if (!isValidEnvName(name)) throw new UsageError("bad_env_name", `--env takes a variable name, not '${name}'`);
  }
  const runsDir = realPathOrAncestor(options.runsDir ?? defaultRunsDir());
  if (isInside(runsDir, sourceTop)) {
    throw new UsageError("runs_dir_inside_repo", `the runs directory ${runsDir} is inside the source repository; choose another --runs-dir`);
  }
  const workspacesDir = realPathOrAncestor(options.workspacesDir ?? defaultWorkspacesDir());
  if (isInside(workspacesDir, sourceTop)) {
    throw new UsageError("workspace_inside_repo", `the workspace directory ${workspacesDir} is inside the source repository`);
  }
  const cliHomesDir = realPathOrAncestor(options.cliHomesDir ?? defaultCliHomesDir());
  if (isInside(cliHomesDir, sourceTop)) {
    throw new UsageError("cli_homes_inside_repo", `the agent-CLI home directory ${cliHomesDir} is inside the source repository`);
  }
  const seconds = (value: number | undefined) => (value === undefined ? undefined : value * 1000);
  const positive = (name: string, value: number) => {
    if (!Number.isFinite(value) || value <= 0) throw new UsageError("bad_number", `${name} must be a positive number`);
    return value;
  };
  const allow = options.allow ?? config.allow ?? [];
  const deny = options.deny ?? config.deny ?? [];
  for (const [name, patterns] of [["--allow", allow], ["--deny", deny]] as const) {
    for (const pattern of patterns) {
      try {
        globToRegExp(pattern);
      } catch {
        throw new UsageError("bad_glob", `${name} '${pattern}' is not a valid pattern`);
      }
    }
  }
  const sandbox = options.sandbox ?? DEFAULTS.sandbox;
  if (!SANDBOX_MODES.includes(sandbox)) throw new UsageError("bad_sandbox", `--sandbox must be auto, bwrap or none, not '${sandbox}'`);
  const whole = (name: string, value: number) => {
    if (!Number.isInteger(value) || value <= 0) throw new UsageError("bad_number", `${name} must be a positive whole number`);
    return value;
  };
  const caps: ResourceCaps = {
    processes: whole("--max-processes", options.caps?.processes ?? DEFAULTS.maxProcesses),
    memoryBytes: whole("--max-memory", options.caps?.memoryBytes ?? defaultMemoryCap()),
  };
  const backendName = typeof options.backend === "object" ? options.backend.name : (options.backend ?? config.backend ?? DEFAULTS.backend);
  return {
    backendName,
    model: options.model ?? config.model ?? null,
    verify: options.verify ?? config.verify ?? [],
    setup: options.setup ?? config.setup ?? [],
    timeoutMs: positive("--timeout", options.timeoutMs ?? seconds(config.timeout) ?? DEFAULTS.timeoutMs),
    idleTimeoutMs: positive("--idle-timeout", options.idleTimeoutMs ?? seconds(config.idleTimeout) ?? DEFAULTS.idleTimeoutMs),
    verifyTimeoutMs: positive("--verify-timeout", options.verifyTimeoutMs ?? seconds(config.verifyTimeout) ?? DEFAULTS.verifyTimeoutMs),
    policy: { allow, deny, ...resolveLimits(options.limits, config) },
    runsDir,
    workspacesDir,
    cliHomesDir,
    envNames: options.env ?? [],
    sandbox,
    verifyNetwork: options.verifyNetwork ?? false,
    caps,
  };
}
