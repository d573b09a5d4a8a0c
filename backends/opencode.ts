import { join } from "node:path";
import { z } from "zod";
import { lazySchema } from "../src/lib/lazy-schema.js";
import type { AgentCommand } from "../src/agent/stream-contract.js";
import type {
  CliHome,
  CliInvocation,
  CliNetworkNeeds,
  CliResumeCommand,
  CliResumeInvocation,
  CliTranslator,
  LoginLink,
} from "../src/agent/cli-contract.js";
import type { KeyRoute } from "../src/egress/key-route.js";
import { userDir } from "./cli-home.js";
import { endpointList, LOGIN_HOSTS, providerOfModel, readUserConfig } from "./model-endpoints.js";
import { createOpencodeParser } from "./opencode-stream.js";

/**
 * OpenCode (`opencode-ai`, tested 1.18.33) as a translator backend: `opencode run --format json`, the task on stdin.
 * See docs/backends/opencode.md for every decision below.
 */

/**
 * `run --format json --dir <clone> [-m provider/model]`. The prompt goes on stdin: positional words with spaces are
 * re-joined with literal quotes by OpenCode. No `--auto`: inside the project OpenCode allows everything by default,
 * and an ask (e.g. a write outside the clone) is then auto-rejected, which the parser reports as permission_denied.
 */
export function opencodeArgs(invocation: Pick<CliInvocation, "cwd" | "model">): string[] {
  return ["run", "--format", "json", "--dir", invocation.cwd, ...(invocation.model ? ["-m", invocation.model] : [])];
}

/** Switches that keep OpenCode on the user's own config, offline apart from the model provider, and quiet. */
export const OPENCODE_FIXED_ENV: Readonly<Record<string, string>> = {
  // A repo-committed opencode.json / .opencode/ would otherwise override the user's provider and base URL.
  OPENCODE_DISABLE_PROJECT_CONFIG: "1",
  OPENCODE_DISABLE_AUTOUPDATE: "1",
  // The bundled models.dev snapshot is used instead of a fetch from models.opencode.ai on every run.
  OPENCODE_DISABLE_MODELS_FETCH: "1",
  OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
  OPENCODE_DISABLE_SHARE: "1",
  // No ~/.claude/CLAUDE.md or Claude Code skills (the agent's HOME is private anyway).
  OPENCODE_DISABLE_CLAUDE_CODE: "1",
};

/**
 * The user's files in OpenCode's global config dir: the config (under all three names OpenCode loads) and the global
 * AGENTS.md instructions. Linked one by one, so OpenCode's own writes there (.gitignore, a plugin install) stay private.
 */
const CONFIG_FILES = ["opencode.json", "opencode.jsonc", "config.json", "AGENTS.md"] as const;

/** OpenCode's folder under each XDG dir (config, data). */
const XDG_APP_DIR = "opencode";

/** The user's own OpenCode config dir (`$XDG_CONFIG_HOME/opencode`, else `~/.config/opencode`). */
function userOpencodeConfigDir(userEnv: Readonly<Record<string, string | undefined>>): string {
  return join(userDir(userEnv, "XDG_CONFIG_HOME", ".config"), XDG_APP_DIR);
}

/** The user's own OpenCode data dir, where `opencode auth login` keeps auth.json. */
function userOpencodeDataDir(userEnv: Readonly<Record<string, string | undefined>>): string {
  return join(userDir(userEnv, "XDG_DATA_HOME", ".local/share"), XDG_APP_DIR);
}

export function opencodeHome(homeDir: string, userEnv: Readonly<Record<string, string | undefined>>): CliHome {
  const config = join(homeDir, "config");
  const data = join(homeDir, "data");
  const cache = join(homeDir, "cache");
  const state = join(homeDir, "state");
  const userConfig = userOpencodeConfigDir(userEnv);
  const userData = userOpencodeDataDir(userEnv);
  const links: LoginLink[] = [
    { at: join(data, XDG_APP_DIR, "auth.json"), target: join(userData, "auth.json") },
    ...CONFIG_FILES.map((name) => ({ at: join(config, XDG_APP_DIR, name), target: join(userConfig, name) })),
  ];
  return {
    env: { XDG_CONFIG_HOME: config, XDG_DATA_HOME: data, XDG_CACHE_HOME: cache, XDG_STATE_HOME: state, ...OPENCODE_FIXED_ENV },
    dirs: [join(config, XDG_APP_DIR), join(data, XDG_APP_DIR), cache, state],
    links,
  };
}

