import { basename } from "node:path";
import type { ExtraMounts } from "../containment/containment.js";
import { HeadTailBuffer } from "../process/head-tail.js";
import { runProcess } from "../process/process.js";
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
    if (outcome.spawnError) return { kind: "failed", reason: `${label} could not start: ${outcome.spawnError.message}` };
    if (outcome.cancelled) return { kind: "failed", reason: `${label} was cancelled` };
    if (outcome.timedOut) return { kind: "failed", reason: `${label} ran into the turn's ${outcome.timedOut} timeout${because}` };
    if (outcome.exitCode !== 0)
      return {
        kind: "failed",
        reason: `${label} ${outcome.signal ? `was killed by ${outcome.signal}` : `exited ${outcome.exitCode}`}${because}`,
      };
  }
  return { kind: "done" };
}

/** The last non-blank line, without terminal colours. */
function lastLine(text: string): string {
  const lines = plainText(text)
    .split(/\r?\n/)
    .map((line) => line.trim());
  return lines.filter((line) => line !== "").at(-1) ?? "";
}
