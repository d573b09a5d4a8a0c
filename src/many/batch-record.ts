import { z } from "zod";
import { lazySchema } from "../lib/lazy-schema.js";
import type { RunResult } from "../verdict/result.js";
import type { TaskSpec } from "./batch-task.js";
import { TASK_OUTCOMES, type TaskOutcome, outcomeExitCode, worstOutcome } from "./outcome.js";

/**
 * One task of a batch as batch.json, `handoff batch --json` and the JUnit file report it. Written by the local batch
 * runner (batch.ts) and by the queue's submitter (src/queue/) alike: the same task gives the same record either way.
 */
export const TaskRecord = lazySchema(() =>
  z.looseObject({
    id: z.string(),
    /** The line of the batch file (1-based). */
    line: z.number().int(),
    outcome: z.enum(TASK_OUTCOMES),
    exitCode: z.number().int(),
    /** The run's one-line summary, or why the task has no run (its line's validation error, "not started", …). */
    summary: z.string(),
    /** The task's repository, absolute; null for a line that failed validation. */
    repo: z.string().nullable(),
    /** The run's id and directory (on the worker that ran it, for a queued task); null when no run exists. */
    runId: z.string().nullable(),
    runDir: z.string().nullable(),
    /** From the run's result.json: its duration, patch hash and warnings. */
    durationMs: z.number().nullable(),
    patchSha256: z.string().nullable(),
    warnings: z.number().int(),
    /** The worker that ran it (`host:pid`), for a queued task; null for a local batch. */
    worker: z.string().nullable(),
  }),
);
export type TaskRecord = z.infer<typeof TaskRecord>;

/** batch.json: the whole batch, its counts per outcome, its exit code, and every task in file order. */
export const BatchRecord = lazySchema(() =>
  z.looseObject({
    schemaVersion: z.literal(1),
    batchId: z.string(),
    /** The batch file as given, resolved. */
    file: z.string(),
    /** The batch directory: batch.json, junit.xml, and (for a local batch) runs/<task id>/. */
    batchDir: z.string(),
    /** `local`, or the queue the tasks went through (the Redis URL without its password). */
    via: z.union([z.literal("local"), z.looseObject({ redis: z.string(), queue: z.string() })]),
    jobs: z.number().int().nullable(),
    startedAt: z.string(),
    durationMs: z.number(),
    total: z.number().int(),
    counts: z.record(z.enum(TASK_OUTCOMES), z.number().int()),
    /** The most severe outcome, and the batch's exit code (0 only when every task verified). */
    worst: z.enum(TASK_OUTCOMES),
    exitCode: z.number().int(),
    /** Set when the batch was interrupted (SIGINT/SIGTERM): its running tasks were cancelled, the rest not started. */
    interrupted: z.boolean(),
    /**
     * The batch's own files that could not be written (a full disk): each with why. Empty when batch.json and junit.xml
     * were written; when batch.json is among them, only the summary printed on stdout holds this record.
     */
    unwritten: z.array(z.looseObject({ file: z.string(), message: z.string() })),
    tasks: z.array(TaskRecord),
  }),
);
export type BatchRecord = z.infer<typeof BatchRecord>;

/** The record of a task that ran: what its result.json says. */
export function recordFromResult(spec: TaskSpec, result: RunResult, worker: string | null = null): TaskRecord {
  return {
    id: spec.id,
    line: spec.line,
    outcome: result.terminalReason,
    exitCode: outcomeExitCode(result.terminalReason),
    summary: result.summary,
    repo: spec.repo,
    runId: result.runId,
    runDir: result.runDir,
    durationMs: result.timings.durationMs,
    patchSha256: result.patch?.sha256 ?? null,
    warnings: result.policy.warnings.length,
    worker,
  };
}

/** The record of a task without a run: a bad line (no spec), bad input the run refused, not started, or a failure. */
export function recordWithoutRun(
  task: { readonly id: string; readonly line: number; readonly repo: string | null },
  outcome: "invalid_task" | "not_started" | "internal_error",
  summary: string,
  worker: string | null = null,
): TaskRecord {
  return {
    id: task.id,
    line: task.line,
    outcome,
    exitCode: outcomeExitCode(outcome),
    summary,
    repo: task.repo,
    runId: null,
    runDir: null,
    durationMs: null,
    patchSha256: null,
    warnings: 0,
    worker,
  };
}

/** batch.json from the task records (in file order), with the counts, the worst outcome and the exit code. */
export function batchRecord(
  head: Pick<BatchRecord, "batchId" | "file" | "batchDir" | "via" | "jobs" | "startedAt" | "durationMs" | "interrupted" | "unwritten">,
  tasks: readonly TaskRecord[],
): BatchRecord {
  const sorted = [...tasks].sort((a, b) => a.line - b.line);
  const counts = Object.fromEntries(TASK_OUTCOMES.map((outcome) => [outcome, 0])) as Record<TaskOutcome, number>;
  for (const task of sorted) counts[task.outcome]++;
  const worst = worstOutcome(sorted.map((task) => task.outcome));
  return { schemaVersion: 1, ...head, total: sorted.length, counts, worst, exitCode: outcomeExitCode(worst), tasks: sorted };
}