/**
 * OPENCODE_DISABLE_PROJECT_CONFIG also stops OpenCode reading the repo's AGENTS.md into its system prompt. Naming the
 * clone's AGENTS.md as an instruction file (inline config; OpenCode adds it to the user's own `instructions`, and
 * skips a missing file) gives the agent the repo's instructions back without letting the repo configure anything.
 */
export function opencodeCommandEnv(cwd: string): Record<string, string> {
  return { OPENCODE_CONFIG_CONTENT: JSON.stringify({ instructions: [join(cwd, "AGENTS.md")] }) };
}

export function opencodeCommand(invocation: CliInvocation): AgentCommand {
  return { file: invocation.executable, args: opencodeArgs(invocation), stdin: invocation.task, env: opencodeCommandEnv(invocation.cwd) };
}

/**
 * `run --format json --dir <clone> --session <id>`: the first turn's flags and environment, continuing that session.
 * OpenCode keeps each session's directory in its database and runs a resumed (or `--fork`ed) session there whatever
 * `--dir` says, failing when that directory is gone (checked with 1.18.33). In a new clone (`handoff resume`) the
 * stored directory is first pointed at it with `opencode db` (see opencodeRebindSession).
 */
export function opencodeResume(invocation: CliResumeInvocation): CliResumeCommand {
  const command = opencodeCommand(invocation);
  const resumed = { ...command, args: [...command.args, "--session", invocation.resumeId] };
  if (invocation.previousCwd === invocation.cwd) return { command: resumed, sessionId: invocation.resumeId };
  return { before: [opencodeRebindSession(invocation)], command: resumed, sessionId: invocation.resumeId };
}

/**
 * `opencode db "UPDATE session SET directory = '<clone>' WHERE id = '<id>'"`: the one column that binds a session to
 * its directory, set to the new clone, in the home's own database. OpenCode then runs the session's next turn in the
 * new clone with the whole conversation (its project is the repo's root commit, the same in every clone). A schema
 * change in a later OpenCode fails the query (exit 1, "no such column"), which makes the turn `cannot_resume`.
 */
export function opencodeRebindSession(invocation: Pick<CliResumeInvocation, "executable" | "cwd" | "resumeId">): AgentCommand {
  const sql = `UPDATE session SET directory = ${sqlText(invocation.cwd)} WHERE id = ${sqlText(invocation.resumeId)}`;
  return { file: invocation.executable, args: ["db", sql], stdin: "" };
}

