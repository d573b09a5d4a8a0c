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
import { configNamesVariable, endpointList, LOGIN_HOSTS, providerOfModel, readUserConfig } from "./model-endpoints.js";
import { createPiStreamParser } from "./pi-stream.js";

/**
 * omp ("oh my pi", `@oh-my-pi/pi-coding-agent`, tested 18.2.3, runs on bun): `omp --mode json`, the task on stdin.
 * It speaks pi's JSONL (backends/pi-stream.ts). See docs/backends/omp.md for why each flag is there.
 */

/**
 * The user's files linked into the private agent dir: `agent.db` (SQLite: the /login credential store; omp also
 * writes usage statistics into it, through the link), custom providers (`models.yml`, its `.yaml` spelling, or a
 * legacy `models.json` that omp converts to a private `models.yml`), and settings (`config.yml`: default model, retries).
 */
export const OMP_LOGIN_FILES = ["agent.db", "models.yml", "models.yaml", "models.json", "config.yml", "config.yaml"] as const;

/** The user's own omp agent dir: `$PI_CODING_AGENT_DIR` when set (omp reads the same variable as pi), else `~/.omp/agent`. */
export function userOmpAgentDir(userEnv: Readonly<Record<string, string | undefined>>): string {
  const configured = userEnv.PI_CODING_AGENT_DIR;
  if (configured && isAbsolute(configured)) return configured;
  const configDir = userEnv.PI_CONFIG_DIR && !isAbsolute(userEnv.PI_CONFIG_DIR) ? userEnv.PI_CONFIG_DIR : ".omp";
  return join(userHome(userEnv), configDir, "agent");
}

export function ompHome(homeDir: string, userEnv: Readonly<Record<string, string | undefined>>): CliHome {
  const agentDir = join(homeDir, "omp");
  const mine = userOmpAgentDir(userEnv);
  const links = sameNameLinks(OMP_LOGIN_FILES, agentDir, mine);
  // omp also writes ~/.omp/logs, ~/.omp/gpu_cache.json and bun's ~/.bun: the agent's HOME is already private.
  return { env: { PI_CODING_AGENT_DIR: agentDir }, dirs: [agentDir], links };
}

/**
 * `--mode json --no-title --no-extensions --approval-mode yolo [--model provider/id]`, the task on stdin.
 * `--no-title`: no side request to the model for a session title. `--no-extensions`: a repo's `.omp/extensions/*.ts`
 * is code omp would load at startup, and its `registerProvider` can add a provider at any URL that the repo's
 * `.omp/config.yml` `modelRoles.default` then selects. `--approval-mode yolo`: json mode cannot ask, so a user
 * config with `tools.approvalMode: always-ask` (or `write`) would fail every edit (or command); the clone is handoff's to lose.
 */
export function ompArgs(invocation: Pick<CliInvocation, "model">): string[] {
  return [
    "--mode",
    "json",
    "--no-title",
    "--no-extensions",
    "--approval-mode",
    "yolo",
    ...(invocation.model ? ["--model", invocation.model] : []),
  ];
}

export function ompCommand(invocation: CliInvocation): AgentCommand {
  return { file: invocation.executable, args: ompArgs(invocation), stdin: invocation.task };
}

/**
 * In the same clone, `--resume <id>` continues the session (same id). From another clone omp would silently run in
 * the session's stored cwd (the old clone), whatever `--cwd` says; `--fork <id>` copies the history into a new
 * session bound to this clone (a new id, which the stream's header line reports).
 */
export function ompResume(invocation: CliResumeInvocation): CliResumeCommand {
  const same = invocation.previousCwd === invocation.cwd;
  const args = [...ompArgs(invocation), same ? "--resume" : "--fork", invocation.resumeId];
  return { command: { file: invocation.executable, args, stdin: invocation.task }, ...(same ? { sessionId: invocation.resumeId } : {}) };
}

/** A provider of models.yml: its base URL, and any model's own. */
const OmpProvider = lazySchema(() =>
  z.looseObject({
    baseUrl: z.string().optional(),
    models: z.array(z.looseObject({ baseUrl: z.string().optional() })).optional(),
  }),
);
const OmpModels = lazySchema(() => z.looseObject({ providers: z.record(z.string(), OmpProvider).optional() }));
const OmpConfig = lazySchema(() => z.looseObject({ modelRoles: z.record(z.string(), z.unknown()).optional() }));

