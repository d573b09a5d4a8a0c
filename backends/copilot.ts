import { join } from "node:path";
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
import { sameNameLinks, userDir } from "./cli-home.js";
import { createCopilotStreamParser } from "./copilot-stream.js";
import { endpointList } from "./model-endpoints.js";

/**
 * GitHub Copilot CLI (`@github/copilot`, tested 1.0.102): `copilot --output-format json`, the task on stdin.
 * See docs/backends/copilot.md for why each flag is there.
 */

/**
 * The user's file linked into the private COPILOT_HOME: `config.json`, where `copilot login` records the account
 * (and its token, when the user let it store the token in plain text instead of the system keyring).
 */
export const COPILOT_LOGIN_FILES = ["config.json"] as const;

/** COPILOT_HOME inside the run's private CLI home. */
const PRIVATE_DIR = "copilot";

/** The user's own Copilot dir: `$COPILOT_HOME` when set, else `~/.copilot`. */
export function userCopilotHome(userEnv: Readonly<Record<string, string | undefined>>): string {
  return userDir(userEnv, "COPILOT_HOME", ".copilot");
}

export function copilotHome(homeDir: string, userEnv: Readonly<Record<string, string | undefined>>): CliHome {
  const home = join(homeDir, PRIVATE_DIR);
  return {
    // COPILOT_AUTO_UPDATE=false: no download of a newer CLI, and the pinned one runs even if a newer one is cached.
    env: { COPILOT_HOME: home, COPILOT_AUTO_UPDATE: "false" },
    dirs: [home],
    links: sameNameLinks(COPILOT_LOGIN_FILES, home, userCopilotHome(userEnv)),
  };
}

/**
 * The flags of every turn. `--allow-all-tools`: headless it refuses any tool it would ask about (handoff's sandbox
 * and gates are the boundary). `--allow-all-paths`: else it refuses a shell command that names a path outside the
 * clone and the temp dir (`ln -s /etc/passwd`, a dependency's source), which the sandbox already confines.
 * `--no-custom-instructions`: no AGENTS.md, .github/copilot-instructions.md,
 * .github/instructions/ (the repository's words in the system prompt). `--no-ask-user`: nobody is there to answer.
 * `--disable-builtin-mcps`: no GitHub MCP server (it would reach api.githubcopilot.com). `--no-auto-update`,
 * `--disable-client-telemetry`: nothing but the model. `-C <clone>`: a resumed session otherwise changes into the
 * directory it was created in, when that still exists ("resume-auto-cd").
 */
function copilotArgs(invocation: Pick<CliInvocation, "cwd" | "model">): string[] {
  return [
    "--output-format",
    "json",
    "--allow-all-tools",
    "--allow-all-paths",
    "--no-custom-instructions",
    "--no-ask-user",
    "--disable-builtin-mcps",
    "--no-auto-update",
    "--disable-client-telemetry",
    "-C",
    invocation.cwd,
    ...(invocation.model ? ["--model", invocation.model] : []),
  ];
}

/**
 * Set over whatever `--env` passes: `COPILOT_ALLOW_ALL=true` would trust the clone, and copilot then starts the
 * repository's MCP servers, plugins and hooks (checked: a repo's `.mcp.json` server ran). The flags above still allow
 * every tool.
 */
export const COPILOT_ENV = { COPILOT_ALLOW_ALL: "false" } as const;

/** A new session with handoff's id (`--session-id`), so the parser can name it from the first line. */
export function copilotCommand(invocation: CliInvocation): AgentCommand {
  const args = [...copilotArgs(invocation), `--session-id=${invocation.sessionId}`];
  return { file: invocation.executable, args, stdin: invocation.task, env: COPILOT_ENV };
}

/**
 * `--resume=<id>` continues the session kept in COPILOT_HOME/session-state/<id>, in the same clone or, with a moved
 * home, in a new one (`-C` keeps it there); the id stays the same.
 */
export function copilotResume(invocation: CliResumeInvocation): CliResumeCommand {
  const args = [...copilotArgs(invocation), `--resume=${invocation.resumeId}`];
  return { command: { file: invocation.executable, args, stdin: invocation.task, env: COPILOT_ENV }, sessionId: invocation.resumeId };
}

