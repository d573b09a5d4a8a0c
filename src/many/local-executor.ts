import { join, resolve } from "node:path";
import { UsageError } from "../lib/errors.js";
import { sweepCrashedRuns } from "../run-dir/crash-sweep.js";
import { ExternalCodingRunner, type RunnerHooks } from "../run/runner.js";
import { type TaskRecord, recordFromResult, recordWithoutRun } from "./batch-record.js";
import { type TaskSpec, taskRunOptions } from "./batch-task.js";
import type { TaskContext, TaskExecutor } from "./task-executor.js";

export interface LocalExecutorOptions {
  /** The runs directory of the batch: task `t` of batch `b` runs in `<runsDir>/<b>/runs/<t>/`. */
  readonly runsDir: string;
  /** How many tasks run at once (`--jobs`). */
  readonly jobs: number;
  /** Hooks of every task's run (its events are in its run directory either way). */
  readonly hooks?: RunnerHooks;
}

/**
 * The executor of a batch on this machine: each task is one ExternalCodingRunner run, with every gate, its run
 * directory `<batchDir>/runs/<task id>/`. Input the run refuses before it creates anything (a repository that does
 * not exist, a bad option value in the line) is the task's `invalid_task`, with the run's own message; anything
 * else thrown is `internal_error`.
 */
export class LocalExecutor implements TaskExecutor {
  readonly concurrency: number;
  readonly #runsDir: string;
  readonly #hooks: RunnerHooks;
  #swept: Promise<unknown> | null = null;

  constructor(options: LocalExecutorOptions) {
    this.concurrency = options.jobs;
    this.#runsDir = resolve(options.runsDir);
    this.#hooks = options.hooks ?? {};
  }

  async run(spec: TaskSpec, context: TaskContext): Promise<TaskRecord> {
    if (context.signal.aborted) return recordWithoutRun(spec, "not_started", "not started: the batch was interrupted first");
    const runsDir = join(this.#runsDir, context.batchId, "runs");
    // Once per batch, before its first task: the runs of an earlier batch here whose handoff died get their verdict.
    this.#swept ??= sweepCrashedRuns(this.#runsDir);
    await this.#swept;
    context.started();
    try {
      const result = await new ExternalCodingRunner(this.#hooks).run(
        taskRunOptions(spec, runsDir, { ...context.defaults, signal: context.signal }),
      );
      return recordFromResult(spec, result);
    } catch (error) {
      if (error instanceof UsageError) return recordWithoutRun(spec, "invalid_task", error.message);
      return recordWithoutRun(spec, "internal_error", `handoff failed on this task: ${(error as Error).message ?? error}`);
    }
  }

  async close(): Promise<void> {}
}