/**
 * Built-in providers of omp 18.2.3 (pi-catalog's models.json and its auth rules): each one's API host and the
 * variables that log in to it. Its Anthropic /login refreshes at api.anthropic.com, its ChatGPT /login at auth.openai.com.
 */
const OMP_PROVIDERS: Readonly<Record<string, { host: string; keys: readonly string[]; refresh?: string }>> = {
  anthropic: { host: "api.anthropic.com", keys: ["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"] },
  openai: { host: "api.openai.com", keys: ["OPENAI_API_KEY"] },
  "openai-codex": { host: LOGIN_HOSTS.chatgptBackend, keys: [], refresh: LOGIN_HOSTS.openaiTokenRefresh },
  google: { host: "generativelanguage.googleapis.com", keys: ["GEMINI_API_KEY"] },
  "github-copilot": { host: "api.githubcopilot.com", keys: ["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"] },
  openrouter: { host: "openrouter.ai", keys: ["OPENROUTER_API_KEY"] },
  xai: { host: "api.x.ai", keys: ["XAI_API_KEY"] },
  groq: { host: "api.groq.com", keys: ["GROQ_API_KEY"] },
  mistral: { host: "api.mistral.ai", keys: ["MISTRAL_API_KEY"] },
  deepseek: { host: "api.deepseek.com", keys: ["DEEPSEEK_API_KEY"] },
  "opencode-zen": { host: "opencode.ai", keys: ["OPENCODE_API_KEY"] },
};

/** The first of the spellings that exists (omp reads models.yml, then models.yaml, then a legacy models.json). */
function firstExisting(dir: string, names: readonly string[]): string {
  return names.map((name) => join(dir, name)).find((file) => existsSync(file)) ?? join(dir, names[0]!);
}

/**
 * The providers of config.yml's `modelRoles` (the default and every other role a run may use); without any, omp takes
 * the first available provider, so each provider models.yml defines and each a key variable logs in to is included
 * (its /login store, agent.db, is SQLite and not read), and with none of those, Anthropic. For each: models.yml's
 * `baseUrl` (the provider's and its models'), else for Anthropic `ANTHROPIC_BASE_URL` (omp's gateway variable), else
 * the built-in host, and a ChatGPT /login's token host.
 */
export function ompNetwork(
  userEnv: Readonly<Record<string, string | undefined>>,
  agentEnv: Readonly<Record<string, string>>,
): CliNetworkNeeds {
  const dir = userOmpAgentDir(userEnv);
  const modelsFile = firstExisting(dir, ["models.yml", "models.yaml", "models.json"]);
  const configFile = firstExisting(dir, ["config.yml", "config.yaml"]);
  const models = OmpModels.safeParse(readUserConfig(modelsFile, "yaml"));
  const providers = (models.success && models.data.providers) || {};
  const config = OmpConfig.safeParse(readUserConfig(configFile, "yaml"));
  const roles = Object.entries((config.success && config.data.modelRoles) || {}).flatMap(([role, model]) => {
    const id = providerOfModel(model);
    return id ? [{ id, how: `modelRoles.${role} in ${configFile}` }] : [];
  });
  const available = [
    ...Object.keys(providers),
    ...Object.entries(OMP_PROVIDERS)
      .filter(([, provider]) => provider.keys.some((key) => agentEnv[key]))
      .map(([id]) => id),
  ];
  const candidates =
    roles.length > 0
      ? roles
      : available.length > 0
        ? available.map((id) => ({ id, how: "one of the available providers (no modelRoles)" }))
        : [{ id: "anthropic", how: "omp's first provider (nothing configured)" }];
  return {
    endpoints: endpointList(
      candidates.flatMap(({ id, how }) => {
        const custom = providers[id];
        const customUrls = [custom?.baseUrl, ...(custom?.models ?? []).map((model) => model.baseUrl)].filter(Boolean);
        if (customUrls.length > 0) return customUrls.map((url) => ({ url, why: `providers.${id}.baseUrl in ${modelsFile} (${how})` }));
        if (id === "anthropic" && agentEnv.ANTHROPIC_BASE_URL)
          return [{ url: agentEnv.ANTHROPIC_BASE_URL, why: `ANTHROPIC_BASE_URL (${how})` }];
        const builtIn = OMP_PROVIDERS[id];
        const api = { url: builtIn?.host, why: `its model API (provider ${id}, ${how})` };
        return builtIn?.refresh ? [api, { url: builtIn.refresh, why: "token refresh of the ChatGPT /login (agent.db)" }] : [api];
      }),
    ),
  };
}

