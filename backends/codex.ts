import { createHash } from "node:crypto";
import { join } from "node:path";
import { z } from "zod";
import { lazySchema } from "../src/lib/lazy-schema.js";
import type { AgentCommand } from "../src/agent/stream-contract.js";
import { BASE_URL_TOKEN, type KeyRoute } from "../src/egress/key-route.js";
import type {
  CliHome,
  CliInvocation,
  CliNetworkNeeds,
  CliResumeCommand,
  CliResumeInvocation,
  CliTranslator,
} from "../src/agent/cli-contract.js";
import { createCodexParser } from "./codex-stream.js";
import { sameNameLinks, userDir } from "./cli-home.js";
import { endpointList, LOGIN_HOSTS, readUserConfig } from "./model-endpoints.js";

/**
 * OpenAI Codex CLI (`codex exec --json`, tested with 0.171.0). See docs/backends/codex.md for why each flag is there.
 */

/** The user's files linked into the private CODEX_HOME: the login, and the config that names their provider. */
export const CODEX_LOGIN_FILES = ["auth.json", "config.toml"] as const;

/** The user's own Codex home: `$CODEX_HOME` when set to an absolute path, else `~/.codex`. */
export function userCodexHome(userEnv: Readonly<Record<string, string | undefined>>): string {
  return userDir(userEnv, "CODEX_HOME", ".codex");
}

export function codexHome(homeDir: string, userEnv: Readonly<Record<string, string | undefined>>): CliHome {
  const home = join(homeDir, "codex");
  const mine = userCodexHome(userEnv);
  const links = sameNameLinks(CODEX_LOGIN_FILES, home, mine);
  return { env: { CODEX_HOME: home }, dirs: [home], links };
}

/** A TOML basic string (JSON's escapes are a subset of TOML's). */
function tomlString(value: string): string {
  return JSON.stringify(value);
}

/**
 * `-c projects={"<clone>"={trust_level="untrusted"}}`: a repo-committed `.codex/config.toml` is read only for a
 * trusted project, keyed by the working directory. The clone is a fresh path, so it is untrusted anyway; saying so
 * explicitly keeps it untrusted even if the user's config trusts that path (`--trust` does not override it either).
 */
export function untrustedProjectOverride(cwd: string): string {
  return `projects={${tomlString(cwd)}={trust_level="untrusted"}}`;
}

/**
 * With handoff's filtered network, the commands Codex runs get it too: Codex's own sandbox would otherwise take
 * their network away altogether, so a host `--allow-net` names (a registry) could not be reached and an attempt to
 * call out would never reach handoff's gate to be refused and recorded. With the host's network (`--allow-net '*'`,
 * no sandbox) Codex keeps its default: no network for its commands.
 */
const NETWORK_THROUGH_HANDOFF = ["-c", "sandbox_workspace_write.network_access=true"] as const;

export function codexArgs(invocation: Pick<CliInvocation, "cwd" | "model"> & Partial<Pick<CliInvocation, "network">>): string[] {
  return [
    "exec",
    "--json",
    "-C",
    invocation.cwd,
    "--sandbox",
    "workspace-write",
    "--skip-git-repo-check",
    "-c",
    'approval_policy="never"',
    "-c",
    untrustedProjectOverride(invocation.cwd),
    ...(invocation.network === "filtered" ? NETWORK_THROUGH_HANDOFF : []),
    ...(invocation.model ? ["-m", invocation.model] : []),
    "-",
  ];
}

export function codexCommand(invocation: CliInvocation): AgentCommand {
  return { file: invocation.executable, args: codexArgs(invocation), stdin: invocation.task };
}

/**
 * Where a resumed turn keeps Codex's SQLite state: a folder of CODEX_HOME named for the home's own path. Codex records
 * each thread's rollout file by absolute path there and, when that path is gone (a kept home renamed for `handoff
 * resume`), fails "no rollout found" instead of looking again. A home at a new path so gets a fresh database, which
 * Codex fills from the rollout files under `sessions/`; the turns of one run share theirs.
 */
export function codexResumeStateDir(homeDir: string): string {
  const key = createHash("sha256").update(homeDir).digest("hex").slice(0, 16);
  return join(homeDir, "codex", "state", key);
}