/** GitHub's Copilot API hosts: the plan's endpoint comes from api.github.com (copilot_internal/user). */
const GITHUB_COPILOT_HOSTS = [
  "api.githubcopilot.com",
  "api.individual.githubcopilot.com",
  "api.business.githubcopilot.com",
  "api.enterprise.githubcopilot.com",
] as const;

/**
 * Bring your own key: the `COPILOT_PROVIDER_BASE_URL` passed with `--env` (copilot reads no provider from a file).
 * Otherwise the GitHub login's hosts: api.github.com (its Copilot token and plan) and the Copilot API; on a GitHub
 * Enterprise host (`COPILOT_GH_HOST`, else `GH_HOST`), `api.<host>` and `copilot-api.<host>`.
 */
export function copilotNetwork(
  _userEnv: Readonly<Record<string, string | undefined>>,
  agentEnv: Readonly<Record<string, string>>,
): CliNetworkNeeds {
  const byok = agentEnv.COPILOT_PROVIDER_BASE_URL;
  if (byok) return { endpoints: endpointList([{ url: byok, why: "COPILOT_PROVIDER_BASE_URL (its own model provider)" }]) };
  const host = (agentEnv.COPILOT_GH_HOST || agentEnv.GH_HOST || "github.com").replace(/^https?:\/\//, "").replace(/\/.*$/, "");
  if (host !== "github.com") {
    return {
      endpoints: endpointList([
        { url: `api.${host}`, why: `the GitHub login's API on ${host}` },
        { url: `copilot-api.${host}`, why: `the Copilot API of ${host}` },
      ]),
    };
  }
  return {
    endpoints: endpointList([
      { url: "api.github.com", why: "the GitHub login's Copilot token and plan" },
      ...GITHUB_COPILOT_HOSTS.map((url) => ({ url, why: "the Copilot API (its plan's endpoint)" })),
    ]),
  };
}

/** How copilot sends `COPILOT_PROVIDER_API_KEY` for each provider type (azure's `api-key` header is not one handoff forwards). */
const API_KEY_HEADERS: Readonly<Record<string, KeyRoute["header"]>> = { openai: "bearer", anthropic: "x-api-key" };

/**
 * The BYOK credential passed with `--env`, kept out of the sandbox: copilot gets a placeholder and a
 * `COPILOT_PROVIDER_BASE_URL` on the sandbox's loopback. `COPILOT_PROVIDER_BEARER_TOKEN` wins over the API key, as in
 * copilot (always `Authorization: Bearer`); the API key is a bearer token for `openai`, `x-api-key` for `anthropic`.
 * None when copilot would send the key some other way: `COPILOT_PROVIDER_API_KEY_COMMAND` (its output wins),
 * `COPILOT_PROVIDER_HEADERS` (a header there may carry or override the credential), a websocket transport, or
 * `azure` with an API key (`api-key` header).
 */
export function copilotKeys(
  _userEnv: Readonly<Record<string, string | undefined>>,
  agentEnv: Readonly<Record<string, string>>,
): KeyRoute[] {
  const base = agentEnv.COPILOT_PROVIDER_BASE_URL?.trim().replace(/\/+$/, "");
  if (!base) return [];
  if (agentEnv.COPILOT_PROVIDER_API_KEY_COMMAND || agentEnv.COPILOT_PROVIDER_HEADERS) return [];
  if ((agentEnv.COPILOT_PROVIDER_TRANSPORT ?? "http").toLowerCase() === "websockets") return [];
  const redirect = { kind: "variable", variable: "COPILOT_PROVIDER_BASE_URL" } as const;
  if (agentEnv.COPILOT_PROVIDER_BEARER_TOKEN)
    return [{ variable: "COPILOT_PROVIDER_BEARER_TOKEN", header: "bearer", upstream: base, redirect }];
  const header = API_KEY_HEADERS[(agentEnv.COPILOT_PROVIDER_TYPE || "openai").toLowerCase()];
  if (!agentEnv.COPILOT_PROVIDER_API_KEY || !header) return [];
  return [{ variable: "COPILOT_PROVIDER_API_KEY", header, upstream: base, redirect }];
}

export const copilotDefinition: CliTranslator = {
  home: copilotHome,
  network: copilotNetwork,
  keys: copilotKeys,
  command: copilotCommand,
  resume: copilotResume,
  parser: (invocation, info) => createCopilotStreamParser({ cli: info.name, chosenSessionId: invocation.sessionId }),
};