/** A SQLite string literal: quotes doubled, the only escape SQLite has (no backslash escapes, and argv holds no NUL). */
function sqlText(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** The keys of an OpenCode config file that choose the model's provider and its base URL. */
const OpencodeConfig = lazySchema(() =>
  z.looseObject({
    model: z.string().optional(),
    small_model: z.string().optional(),
    provider: z
      .record(
        z.string(),
        z.looseObject({
          npm: z.string().optional(),
          options: z.looseObject({ baseURL: z.string().optional(), apiKey: z.unknown().optional() }).optional(),
        }),
      )
      .optional(),
  }),
);

/** Only which providers auth.json holds a login for, and of which kind (`api`, `oauth`): not the secrets. */
const OpencodeAuth = lazySchema(() => z.record(z.string(), z.looseObject({ type: z.string().optional() })));

/**
 * Providers OpenCode ships (its bundled models.dev snapshot and AI SDK packages, 1.18.33): the default API host, the
 * variables that log in, and the variable the provider's AI SDK package reads as its base URL.
 */
const OPENCODE_PROVIDERS: Readonly<Record<string, { host: string; keys: readonly string[]; baseUrlVar?: string }>> = {
  anthropic: { host: "api.anthropic.com", keys: ["ANTHROPIC_API_KEY"], baseUrlVar: "ANTHROPIC_BASE_URL" },
  openai: { host: "api.openai.com", keys: ["OPENAI_API_KEY"], baseUrlVar: "OPENAI_BASE_URL" },
  opencode: { host: "opencode.ai", keys: ["OPENCODE_API_KEY"] },
  google: { host: "generativelanguage.googleapis.com", keys: ["GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY"] },
  openrouter: { host: "openrouter.ai", keys: ["OPENROUTER_API_KEY"] },
  xai: { host: "api.x.ai", keys: ["XAI_API_KEY"] },
  groq: { host: "api.groq.com", keys: ["GROQ_API_KEY"] },
  mistral: { host: "api.mistral.ai", keys: ["MISTRAL_API_KEY"] },
  deepseek: { host: "api.deepseek.com", keys: ["DEEPSEEK_API_KEY"] },
  "github-copilot": { host: "api.githubcopilot.com", keys: ["GITHUB_TOKEN"] },
};

/** The config files OpenCode merges from its global dir, later ones winning. */
const MERGED_CONFIG_FILES = ["config.json", "opencode.json", "opencode.jsonc"] as const;

interface OpencodeProviderChoice {
  readonly model: string | undefined;
  readonly smallModel: string | undefined;
  /** Each configured provider's baseURL, and the file that set it. */
  readonly baseUrls: ReadonlyMap<string, { readonly url: string | undefined; readonly file: string }>;
  /** The configured providers that set their own `options.apiKey`. */
  readonly apiKeys: ReadonlySet<string>;
  /** Each configured provider's AI SDK package (`npm`), where the config names one. */
  readonly packages: ReadonlyMap<string, string>;
  /** The variables the config reads with `{env:NAME}`. */
  readonly envRead: ReadonlySet<string>;
}

/** The user's global config, merged as OpenCode merges it; `{env:NAME}` is substituted from the agent's environment first, as OpenCode does. */
function readOpencodeConfig(dir: string, agentEnv: Readonly<Record<string, string>>): OpencodeProviderChoice {
  let model: string | undefined;
  let smallModel: string | undefined;
  const baseUrls = new Map<string, { url: string | undefined; file: string }>();
  const apiKeys = new Set<string>();
  const packages = new Map<string, string>();
  const envRead = new Set<string>();
  const substitute = (text: string) =>
    text.replace(/\{env:([^}]+)\}/g, (_match, name: string) => {
      envRead.add(name.trim());
      return agentEnv[name.trim()] ?? "";
    });
  for (const name of MERGED_CONFIG_FILES) {
    const file = join(dir, name);
    const parsed = OpencodeConfig.safeParse(readUserConfig(file, "jsonc", substitute));
    if (!parsed.success) continue;
    model = parsed.data.model ?? model;
    smallModel = parsed.data.small_model ?? smallModel;
    for (const [id, provider] of Object.entries(parsed.data.provider ?? {})) {
      const url = provider.options?.baseURL;
      if (url !== undefined || !baseUrls.has(id)) baseUrls.set(id, { url, file });
      if (provider.options?.apiKey !== undefined) apiKeys.add(id);
      if (provider.npm !== undefined) packages.set(id, provider.npm);
    }
  }
  return { model, smallModel, baseUrls, apiKeys, packages, envRead };
}

/** Which providers auth.json holds a login for, and of which kind. */
function readOpencodeLogins(
  userEnv: Readonly<Record<string, string | undefined>>,
): Readonly<Record<string, { type?: string | undefined }>> {
  const auth = OpencodeAuth.safeParse(readUserConfig(join(userOpencodeDataDir(userEnv), "auth.json"), "json"));
  return auth.success ? auth.data : {};
}

/** The providers OpenCode may use, as opencodeNetwork describes, each with how it was chosen. */
function opencodeCandidates(
  config: OpencodeProviderChoice,
  logins: Readonly<Record<string, unknown>>,
  agentEnv: Readonly<Record<string, string>>,
): { id: string; how: string }[] {
  const named = [
    { id: providerOfModel(config.model), how: "model" },
    { id: providerOfModel(config.smallModel), how: "small_model" },
  ].flatMap(({ id, how }) => (id ? [{ id, how: `its ${how}` }] : []));
  const loggedIn = [
    ...Object.keys(logins),
    ...Object.entries(OPENCODE_PROVIDERS)
      .filter(([, provider]) => provider.keys.some((key) => agentEnv[key]))
      .map(([id]) => id),
  ];
  return named.length > 0
    ? named
    : config.baseUrls.size > 0
      ? [...config.baseUrls.keys()].map((id) => ({ id, how: "one of the configured providers (no model named)" }))
      : loggedIn.length > 0
        ? loggedIn.map((id) => ({ id, how: "one of the logged-in providers (no model named)" }))
        : [{ id: "opencode", how: "its default free provider" }];
}

/**
 * The providers of `model` and `small_model` in the user's config; without either, OpenCode takes the first available
 * of the providers the config defines, else of every provider it can log in to, so each of those is included; with
 * none, its own free provider (OpenCode Zen). For each: the config's `provider.<id>.options.baseURL`, else the
 * variable its SDK reads, else its default host; an OpenAI ChatGPT login (`oauth` in auth.json) talks to the ChatGPT
 * backend and refreshes at auth.openai.com. models.dev is not needed: handoff sets OPENCODE_DISABLE_MODELS_FETCH.
 */