/**
 * `exec --json <the first turn's flags> -c sqlite_home=… resume <thread_id> -`: the global options go before `resume`
 * (as Codex's SDK puts them), `-c` overrides are not kept with the session so they are passed again, and the thread
 * is found in the same CODEX_HOME. The `-C` and the untrusted-project override name the clone this turn runs in.
 */
export function codexResume(invocation: CliResumeInvocation): CliResumeCommand {
  const state = ["-c", `sqlite_home=${tomlString(codexResumeStateDir(invocation.homeDir))}`];
  const args = [...codexArgs(invocation).slice(0, -1), ...state, "resume", invocation.resumeId, "-"];
  return { command: { file: invocation.executable, args, stdin: invocation.task }, sessionId: invocation.resumeId };
}

/** The keys of config.toml that choose the model provider and its base URL. */
const CodexConfig = lazySchema(() =>
  z.looseObject({
    model_provider: z.string().optional(),
    profile: z.string().optional(),
    profiles: z
      .record(z.string(), z.looseObject({ model_provider: z.string().optional(), openai_base_url: z.string().optional() }))
      .optional(),
    openai_base_url: z.string().optional(),
    model_providers: z
      .record(
        z.string(),
        z.looseObject({
          base_url: z.string().optional(),
          env_key: z.string().optional(),
          requires_openai_auth: z.boolean().optional(),
          aws: z.looseObject({ region: z.string().optional() }).optional(),
        }),
      )
      .optional(),
  }),
);

/** Only which kind of login auth.json holds (`codex login`): its secrets are not read. */
const CodexAuth = lazySchema(() =>
  z.looseObject({ auth_mode: z.string().nullish(), OPENAI_API_KEY: z.string().nullish(), tokens: z.unknown().optional() }),
);

/** Codex's built-in local providers and the port each listens on by default (CODEX_OSS_PORT / CODEX_OSS_BASE_URL move them). */
const CODEX_OSS_PORTS: Readonly<Record<string, number>> = { ollama: 11434, lmstudio: 1234 };

/** How Codex will authenticate to OpenAI: a ChatGPT login in auth.json (refreshed), a ChatGPT access token, or a key. */
function codexLogin(home: string, agentEnv: Readonly<Record<string, string>>): "chatgpt-file" | "chatgpt-token" | "api-key" {
  if (agentEnv.CODEX_API_KEY) return "api-key";
  if (agentEnv.CODEX_ACCESS_TOKEN) return "chatgpt-token";
  const auth = CodexAuth.safeParse(readUserConfig(join(home, "auth.json"), "json"));
  if (!auth.success) return "api-key";
  const mode = auth.data.auth_mode?.toLowerCase();
  const chatgpt = mode ? mode.includes("chatgpt") : Boolean(auth.data.tokens) && !auth.data.OPENAI_API_KEY;
  return chatgpt ? "chatgpt-file" : "api-key";
}

/**
 * The selected provider (`model_provider`, or that of the selected `profile`; default `openai`): a custom
 * `[model_providers.<id>] base_url`, the built-in provider's `openai_base_url`, or the default Codex picks by login:
 * `https://api.openai.com/v1` for a key, `https://chatgpt.com/backend-api/codex` for a ChatGPT login, which refreshes at
 * `https://auth.openai.com/oauth/token` (CODEX_REFRESH_TOKEN_URL_OVERRIDE moves it). Codex 0.171.0 ignores the
 * `OPENAI_BASE_URL` variable (checked: it still called api.openai.com), so it is not read.
 */
