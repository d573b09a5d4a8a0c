import { SEVERITY, type TaskOutcome } from "./outcome.js";

/** Where a batch stands: tasks done (bad lines included) of all, tasks running, and how many ended each way. */
export interface BatchProgress {
  readonly total: number;
  readonly done: number;
  readonly running: number;
  readonly counts: ReadonlyMap<TaskOutcome, number>;
}

/** Best first: verified, then no_changes, verification_failed, … up to the most severe. */
const SHOWN_ORDER = [...SEVERITY].reverse();

/** `[batch] 7/10 done, 3 running: 4 verified, 2 verification_failed, 1 invalid_task` */
export function progressLine(progress: BatchProgress): string {
  const counts = SHOWN_ORDER.filter((outcome) => (progress.counts.get(outcome) ?? 0) > 0).map(
    (outcome) => `${progress.counts.get(outcome)} ${outcome}`,
  );
  return `[batch] ${progress.done}/${progress.total} done, ${progress.running} running${counts.length > 0 ? `: ${counts.join(", ")}` : ""}`;
}

export interface ProgressWriter {
  update(progress: BatchProgress): void;
  /** Ends the line (on a terminal, the cursor leaves the redrawn line). */
  finish(): void;
}

/**
 * The progress line on `stream` (stderr): on a terminal redrawn in place (`\r`, clear the line), otherwise a new line
 * each time it changes, so a CI log gets at most one line per task event and none for an event that changed nothing.
 */
export function progressWriter(stream: NodeJS.WriteStream = process.stderr, tty: boolean = stream.isTTY === true): ProgressWriter {
  let last: string | null = null;
  return {
    update(progress) {
      const line = progressLine(progress);
      if (line === last) return;
      last = line;
      stream.write(tty ? `\r\x1b[2K${line}` : `${line}\n`);
    },
    finish() {
      if (tty && last !== null) stream.write("\n");
      last = null;
    },
  };
}
