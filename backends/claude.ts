import { join } from "node:path";
import { z } from "zod";
import { lazySchema } from "../src/lib/lazy-schema.js";
import type { AgentCommand } from "../src/agent/stream-contract.js";
import type { KeyRoute } from "../src/egress/key-route.js";
import type {
  CliHome,
  CliInvocation,
  CliNetworkNeeds,
  CliResumeCommand,
  CliResumeInvocation,
  CliTranslator,
} from "../src/agent/cli-contract.js";
import { createClaudeParser } from "./claude-stream.js";
import { sameNameLinks, userDir } from "./cli-home.js";
import { endpointList, LOGIN_HOSTS, readUserConfig, stringValues } from "./model-endpoints.js";

/**
 * Claude Code (`claude -p --output-format stream-json --verbose`, tested with 2.1.197). See docs/backends/claude.md
 * for why each flag is there.
 */

/**
 * The user's files linked into the private CLAUDE_CONFIG_DIR: the OAuth login (Linux keeps it in this file) and
 * their settings (model, `env`, permissions). Not `.claude.json`: Claude rewrites it on every start and keeps
 * per-project state in it; a -p run needs none of it.
 */
export const CLAUDE_LOGIN_FILES = [".credentials.json", "settings.json"] as const;

/**
 * Tools granted without a prompt, on top of `--permission-mode acceptEdits` (which already lets Edit, Write and
 * NotebookEdit change files inside the clone, and nowhere else). Bash must be named: acceptEdits alone denies it.
 * Read, Glob and Grep are named so the agent may also read outside the clone (a dependency's source, /usr/include).
 */
export const CLAUDE_ALLOWED_TOOLS = ["Bash", "Read", "Glob", "Grep"] as const;

/** The user's own Claude config dir: `$CLAUDE_CONFIG_DIR` when set to an absolute path, else `~/.claude`. */
export function userClaudeConfigDir(userEnv: Readonly<Record<string, string | undefined>>): string {
  return userDir(userEnv, "CLAUDE_CONFIG_DIR", ".claude");
}

/** Claude's config dir inside the run's private CLI home. */
const PRIVATE_DIR = "claude";

export function claudeHome(homeDir: string, userEnv: Readonly<Record<string, string | undefined>>): CliHome {
  const home = join(homeDir, PRIVATE_DIR);
  const mine = userClaudeConfigDir(userEnv);
  const links = sameNameLinks(CLAUDE_LOGIN_FILES, home, mine);
  return {
    env: {
      CLAUDE_CONFIG_DIR: home,
      DISABLE_AUTOUPDATER: "1",
      // No session-title model call, no telemetry, no error reporting.
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    },
    dirs: [home],
    links,
  };
}

export function claudeArgs(invocation: Pick<CliInvocation, "sessionId" | "model">): string[] {
  return claudeTurnArgs(`--session-id=${invocation.sessionId}`, invocation.model);
}

/** The flags of every turn; `session` names the session: a new one's id, or the one a resumed turn continues. */
function claudeTurnArgs(session: string, model: string | null): string[] {
  return [
    "-p",
    "--output-format",
    "stream-json",
    "--verbose",
    session,
    "--permission-mode",
    "acceptEdits",
    `--allowedTools=${CLAUDE_ALLOWED_TOOLS.join(",")}`,
    // Only the user's own settings: a repo's .claude/settings.json (and settings.local.json) could set env
    // ANTHROPIC_BASE_URL, a model, an apiKeyHelper or hooks.
    "--setting-sources",
    "user",
    // No MCP servers from a repo's .mcp.json or from ~/.claude.json.
    "--strict-mcp-config",
    // `=` keeps a model name that starts with "-" from being read as a flag.
    ...(model ? [`--model=${model}`] : []),
  ];
}

export function claudeCommand(invocation: CliInvocation): AgentCommand {
  return { file: invocation.executable, args: claudeArgs(invocation), stdin: invocation.task };
}

/**
 * Claude's folder for the transcripts of one working directory, under `<CLAUDE_CONFIG_DIR>/projects/`: the cwd with
 * every character other than a letter or a digit made `-` (checked with 2.1.197: `/tmp/a_b.c` is `-tmp-a-b-c`).
 */
export function claudeProjectSlug(cwd: string): string {
  return cwd.replace(/[^A-Za-z0-9]/g, "-");
}

/**
 * `-p --resume=<id>` with every other flag of a first turn (no `--session-id`: with `--resume` it would fork).
 * Claude finds a session only under the folder of the cwd it runs in, so a turn in another clone first gets the
 * earlier transcript copied to the new clone's folder.
 */
