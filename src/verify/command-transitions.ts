import { type CommandRecord, commandPassed } from "./shell-commands.js";
import type { BaselineOutcome } from "./verify.js";

/** A verify command's result on one side: it passed, it failed, or it never ran (an earlier one failed first). */
export type CommandState = "green" | "red" | "not_run";

/** One verify command on the untouched base (`--baseline`) and after the patch. */
export interface CommandTransition {
  readonly command: string;
  readonly base: CommandState;
  readonly patched: CommandState;
}

function states(count: number, records: readonly CommandRecord[]): CommandState[] {
  return Array.from({ length: count }, (_, index) => {
    const record = records[index];
    return record === undefined ? "not_run" : commandPassed(record) ? "green" : "red";
  });
}

/**
 * Pairs each verify command with itself, by position (the same text may appear twice): its result on the base and
 * after the patch. A base whose setup failed ran no verify command: every one is `not_run` there.
 */
export function commandTransitions(
  verify: readonly string[],
  baseline: BaselineOutcome,
  patched: readonly CommandRecord[],
): CommandTransition[] {
  const base = states(
    verify.length,
    baseline.commands.filter((record) => record.phase === "baseline"),
  );
  const after = states(
    verify.length,
    patched.filter((record) => record.phase === "verify"),
  );
  return verify.map((command, index) => ({ command, base: base[index]!, patched: after[index]! }));
}
