import type { BatchRunDefaults, TaskSpec } from "./batch-task.js";
import type { TaskRecord } from "./batch-record.js";

/**
 * Where a batch's tasks run: here (the local executor: ExternalCodingRunner, `--jobs` at once) or on workers through
 * the queue (src/queue/). The batch runner (batch.ts) owns the rest, the same for both: which tasks start when, the
 * progress line, interrupts, batch.json and the JUnit file.
 */
export interface TaskExecutor {
  /** How many tasks it is given at once: the local `--jobs`; the queue takes them all (its workers decide). */
  readonly concurrency: number;
  /**
   * Runs one task to its record. Never throws for the task's own failure: bad input is `invalid_task`, a failure of
   * handoff `internal_error`. When `signal` aborts, a running task is cancelled (its record is the run's, usually
   * `user_cancelled`) and one not yet started is `not_started`. Calls `started` once, when the task begins to run.
   */
  run(spec: TaskSpec, context: TaskContext): Promise<TaskRecord>;
  /** Releases what the executor holds (the queue's connections). */
  close(): Promise<void>;
}

export interface TaskContext {
  readonly batchId: string;
  /** What the batch's command line gives every task. */
  readonly defaults: Omit<BatchRunDefaults, "signal">;
  readonly signal: AbortSignal;
  readonly started: () => void;
}
