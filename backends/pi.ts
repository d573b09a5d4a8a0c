import { existsSync } from "node:fs";
import { isAbsolute, join } from "node:path";
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
} from "../src/agent/cli-contract.js";
import type { KeyRoute } from "../src/egress/key-route.js";
import { sameNameLinks, userHome } from "./cli-home.js";
import { configNamesVariable, endpointList, LOGIN_HOSTS, readUserConfig } from "./model-endpoints.js";
import { createPiStreamParser } from "./pi-stream.js";

/**
 * pi (`@mariozechner/pi-coding-agent`, tested 0.73.1): `pi --mode json`, the task on stdin.
 * See docs/backends/pi.md for why each flag is there.
 */

/** The user's files linked into the private agent dir: the /login store, custom providers, settings (default model, retries). */
export const PI_LOGIN_FILES = ["auth.json", "models.json", "settings.json"] as const;

/** `~` and `~/…` as pi itself expands them in PI_CODING_AGENT_DIR. */
function expandHome(value: string, userEnv: Readonly<Record<string, string | undefined>>): string | null {
  if (value === "~") return userHome(userEnv);
  if (value.startsWith("~/")) return join(userHome(userEnv), value.slice(2));
  return isAbsolute(value) ? value : null;
}

/** The user's own pi agent dir: `$PI_CODING_AGENT_DIR` when set, else `~/.pi/agent`. */
export function userPiAgentDir(userEnv: Readonly<Record<string, string | undefined>>): string {
  const configured = userEnv.PI_CODING_AGENT_DIR ? expandHome(userEnv.PI_CODING_AGENT_DIR, userEnv) : null;
  return configured ?? join(userHome(userEnv), ".pi", "agent");
}

/** pi's agent dir inside the run's private CLI home. */
const PRIVATE_DIR = "pi";

/**
 * The built-in providers whose key handoff can keep out of the sandbox: the variable pi reads the key from, the
 * header pi's SDK sends it in (checked against the scripted model: anthropic, openai, xai; groq, openrouter and
 * deepseek take the same openai-completions path as xai), pi-ai 0.73.1's base URL, and for anthropic and openai the
 * variable handoff reads as the upstream instead (pi itself ignores it: see docs/backends/pi.md, Keys).
 */
const PI_KEY_PROVIDERS: Readonly<Record<string, { key: string; header: KeyRoute["header"]; upstream: string; upstreamVariable?: string }>> =
  {
    anthropic: {
      key: "ANTHROPIC_API_KEY",
      header: "x-api-key",
      upstream: "https://api.anthropic.com",
      upstreamVariable: "ANTHROPIC_BASE_URL",
    },
    openai: { key: "OPENAI_API_KEY", header: "bearer", upstream: "https://api.openai.com/v1", upstreamVariable: "OPENAI_BASE_URL" },
    xai: { key: "XAI_API_KEY", header: "bearer", upstream: "https://api.x.ai/v1" },
    groq: { key: "GROQ_API_KEY", header: "bearer", upstream: "https://api.groq.com/openai/v1" },
    openrouter: { key: "OPENROUTER_API_KEY", header: "bearer", upstream: "https://openrouter.ai/api/v1" },
    deepseek: { key: "DEEPSEEK_API_KEY", header: "bearer", upstream: "https://api.deepseek.com" },
  };

/** The variable handoff sets to the forwarder's base URL for `provider`, read by its extension (PI_KEYS_EXTENSION). */
export function piBaseUrlVariable(provider: string): string {
  return `HANDOFF_PI_BASE_URL_${provider.toUpperCase().replaceAll("-", "_")}`;
}

/** handoff's pi extension, written into the private home: outside pi's agent dir, so pi never discovers it itself. */
const KEYS_EXTENSION_FILE = "handoff-pi-keys.ts";

/**
 * The extension `-e` loads (still loaded under `--no-extensions`): for each provider whose HANDOFF_PI_BASE_URL_*
 * handoff set, `registerProvider(id, { baseUrl })`, which in pi 0.73.1 only moves that provider's models to the URL
 * (their ids, api and costs stay the built-in ones). With none set (no key forwarded) it does nothing.
 */
export const PI_KEYS_EXTENSION = `// Written by handoff (backends/pi.ts) for this run: points a built-in provider at handoff's model forwarder.
const VARIABLES: Record<string, string> = ${JSON.stringify(Object.fromEntries(Object.keys(PI_KEY_PROVIDERS).map((id) => [id, piBaseUrlVariable(id)])))};
export default function (pi: { registerProvider(name: string, config: { baseUrl: string }): void }): void {
  for (const [provider, variable] of Object.entries(VARIABLES)) {
    const baseUrl = process.env[variable];
    if (baseUrl) pi.registerProvider(provider, { baseUrl });
  }
}
`;

