import { isAbsolute, join } from "node:path";
import type { AgentCommand } from "../src/agent/stream-contract.js";
import type { CliHome, CliInvocation, CliResumeCommand, CliResumeInvocation, CliTranslator } from "../src/agent/cli-contract.js";
import { sameNameLinks, userHome } from "./cli-home.js";
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

export const ompDefinition: CliTranslator = {
  home: ompHome,
  command: ompCommand,
  resume: ompResume,
  parser: (_invocation, info) => createPiStreamParser({ cli: info.name }),
};
