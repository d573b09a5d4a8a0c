import { join } from "node:path";
import type { AgentCommand } from "../src/agent/stream-contract.js";
import type { CliHome, CliInvocation, CliResumeCommand, CliResumeInvocation, CliTranslator } from "../src/agent/cli-contract.js";
import type { LoginLink } from "../src/agent/cli-contract.js";
import { userDir } from "./cli-home.js";
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

export function opencodeHome(homeDir: string, userEnv: Readonly<Record<string, string | undefined>>): CliHome {
  const config = join(homeDir, "config");
  const data = join(homeDir, "data");
  const cache = join(homeDir, "cache");
  const state = join(homeDir, "state");
  const userConfig = join(userDir(userEnv, "XDG_CONFIG_HOME", ".config"), XDG_APP_DIR);
  const userData = join(userDir(userEnv, "XDG_DATA_HOME", ".local/share"), XDG_APP_DIR);
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

export const opencodeDefinition: CliTranslator = {
  home: opencodeHome,
  command: opencodeCommand,
  resume: opencodeResume,
  parser: () => createOpencodeParser(),
};