export function codexNetwork(
  userEnv: Readonly<Record<string, string | undefined>>,
  agentEnv: Readonly<Record<string, string>>,
): CliNetworkNeeds {
  const home = userCodexHome(userEnv);
  const configFile = join(home, "config.toml");
  const parsed = CodexConfig.safeParse(readUserConfig(configFile, "toml"));
  const config = parsed.success ? parsed.data : {};
  const providerId = (config.profile && config.profiles?.[config.profile]?.model_provider) || config.model_provider || "openai";
  const ossPort = CODEX_OSS_PORTS[providerId];
  if (ossPort !== undefined) {
    const url = agentEnv.CODEX_OSS_BASE_URL || `http://localhost:${agentEnv.CODEX_OSS_PORT || ossPort}/v1`;
    return { endpoints: endpointList([{ url, why: `the local model server of Codex's built-in provider "${providerId}"` }]) };
  }
  if (providerId === "amazon-bedrock") {
    const aws = config.model_providers?.[providerId]?.aws;
    const region = aws?.region || agentEnv.AWS_REGION || agentEnv.AWS_DEFAULT_REGION || "us-east-1";
    return { endpoints: endpointList([{ url: `bedrock-mantle.${region}.api.aws`, why: "its model API (Amazon Bedrock)" }]) };
  }
  const custom = providerId === "openai" ? undefined : config.model_providers?.[providerId];
  const configured = custom
    ? { url: custom.base_url, why: `base_url of model provider "${providerId}" in ${configFile}` }
    : { url: config.openai_base_url, why: `openai_base_url in ${configFile}` };
  const usesOpenaiLogin = !custom || custom.requires_openai_auth === true;
  const login = usesOpenaiLogin ? codexLogin(home, agentEnv) : "api-key";
  const fallback =
    login === "api-key"
      ? { url: "api.openai.com", why: "its model API" }
      : { url: LOGIN_HOSTS.chatgptBackend, why: "its model API for a ChatGPT login (the ChatGPT backend)" };
  const refresh = {
    url: agentEnv.CODEX_REFRESH_TOKEN_URL_OVERRIDE || LOGIN_HOSTS.openaiTokenRefresh,
    why: "token refresh of the ChatGPT login (auth.json)",
  };
  const api = configured.url ? configured : fallback;
  return { endpoints: endpointList(login === "chatgpt-file" ? [api, refresh] : [api]) };
}

/**
 * The keys Codex takes from the environment, kept out of the sandbox: Codex gets a placeholder in the variable and,
 * first on its command line, a `-c` that points its provider at handoff's model forwarder, which sends each request
 * on with the key as a bearer token.
 * - A custom provider's `[model_providers.<id>] env_key`, via `-c model_providers.<id>.base_url=…`.
 * - `CODEX_API_KEY` for the built-in OpenAI provider (it wins over a login in auth.json), via `-c openai_base_url=…`,
 *   which overrides config.toml's. Not when the selected profile sets its own `openai_base_url`.
 * Codex 0.171.0 does not read `OPENAI_API_KEY` from the environment (checked: no key was sent), and a ChatGPT login
 * stays a file in its home: neither is routed.
 */
export function codexKeys(userEnv: Readonly<Record<string, string | undefined>>, agentEnv: Readonly<Record<string, string>>): KeyRoute[] {
  const parsed = CodexConfig.safeParse(readUserConfig(join(userCodexHome(userEnv), "config.toml"), "toml"));
  const config = parsed.success ? parsed.data : {};
  const profile = config.profile ? config.profiles?.[config.profile] : undefined;
  const providerId = profile?.model_provider || config.model_provider || "openai";
  if (providerId === "openai") {
    if (!agentEnv.CODEX_API_KEY || profile?.openai_base_url) return [];
    return [
      {
        variable: "CODEX_API_KEY",
        header: "bearer",
        upstream: config.openai_base_url || "https://api.openai.com/v1",
        redirect: { kind: "leading_args", args: ["-c", `openai_base_url=${BASE_URL_TOKEN}`] },
      },
    ];
  }
  const custom = config.model_providers?.[providerId];
  // A dotted key of -c: an id that would need quoting there is left alone.
  if (!custom?.base_url || !custom.env_key || custom.requires_openai_auth || !/^[A-Za-z0-9_-]+$/.test(providerId)) return [];
  if (!agentEnv[custom.env_key]) return [];
  return [
    {
      variable: custom.env_key,
      header: "bearer",
      upstream: custom.base_url,
      redirect: { kind: "leading_args", args: ["-c", `model_providers.${providerId}.base_url=${BASE_URL_TOKEN}`] },
    },
  ];
}

export const codexDefinition: CliTranslator = {
  home: codexHome,
  network: codexNetwork,
  keys: codexKeys,
  command: codexCommand,
  resume: codexResume,
  parser: () => createCodexParser(),
};