/** omp's Foundry switch (`CLAUDE_CODE_USE_FOUNDRY`): then `FOUNDRY_BASE_URL`, not `ANTHROPIC_BASE_URL`, moves Anthropic. */
function foundryEnabled(agentEnv: Readonly<Record<string, string>>): boolean {
  return ["1", "true", "yes", "on"].includes((agentEnv.CLAUDE_CODE_USE_FOUNDRY ?? "").trim().toLowerCase());
}

/** A base URL as omp's Anthropic provider takes it: no trailing slashes, a trailing `/v1` dropped (omp adds `/v1/messages`). */
function anthropicBase(url: string): string {
  const trimmed = url.trim().replace(/\/+$/, "");
  return trimmed.endsWith("/v1") ? trimmed.slice(0, -3) : trimmed;
}

/** Anthropic's own API, where omp sends the key as `x-api-key` alone. */
function isAnthropicApi(url: string): boolean {
  try {
    return new URL(url).hostname === "api.anthropic.com";
  } catch {
    return false;
  }
}

/**
 * `ANTHROPIC_API_KEY` of the built-in Anthropic provider, kept out of the sandbox: omp gets a placeholder and
 * `ANTHROPIC_BASE_URL` on the sandbox's loopback (omp 18.2.3 reads it for provider `anthropic` when models.yml gives
 * that provider no base URL of its own). To a base URL that is not Anthropic's, omp sends the key both as `x-api-key`
 * and as a bearer token: the route asks the forwarder for what omp would send the real upstream (x-api-key alone to
 * api.anthropic.com, both to a gateway). Not when models.yml sets a
 * base URL for `anthropic` (it wins over the variable), nor with Foundry on (`FOUNDRY_BASE_URL` wins), nor when
 * `ANTHROPIC_OAUTH_TOKEN` is set or the key is an OAuth token (`sk-ant-oat…`): omp sends those as a bearer token with
 * Claude Code's headers, which it decides from the token itself and so would not do for a placeholder. A key in
 * `agent.db` or in models.yml is not a variable and stays with the agent. Nor when models.yml reads the variable
 * itself (a custom provider's `apiKey`), which would then get the placeholder.
 */
export function ompKeys(userEnv: Readonly<Record<string, string | undefined>>, agentEnv: Readonly<Record<string, string>>): KeyRoute[] {
  const key = agentEnv.ANTHROPIC_API_KEY;
  if (!key || key.includes("sk-ant-oat") || agentEnv.ANTHROPIC_OAUTH_TOKEN || foundryEnabled(agentEnv)) return [];
  const modelsFile = firstExisting(userOmpAgentDir(userEnv), ["models.yml", "models.yaml", "models.json"]);
  const models = existsSync(modelsFile) ? readUserConfig(modelsFile, "yaml") : {};
  const parsed = OmpModels.safeParse(models);
  // A models.yml handoff cannot read: what omp makes of it is unknown, so no route.
  if (!parsed.success) return [];
  const anthropic = parsed.data.providers?.anthropic;
  if (anthropic?.baseUrl || anthropic?.models?.some((model) => model.baseUrl)) return [];
  // A custom provider whose apiKey (or a header) names the variable would send the placeholder to its own URL.
  if (configNamesVariable(parsed.data, "ANTHROPIC_API_KEY")) return [];
  const upstream = anthropicBase(agentEnv.ANTHROPIC_BASE_URL || "") || "https://api.anthropic.com";
  return [
    {
      variable: "ANTHROPIC_API_KEY",
      // What omp itself sends there: x-api-key to Anthropic's own API, both headers to a gateway.
      header: isAnthropicApi(upstream) ? "x-api-key" : "x-api-key and bearer",
      upstream,
      redirect: { kind: "variable", variable: "ANTHROPIC_BASE_URL" },
    },
  ];
}

export const ompDefinition: CliTranslator = {
  home: ompHome,
  network: ompNetwork,
  keys: ompKeys,
  command: ompCommand,
  resume: ompResume,
  parser: (_invocation, info) => createPiStreamParser({ cli: info.name }),
};
