import { isAbsolute } from "node:path";
import { z } from "zod";
import { SANDBOX_MODES } from "../containment/sandbox.js";
import { TaskRecord } from "../many/batch-record.js";
import type { BatchRunDefaults, TaskSpec } from "../many/batch-task.js";
import { BatchTask } from "../settings/file-schema.js";
import { isSafeRunId } from "../run-dir/run-dir.js";
import { RunResult } from "../verdict/result.js";

/**
 * The wire format of the queue: what a submitter puts in a job (one task of a batch) and what a worker gives back.
 * Both ends validate what they read (Redis is shared: a job or a return value is input, not trusted state).
 */

export const JOB_SCHEMA_VERSION = 1;
/** The BullMQ job name of a task (one kind of job: the name only labels it in Redis tools). */
export const TASK_JOB_NAME = "task";

const SafeId = z.string().refine(isSafeRunId, "one path segment of letters, digits, '.', '_' or '-' (at most 128)");

/** The batch's defaults as the submitter's command line gave them (BatchRunDefaults without its signal). */
export const JobDefaults = z.looseObject({
  yes: z.boolean().optional(),
  noVerify: z.boolean().optional(),
  sandbox: z.enum(SANDBOX_MODES).optional(),
  env: z.array(z.string()).optional(),
  workspacesDir: z.string().optional(),
  cliHomesDir: z.string().optional(),
  cacheDir: z.string().optional(),
});

export const TaskJobData = z.looseObject({
  schemaVersion: z.literal(JOB_SCHEMA_VERSION),
  batchId: SafeId,
  task: z.looseObject({
    id: SafeId,
    line: z.number().int().positive(),
    repo: z.string().refine(isAbsolute, "an absolute path"),
    fields: BatchTask,
  }),
  defaults: JobDefaults,
  /** The approval the submitter gave (`--yes`): a worker has no terminal to ask on, so without it the task is refused. */
  approval: z.looseObject({ yes: z.boolean(), by: z.string(), at: z.string() }),
});
export type TaskJobData = z.infer<typeof TaskJobData>;

/** What a worker returns for a job: the task's record (its run directory on that worker) and the run's result.json. */
export const TaskJobReturn = z.looseObject({
  record: TaskRecord,
  /** Null when the task has no run (refused as bad input, or cancelled before it started). */
  result: RunResult.nullable(),
});
export type TaskJobReturn = z.infer<typeof TaskJobReturn>;

export function taskJobData(
  batchId: string,
  spec: TaskSpec,
  defaults: Omit<BatchRunDefaults, "signal">,
  approvedBy: string,
  now = new Date(),
): TaskJobData {
  return {
    schemaVersion: JOB_SCHEMA_VERSION,
    batchId,
    task: { id: spec.id, line: spec.line, repo: spec.repo, fields: spec.fields },
    defaults: { ...defaults, env: defaults.env ? [...defaults.env] : undefined },
    approval: { yes: defaults.yes === true, by: approvedBy, at: now.toISOString() },
  };
}

/** A batch's task as a job id: `<batchId>.<task id>`, so the same batch submitted again adds no second job. */
export function taskJobId(batchId: string, taskId: string): string {
  return `${batchId}.${taskId}`;
}

/** Why a job's data or return value is refused, as one line: the first few zod issues with their paths. */
export function schemaProblem(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(root)"}: ${issue.message}`)
    .join("; ");
}
