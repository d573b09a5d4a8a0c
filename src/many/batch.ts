import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { UsageError } from "../lib/errors.js";
import { type BatchRecord, type TaskRecord, batchRecord, recordWithoutRun } from "./batch-record.js";
import type { BatchProgress } from "./batch-progress.js";
import type { BatchRunDefaults, TaskSpec } from "./batch-task.js";
import { writeFileAtomically } from "./atomic-file.js";
import { renderBatchJunit } from "./junit.js";
import type { TaskOutcome } from "./outcome.js";
import type { TaskExecutor } from "./task-executor.js";

export interface BatchOptions {
  /** Names the batch directory, `<runsDir>/<batchId>/`, which must not exist yet. */
  readonly batchId: string;
  /** The batch file as given, resolved (`-` for stdin): batch.json names it. */
  readonly file: string;
  readonly runsDir: string;
  /** What the command line gives every task. */
  readonly defaults: Omit<BatchRunDefaults, "signal">;
  /** Interrupts the batch: running tasks are cancelled by the executor, the rest recorded `not_started`. */
  readonly signal?: AbortSignal;
  /** batch.json's `via` and `jobs` (default: `local`, the executor's concurrency). */
  readonly via?: BatchRecord["via"];
  readonly jobs?: number | null;
  /** Called on every change: a task started or ended. */
  readonly onProgress?: (progress: BatchProgress) => void;
}

/** Where a finished batch left its records. */
export function batchPaths(runsDir: string, batchId: string): { batchDir: string; batchJson: string; junitXml: string; runsDir: string } {
  const batchDir = join(resolve(runsDir), batchId);
  return { batchDir, batchJson: join(batchDir, "batch.json"), junitXml: join(batchDir, "junit.xml"), runsDir: join(batchDir, "runs") };
}

const NOT_STARTED = "not started: the batch was interrupted first";

/**
 * Runs a batch's tasks through `executor`, `executor.concurrency` at once, started in file order; the bad lines
 * (`invalid`) are records from the start. When `signal` aborts, the executor cancels the running tasks and no further
 * task starts (each is `not_started`). Then batch.json and junit.xml are written, whole, to `<runsDir>/<batchId>/`
 * with every task in file order. Never throws for a task's failure: a throwing executor is that task's
 * `internal_error`. Throws a UsageError before anything runs when the batch directory already exists.
 */
export async function runBatch(
  specs: readonly TaskSpec[],
  invalid: readonly TaskRecord[],
  executor: TaskExecutor,
  options: BatchOptions,
): Promise<BatchRecord> {
  const startedAt = new Date();
  const paths = batchPaths(options.runsDir, options.batchId);
  createBatchDir(paths.batchDir);
  const signal = options.signal ?? new AbortController().signal;
  const records: TaskRecord[] = [...invalid];
  const counts = new Map<TaskOutcome, number>();
  for (const record of invalid) counts.set(record.outcome, (counts.get(record.outcome) ?? 0) + 1);
  let running = 0;
  const report = () => options.onProgress?.({ total: specs.length + invalid.length, done: records.length, running, counts });
  report();

  const runOne = async (spec: TaskSpec): Promise<TaskRecord> => {
    if (signal.aborted) return recordWithoutRun(spec, "not_started", NOT_STARTED);
    let started = false;
    // Each task its own signal, tied to the batch's while it runs: a run's listeners go with it, not onto the batch's.
    const task = new AbortController();
    const cancel = () => task.abort();
    signal.addEventListener("abort", cancel, { once: true });
    const context = {
      batchId: options.batchId,
      defaults: options.defaults,
      signal: task.signal,
      started: () => {
        if (started) return;
        started = true;
        running++;
        report();
      },
    };
    try {
      return await executor.run(spec, context);
    } catch (error) {
      return recordWithoutRun(spec, "internal_error", `handoff failed on this task: ${(error as Error).message ?? error}`);
    } finally {
      signal.removeEventListener("abort", cancel);
      if (started) running--;
    }
  };

  let next = 0;
  const lane = async () => {
    while (next < specs.length) {
      const record = await runOne(specs[next++]!);
      records.push(record);
      counts.set(record.outcome, (counts.get(record.outcome) ?? 0) + 1);
      report();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(executor.concurrency, specs.length)) }, lane));

  const record = batchRecord(
    {
      batchId: options.batchId,
      file: options.file,
      batchDir: paths.batchDir,
      via: options.via ?? "local",
      jobs: options.jobs === undefined ? executor.concurrency : options.jobs,
      startedAt: startedAt.toISOString(),
      durationMs: Date.now() - startedAt.getTime(),
      interrupted: signal.aborted,
      unwritten: [],
    },
    records,
  );
  // The tasks ran and their run directories hold their verdicts: a file of the batch's own that cannot be written (a
  // full disk) is named in the record, which the caller still prints, never a throw that would lose the summary.
  const unwritten: { file: string; message: string }[] = [];
  const write = (path: string, content: () => string) => {
    try {
      writeFileAtomically(path, content());
    } catch (error) {
      unwritten.push({ file: path, message: (error as NodeJS.ErrnoException).code ?? (error as Error).message });
    }
  };
  write(paths.junitXml, () => renderBatchJunit(record));
  write(paths.batchJson, () => `${JSON.stringify({ ...record, unwritten }, null, 2)}\n`);
  return { ...record, unwritten };
}

/** The batch directory, new: a second batch with the same id would mix its runs and records with the first's. */
function createBatchDir(batchDir: string): void {
  mkdirSync(resolve(batchDir, ".."), { recursive: true, mode: 0o700 });
  try {
    mkdirSync(batchDir, { mode: 0o700 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST")
      throw new UsageError(
        "batch_exists",
        ({ surface }) => `a batch ${batchDir} already exists; give another ${surface === "library" ? "batchId" : "--batch-id"}`,
      );
    throw new UsageError("bad_directory", `cannot create the batch directory ${batchDir}: ${code ?? error}`);
  }
}
