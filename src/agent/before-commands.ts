import { basename } from "node:path";
import type { ExtraMounts } from "../containment/containment.js";
import { HeadTailBuffer } from "../process/head-tail.js";
import { runProcess } from "../process/process.js";
import { type ProcessEnding, processEnding } from "../process/process-ending.js";
import { assertNever } from "../lib/assert-never.js";
import { plainText } from "../lib/plain-text.js";
import type { AgentCommand } from "./stream-contract.js";
import type { AgentContext } from "./backend.js";

/** How a resumed turn's preparatory commands (CliResumeCommand.before) went: all exited 0, or why one did not. */
export type BeforeCommandsOutcome = { readonly kind: "done" } | { readonly kind: "failed"; readonly reason: string };

/**
 * Runs each command in order, in the clone, through the one process module and the run's sandbox (with the CLI's
 * `mounts`), bounded by the turn's deadline, idle limit and cancel signal; stops at the first that does not exit 0.
 * Their stdout is dropped: not the agent's stream.
 */
export async function runBeforeCommands(
  commands: readonly AgentCommand[],
  mounts: ExtraMounts,
  context: AgentContext,
): Promise<BeforeCommandsOutcome> {
  for (const command of commands) {
    const stderr = new HeadTailBuffer(0, 4096);
    const jailed = context.jail?.wrap({ file: command.file, args: command.args }, mounts);
    const outcome = await runProcess({
      file: jailed?.file ?? command.file,
      args: jailed?.args ?? command.args,
      cwd: context.cwd,
      env: { ...context.env, ...command.env, ...jailed?.env },
      stdin: command.stdin,
      timeoutMs: Math.max(0, context.deadline - Date.now()),
      idleTimeoutMs: context.idleTimeoutMs,
      signal: context.signal,
      onStderr: (chunk) => stderr.push(chunk),
    });
    const label = `\`${[basename(command.file), ...command.args.slice(0, 1)].join(" ")}\``;
    const said = lastLine(stderr.tailText(4096));
    const because = said ? `: ${said}` : "";
    const failed = whyNot(processEnding(outcome), label, because);
    if (failed !== null) return { kind: "failed", reason: failed };
  }
  return { kind: "done" };
}

/** Why a before-command did not do its part, or null when it exited 0: the process ladder is all of this one. */
function whyNot(ending: ProcessEnding, label: string, because: string): string | null {
  switch (ending.kind) {
    case "spawn_failed":
      return `${label} could not start: ${ending.error.message}`;
    case "timed_out":
      return `${label} ran into the turn's ${ending.limit} timeout${because}`;
    case "cancelled":
      return `${label} was cancelled`;
    case "killed_by_signal":
      return `${label} was killed by ${ending.signal}${because}`;
    case "exited":
      return ending.code === 0 ? null : `${label} exited ${ending.code}${because}`;
    default:
      return assertNever(ending);
  }
}

/** The last non-blank line, without terminal colours. */
function lastLine(text: string): string {
  const lines = plainText(text)
    .split(/\r?\n/)
    .map((line) => line.trim());
  return lines.filter((line) => line !== "").at(-1) ?? "";
}
