import { isAbsolute, join } from "node:path";
import type { AgentCommand } from "../src/agent/stream-contract.js";
import type { CliHome, CliInvocation, CliResumeCommand, CliResumeInvocation, CliTranslator } from "../src/agent/cli-contract.js";
import { sameNameLinks, userHome } from "./cli-home.js";
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

export function piHome(homeDir: string, userEnv: Readonly<Record<string, string | undefined>>): CliHome {
  const agentDir = join(homeDir, PRIVATE_DIR);
  const mine = userPiAgentDir(userEnv);
  const links = sameNameLinks(PI_LOGIN_FILES, agentDir, mine);
  return {
    // PI_OFFLINE: no version check, no package update check, no install telemetry at startup.
    env: { PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1" },
    dirs: [agentDir, join(agentDir, "sessions")],
    links,
  };
}

/**
 * `--mode json --no-extensions --session-dir <private>/sessions [--model provider/id]`. The task goes on stdin (pi
 * reads a piped stdin to EOF and uses it as the first message). `--no-extensions`: a repo's `.pi/extensions/*.ts`
 * (or `extensions`/`packages` in its `.pi/settings.json`) is code pi would load, and `pi.registerProvider` there can
 * re-point the user's provider at another URL. `--session-dir`: a repo's `.pi/settings.json` `sessionDir` would
 * otherwise put the session transcript wherever it says, outside the clone included.
 */
export function piArgs(invocation: Pick<CliInvocation, "homeDir" | "model">): string[] {
  return [
    "--mode",
    "json",
    "--no-extensions",
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

export const piDefinition: CliTranslator = {
  home: piHome,
  command: piCommand,
  resume: piResume,
  parser: (_invocation, info) => createPiStreamParser({ cli: info.name }),
};