export function opencodeNetwork(
  userEnv: Readonly<Record<string, string | undefined>>,
  agentEnv: Readonly<Record<string, string>>,
): CliNetworkNeeds {
  const config = readOpencodeConfig(userOpencodeConfigDir(userEnv), agentEnv);
  const logins = readOpencodeLogins(userEnv);
  const candidates = opencodeCandidates(config, logins, agentEnv);
  return {
    endpoints: endpointList(
      candidates.flatMap(({ id, how }) => {
        const configured = config.baseUrls.get(id);
        if (configured?.url) return [{ url: configured.url, why: `provider.${id}.options.baseURL in ${configured.file} (${how})` }];
        if (id === "openai" && logins[id]?.type === "oauth") {
          return [
            { url: LOGIN_HOSTS.chatgptBackend, why: `its model API for the ChatGPT login of provider openai (${how})` },
            { url: LOGIN_HOSTS.openaiTokenRefresh, why: "token refresh of the ChatGPT login (auth.json)" },
          ];
        }
        const builtIn = OPENCODE_PROVIDERS[id];
        if (!builtIn) return [];
        const fromEnv = builtIn.baseUrlVar ? agentEnv[builtIn.baseUrlVar] : undefined;
        if (fromEnv) return [{ url: fromEnv, why: `${builtIn.baseUrlVar} (provider ${id}, ${how})` }];
        return [{ url: builtIn.host, why: `its model API (provider ${id}, ${how})` }];
      }),
    ),
  };
}

/**
 * The built-in providers whose AI SDK package reads its base URL from a variable (checked with 1.18.33 against a
 * local server: `@ai-sdk/anthropic` sends `x-api-key` to ANTHROPIC_BASE_URL, `@ai-sdk/openai` `Authorization: Bearer`
 * to OPENAI_BASE_URL; each variable holds the whole base, `/v1` included), and the package a custom provider names
 * when it uses the same SDK (which then reads the same key variable).
 */
const OPENCODE_KEY_ROUTES: Readonly<
  Record<string, { key: string; header: KeyRoute["header"]; baseUrlVar: string; upstream: string; npm: string }>
> = {
  anthropic: {
    key: "ANTHROPIC_API_KEY",
    header: "x-api-key",
    baseUrlVar: "ANTHROPIC_BASE_URL",
    upstream: "https://api.anthropic.com/v1",
    npm: "@ai-sdk/anthropic",
  },
  openai: {
    key: "OPENAI_API_KEY",
    header: "bearer",
    baseUrlVar: "OPENAI_BASE_URL",
    upstream: "https://api.openai.com/v1",
    npm: "@ai-sdk/openai",
  },
};

/**
 * ANTHROPIC_API_KEY and OPENAI_API_KEY, for a run whose providers (as opencodeNetwork chooses them) include the
 * built-in `anthropic` or `openai`: OpenCode is pointed at the forwarder with the variable its SDK reads as the base
 * URL. None where that would not hold or would break another reader of the key: the user's config sets the
 * provider's `options.baseURL` (it wins over the variable) or `options.apiKey` (it wins over the key), auth.json
 * holds a login for it (that login is what OpenCode sends), the config reads the key with `{env:NAME}`, or another
 * configured provider uses the same SDK package (it reads the same variable and sends it to its own base URL).
 */
export function opencodeKeys(
  userEnv: Readonly<Record<string, string | undefined>>,
  agentEnv: Readonly<Record<string, string>>,
): KeyRoute[] {
  const config = readOpencodeConfig(userOpencodeConfigDir(userEnv), agentEnv);
  const logins = readOpencodeLogins(userEnv);
  const chosen = new Set(opencodeCandidates(config, logins, agentEnv).map(({ id }) => id));
  return Object.entries(OPENCODE_KEY_ROUTES).flatMap(([id, route]) => {
    if (!chosen.has(id) || !agentEnv[route.key]) return [];
    if (config.baseUrls.get(id)?.url !== undefined || config.apiKeys.has(id) || logins[id] !== undefined) return [];
    if (config.envRead.has(route.key)) return [];
    if ([...config.packages].some(([other, npm]) => other !== id && npm === route.npm)) return [];
    return [
      {
        variable: route.key,
        header: route.header,
        upstream: agentEnv[route.baseUrlVar] || route.upstream,
        redirect: { kind: "variable", variable: route.baseUrlVar },
      },
    ];
  });
}

export const opencodeDefinition: CliTranslator = {
  home: opencodeHome,
  network: opencodeNetwork,
  keys: opencodeKeys,
  command: opencodeCommand,
  resume: opencodeResume,
  parser: () => createOpencodeParser(),
};
