import type { AgentCommand } from "../src/agent/stream-contract.js";

/**
 * `--backend command --agent-cmd CMD`: any program as the agent. It runs with `/bin/sh -c` in the clone, the task
 * on stdin, in the file named by $HANDOFF_TASK_FILE, and in $HANDOFF_TASK when it fits (and `--model`, if given, in
 * $HANDOFF_MODEL). A resumed turn gets handoff's feedback on stdin and in $HANDOFF_FEEDBACK, and every turn its
 * number in $HANDOFF_ATTEMPT; the candidate of a best-of-N run it is, in $HANDOFF_CANDIDATE (1…N; 1 for a run without
 * candidates, so that a script can read it unconditionally). Its stdout is read by backends/command-stream.ts; backends/command-backend.ts runs it. Exit 0 means
 * it finished; anything else is an agent error (src/agent/agent-ending.ts).
 */
export function buildCommandAgentCommand(
  agentCmd: string,
  task: string,
  model: string | null = null,
  taskFile: string | null = null,
  feedback: string | null = null,
): AgentCommand {
  // The kernel caps one environment string at 128 KiB (E2BIG): a larger task is on stdin and in the file only.
  const fits = (text: string) => Buffer.byteLength(text) <= MAX_TASK_IN_ENV_BYTES;
  const inline: Record<string, string> = fits(task) ? { HANDOFF_TASK: task } : {};
  // A resumed turn (`--attempts`, `handoff resume`): handoff's feedback, or the user's new instruction, on stdin and here.
  const resumed: Record<string, string> =
    feedback === null ? {} : { HANDOFF_FEEDBACK: fits(feedback) ? feedback : feedback.slice(0, 16 * 1024) };
  return {
    file: "/bin/sh",
    args: ["-c", agentCmd],
    stdin: feedback ?? task,
    env: { ...inline, ...resumed, ...(taskFile ? { HANDOFF_TASK_FILE: taskFile } : {}), ...(model ? { HANDOFF_MODEL: model } : {}) },
  };
}

/** The largest task also passed in $HANDOFF_TASK. */
export const MAX_TASK_IN_ENV_BYTES = 64 * 1024;