export function piHome(homeDir: string, userEnv: Readonly<Record<string, string | undefined>>): CliHome {
  const agentDir = join(homeDir, PRIVATE_DIR);
  const mine = userPiAgentDir(userEnv);
  const links = sameNameLinks(PI_LOGIN_FILES, agentDir, mine);
  return {
    // PI_OFFLINE: no version check, no package update check, no install telemetry at startup.
    env: { PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1" },
    dirs: [agentDir, join(agentDir, "sessions")],
    links,
    files: [{ at: join(homeDir, KEYS_EXTENSION_FILE), text: PI_KEYS_EXTENSION }],
  };
}

/**
 * `--mode json --no-extensions -e <private>/handoff-pi-keys.ts --session-dir <private>/sessions [--model provider/id]`. The task goes on stdin (pi
 * reads a piped stdin to EOF and uses it as the first message). `--no-extensions`: a repo's `.pi/extensions/*.ts`
 * (or `extensions`/`packages` in its `.pi/settings.json`) is code pi would load, and `pi.registerProvider` there can
 * re-point the user's provider at another URL. `--session-dir`: a repo's `.pi/settings.json` `sessionDir` would
 * otherwise put the session transcript wherever it says, outside the clone included. `-e`: handoff's own extension
 * (PI_KEYS_EXTENSION), how a forwarded key's provider is pointed at the forwarder; a no-op otherwise.
 */
export function piArgs(invocation: Pick<CliInvocation, "homeDir" | "model">): string[] {
  return [
    "--mode",
    "json",
    "--no-extensions",
    "-e",
    join(invocation.homeDir, KEYS_EXTENSION_FILE),
    "--session-dir",
    join(invocation.homeDir, PRIVATE_DIR, "sessions"),
    ...(invocation.model ? ["--model", invocation.model] : []),
  ];
}

export function piCommand(invocation: CliInvocation): AgentCommand {
  return { file: invocation.executable, args: piArgs(invocation), stdin: invocation.task };
}

/**
 * In the same clone, `--session <id>` continues the session (same id, same file). From another clone pi would ask
 * on the terminal whether to fork (and, with stdin not a terminal, exit 0 having done nothing) or, given the file,
 * run in the session's old cwd; `--fork <id>` copies the history into a new session bound to this clone (a new id,
 * which the stream's header line reports).
 */
export function piResume(invocation: CliResumeInvocation): CliResumeCommand {
  const same = invocation.previousCwd === invocation.cwd;
  const args = [...piArgs(invocation), same ? "--session" : "--fork", invocation.resumeId];
  return { command: { file: invocation.executable, args, stdin: invocation.task }, ...(same ? { sessionId: invocation.resumeId } : {}) };
}

/** A provider of models.json: its base URL, and any model's own. */
const PiProvider = lazySchema(() =>
  z.looseObject({
    baseUrl: z.string().optional(),
    models: z.array(z.looseObject({ baseUrl: z.string().optional() })).optional(),
  }),
);
const PiModels = lazySchema(() => z.looseObject({ providers: z.record(z.string(), PiProvider).optional() }));
const PiSettings = lazySchema(() => z.looseObject({ defaultProvider: z.string().optional() }));
/** Only which providers /login stored, and of which kind (`api_key`, `oauth`): not the secrets. */
const PiAuth = lazySchema(() => z.record(z.string(), z.looseObject({ type: z.string().optional() })));

/**
 * Built-in providers of pi-ai 0.73.1 (models.generated.js, env-api-keys.js): each one's API host and the variables
 * that log in to it. A /login (OAuth) adds the hosts in PI_OAUTH_HOSTS.
 */
const PI_PROVIDERS: Readonly<Record<string, { host: string; keys: readonly string[] }>> = {
  anthropic: { host: "api.anthropic.com", keys: ["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"] },
  openai: { host: "api.openai.com", keys: ["OPENAI_API_KEY"] },
  "openai-codex": { host: LOGIN_HOSTS.chatgptBackend, keys: [] },
  google: { host: "generativelanguage.googleapis.com", keys: ["GEMINI_API_KEY"] },
  "github-copilot": { host: "api.individual.githubcopilot.com", keys: ["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"] },
  openrouter: { host: "openrouter.ai", keys: ["OPENROUTER_API_KEY"] },
  xai: { host: "api.x.ai", keys: ["XAI_API_KEY"] },
  groq: { host: "api.groq.com", keys: ["GROQ_API_KEY"] },
  mistral: { host: "api.mistral.ai", keys: ["MISTRAL_API_KEY"] },
  deepseek: { host: "api.deepseek.com", keys: ["DEEPSEEK_API_KEY"] },
  opencode: { host: "opencode.ai", keys: ["OPENCODE_API_KEY"] },
};

/** Where each /login (pi-ai's utils/oauth) refreshes its token. */
const PI_OAUTH_HOSTS: Readonly<Record<string, { url: string; why: string }>> = {
  anthropic: { url: LOGIN_HOSTS.claudeTokenRefresh, why: "token refresh of the claude.ai /login (auth.json)" },
  "openai-codex": { url: LOGIN_HOSTS.openaiTokenRefresh, why: "token refresh of the ChatGPT /login (auth.json)" },
  "github-copilot": { url: "api.github.com", why: "the Copilot token of the GitHub /login (auth.json)" },
};

/**
 * `defaultProvider` of settings.json; without it pi takes the first available of its providers, so each provider
 * models.json defines and each it can log in to (auth.json, a key variable) is included, and with none of those,
 * Anthropic (the first direct API in pi's order). For each: models.json's `baseUrl` (the provider's and its models'),
 * else the built-in host, and a /login's token host.
 */
export function piNetwork(
  userEnv: Readonly<Record<string, string | undefined>>,
  agentEnv: Readonly<Record<string, string>>,
): CliNetworkNeeds {
  const dir = userPiAgentDir(userEnv);
  const modelsFile = join(dir, "models.json");
  const models = PiModels.safeParse(readUserConfig(modelsFile, "json"));
  const providers = (models.success && models.data.providers) || {};
  const settings = PiSettings.safeParse(readUserConfig(join(dir, "settings.json"), "json"));
  const auth = PiAuth.safeParse(readUserConfig(join(dir, "auth.json"), "json"));
  const logins = auth.success ? auth.data : {};
  const defaultProvider = settings.success ? settings.data.defaultProvider : undefined;
  const available = [
    ...Object.keys(providers),
    ...Object.keys(logins),
    ...Object.entries(PI_PROVIDERS)
      .filter(([, provider]) => provider.keys.some((key) => agentEnv[key]))
      .map(([id]) => id),
  ];
  const candidates = defaultProvider
    ? [{ id: defaultProvider, how: "defaultProvider in settings.json" }]
    : available.length > 0
      ? available.map((id) => ({ id, how: "one of the available providers (no defaultProvider)" }))
      : [{ id: "anthropic", how: "pi's first provider (nothing configured)" }];
  return {
    endpoints: endpointList(
      candidates.flatMap(({ id, how }) => {
        const custom = providers[id];
        const customUrls = [custom?.baseUrl, ...(custom?.models ?? []).map((model) => model.baseUrl)].filter(Boolean);
        const api =
          customUrls.length > 0
            ? customUrls.map((url) => ({ url, why: `providers.${id}.baseUrl in ${modelsFile} (${how})` }))
            : [{ url: PI_PROVIDERS[id]?.host, why: `its model API (provider ${id}, ${how})` }];
        const oauth = logins[id]?.type === "oauth" ? PI_OAUTH_HOSTS[id] : undefined;
        return oauth ? [...api, oauth] : api;
      }),
    ),
  };
}

/**
 * The keys of pi's built-in providers (PI_KEY_PROVIDERS) passed with `--env`, kept out of the sandbox: pi gets a
 * placeholder, and handoff's extension points the provider at the forwarder (HANDOFF_PI_BASE_URL_<PROVIDER>). The
 * upstream is the provider's own API, or for anthropic (openai) `ANTHROPIC_BASE_URL` (`OPENAI_BASE_URL`) when passed
 * with `--env`: pi ignores those, handoff reads them as where to send a forwarded key. Not for a provider whose
 * base URL (its own or a model's) models.json sets, nor one with a credential in auth.json (pi uses that one, not
 * the variable), nor Anthropic with `ANTHROPIC_OAUTH_TOKEN` set or an OAuth token as key (`sk-ant-oat…`: pi sends
 * it as a bearer token with Claude Code's headers, decided from the token itself). None when models.json or
 * auth.json exists and cannot be read: what pi makes of it is unknown; nor when models.json reads the variable
 * itself (a custom provider's `apiKey`), which would then get the placeholder.
 */
export function piKeys(userEnv: Readonly<Record<string, string | undefined>>, agentEnv: Readonly<Record<string, string>>): KeyRoute[] {
  const dir = userPiAgentDir(userEnv);
  const read = (name: string): unknown => (existsSync(join(dir, name)) ? readUserConfig(join(dir, name), "json") : {});
  const models = PiModels.safeParse(read("models.json"));
  const auth = PiAuth.safeParse(read("auth.json"));
  if (!models.success || !auth.success) return [];
  const providers = models.data.providers ?? {};
  return Object.entries(PI_KEY_PROVIDERS).flatMap(([id, provider]) => {
    const key = agentEnv[provider.key];
    if (!key || auth.data[id]) return [];
    if (id === "anthropic" && (key.includes("sk-ant-oat") || agentEnv.ANTHROPIC_OAUTH_TOKEN)) return [];
    const custom = providers[id];
    if (custom?.baseUrl || custom?.models?.some((model) => model.baseUrl)) return [];
    // A custom provider whose apiKey (or a header) names the variable would send the placeholder to its own URL.
    if (configNamesVariable(models.data, provider.key)) return [];
    const chosen = provider.upstreamVariable ? agentEnv[provider.upstreamVariable]?.trim().replace(/\/+$/, "") : undefined;
    return [
      {
        variable: provider.key,
        header: provider.header,
        upstream: chosen || provider.upstream,
        redirect: { kind: "variable", variable: piBaseUrlVariable(id) },
      },
    ];
  });
}

export const piDefinition: CliTranslator = {
  home: piHome,
  network: piNetwork,
  keys: piKeys,
  command: piCommand,
  resume: piResume,
  parser: (_invocation, info) => createPiStreamParser({ cli: info.name }),
};