export function claudeResume(invocation: CliResumeInvocation): CliResumeCommand {
  const args = claudeTurnArgs(`--resume=${invocation.resumeId}`, invocation.model);
  const projects = join(invocation.homeDir, PRIVATE_DIR, "projects");
  const transcript = `${invocation.resumeId}.jsonl`;
  const copies =
    claudeProjectSlug(invocation.previousCwd) === claudeProjectSlug(invocation.cwd)
      ? []
      : [
          {
            from: join(projects, claudeProjectSlug(invocation.previousCwd), transcript),
            to: join(projects, claudeProjectSlug(invocation.cwd), transcript),
          },
        ];
  return { command: { file: invocation.executable, args, stdin: invocation.task }, copies, sessionId: invocation.resumeId };
}

/** The parts of the user's settings.json that decide where Claude sends its model requests and how it logs in. */
const ClaudeSettings = lazySchema(() =>
  z.looseObject({ env: z.record(z.string(), z.unknown()).optional(), apiKeyHelper: z.unknown().optional() }),
);

/** A login given as a key or token: no claude.ai OAuth login, so nothing to refresh. */
const CLAUDE_KEY_VARS = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"] as const;

/**
 * `ANTHROPIC_BASE_URL` (the `env` block of the user's settings.json wins: Claude copies it over its environment at
 * startup), else `api.anthropic.com`; and, for the claude.ai login in `.credentials.json`, its token endpoint
 * (TOKEN_URL `https://platform.claude.com/v1/oauth/token` in 2.1.197), whatever the base URL.
 */
export function claudeNetwork(
  userEnv: Readonly<Record<string, string | undefined>>,
  agentEnv: Readonly<Record<string, string>>,
): CliNetworkNeeds {
  const settingsFile = join(userClaudeConfigDir(userEnv), "settings.json");
  const settings = ClaudeSettings.safeParse(readUserConfig(settingsFile, "json"));
  const settingsEnv = settings.success ? stringValues(settings.data.env) : {};
  const env: Record<string, string | undefined> = { ...agentEnv, ...settingsEnv };
  const baseUrlWhy = settingsEnv.ANTHROPIC_BASE_URL ? `ANTHROPIC_BASE_URL in the env of ${settingsFile}` : "ANTHROPIC_BASE_URL";
  const api = env.ANTHROPIC_BASE_URL
    ? { url: env.ANTHROPIC_BASE_URL, why: baseUrlWhy }
    : { url: "api.anthropic.com", why: "its model API" };
  const keyLogin = CLAUDE_KEY_VARS.some((name) => env[name]) || (settings.success && settings.data.apiKeyHelper !== undefined);
  const refresh = { url: LOGIN_HOSTS.claudeTokenRefresh, why: "token refresh of the claude.ai login (.credentials.json)" };
  return { endpoints: endpointList(keyLogin ? [api] : [api, refresh]) };
}

/**
 * `ANTHROPIC_API_KEY` (sent as `x-api-key`) and `ANTHROPIC_AUTH_TOKEN` (a bearer token), kept out of the sandbox: Claude
 * gets a placeholder and `ANTHROPIC_BASE_URL` on the sandbox's loopback. Not when the user's settings.json sets
 * ANTHROPIC_BASE_URL: Claude copies its `env` over its environment, so the forwarder's base URL would not hold.
 */
export function claudeKeys(userEnv: Readonly<Record<string, string | undefined>>, agentEnv: Readonly<Record<string, string>>): KeyRoute[] {
  const settings = ClaudeSettings.safeParse(readUserConfig(join(userClaudeConfigDir(userEnv), "settings.json"), "json"));
  const settingsEnv = settings.success ? stringValues(settings.data.env) : {};
  if (settingsEnv.ANTHROPIC_BASE_URL || settingsEnv.ANTHROPIC_API_KEY || settingsEnv.ANTHROPIC_AUTH_TOKEN) return [];
  const upstream = agentEnv.ANTHROPIC_BASE_URL || "https://api.anthropic.com";
  const routes: KeyRoute[] = [];
  if (agentEnv.ANTHROPIC_API_KEY)
    routes.push({
      variable: "ANTHROPIC_API_KEY",
      header: "x-api-key",
      upstream,
      redirect: { kind: "variable", variable: "ANTHROPIC_BASE_URL" },
    });
  if (agentEnv.ANTHROPIC_AUTH_TOKEN)
    routes.push({
      variable: "ANTHROPIC_AUTH_TOKEN",
      header: "bearer",
      upstream,
      redirect: { kind: "variable", variable: "ANTHROPIC_BASE_URL" },
    });
  return routes;
}

export const claudeDefinition: CliTranslator = {
  home: claudeHome,
  network: claudeNetwork,
  keys: claudeKeys,
  command: claudeCommand,
  resume: claudeResume,
  parser: (invocation) => createClaudeParser(invocation.sessionId),
};
