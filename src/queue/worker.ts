import { hostname } from "node:os";
import { join } from "node:path";
import { type Job, UnrecoverableError, WaitingError, Worker } from "bullmq";
import type { SandboxMode } from "../containment/sandbox.js";
import { QueueUnavailableError, UsageError } from "../lib/errors.js";
import { lexists } from "../lib/paths.js";
import { recordFromResult, recordWithoutRun } from "../many/batch-record.js";
import { type TaskSpec, taskRunOptions } from "../many/batch-task.js";
import { sweepCrashedRuns } from "../run-dir/crash-sweep.js";
import { ExternalCodingRunner } from "../run/runner.js";
import { cancelRequested, cancelledJobIds } from "./cancel.js";
import { RedisWatch } from "./connection.js";
import { type RedisTarget, oneLine } from "./redis-url.js";
import { TaskJobData, type TaskJobReturn, schemaProblem } from "./job.js";

/**
 * `handoff worker`: takes task jobs from the queue and runs each through the same pipeline and gates as `handoff run`
 * (ExternalCodingRunner), in `<runsDir>/<batchId>/runs/<task id>`. A job's return value is the task's record and its
 * result.json. Stopping: no new jobs, running ones finish; after the grace period they are cancelled and handed back
 * to the queue for another worker. A worker killed outright leaves its jobs to BullMQ's stalled check and its half-runs
 * to the crash sweep of its next start.
 */
export interface TaskWorkerOptions {
  readonly redis: RedisTarget;
  readonly queue: string;
  readonly concurrency: number;
  readonly runsDir: string;
  /** How long running jobs may finish after a stop before they are cancelled and returned to the queue. */
  readonly graceMs: number;
  /**
   * The worker's own choices, which a job cannot change: the sandbox (default auto: a job cannot switch it off, or its
   * agent would run with all of the worker's rights), its directories, its --env.
   */
  readonly sandbox?: SandboxMode;
  readonly workspacesDir?: string;
  readonly cliHomesDir?: string;
  readonly env?: readonly string[];
  /** The job lock and the stalled check's interval (a dead worker's job is handed on within about twice this). */
  readonly lockMs: number;
  readonly retryMs: number;
  /** One line of progress (stderr). */
  readonly log: (line: string) => void;
}

/** How many times a job may be found stalled (its worker died) and handed on before it fails. */
const MAX_STALLED_COUNT = 3;
/** How often running jobs are checked for a cancellation the submitter asked for. */
const CANCEL_POLL_MS = 1_000;

/** The worker's name in records and logs: which machine and process ran a task. */
export function workerName(): string {
  return `${hostname()}:${process.pid}`;
}

/**
 * Runs a worker until `stop` aborts (then drains as above and resolves) or Redis is gone for the retry period
 * (rejects with a QueueUnavailableError after cancelling what runs).
 */
export async function runWorker(options: TaskWorkerOptions, stop: AbortSignal): Promise<void> {
  const name = workerName();
  // A worker killed mid-job left a half-run here (<runsDir>/<batch>/runs/<task>): it now ends runner_crashed.
  for (const run of await sweepCrashedRuns(options.runsDir))
    options.log(
      `swept crashed run ${run.runDir}${run.resultKept ? " (its result was already written)" : ": user_cancelled (runner_crashed)"}`,
    );
  const watch = new RedisWatch(options.redis, options.retryMs);
  try {
    await watch.connect(stop, options.log);
  } catch (error) {
    await watch.close();
    throw error;
  }
  // Stopped before Redis answered: nothing was taken, nothing to drain.
  if (stop.aborted) {
    await watch.close();
    options.log("stopping: never connected, no job taken");
    return;
  }
  let graceOver = false;
  let redisGone = false;
  const running = new Map<string, Job>();
  const processor = async (job: Job, token: string | undefined, signal: AbortSignal | undefined): Promise<TaskJobReturn> => {
    running.set(job.id!, job);
    try {
      const outcome = await runJob(job, signal, { ...options, name, watch });
      // Stopped past the grace period: the run here ended cancelled; the job goes back for another worker.
      // Without Redis the job cannot be moved: its lock lapses, and the stalled check hands it on once Redis is back.
      if (graceOver && !redisGone && signal?.aborted && outcome.record.outcome !== "invalid_task") {
        await job.moveToWait(token);
        options.log(`returned job ${job.id} to the queue (grace period over)`);
        throw new WaitingError();
      }
      options.log(
        `finished job ${job.id}: ${outcome.record.outcome} (exit ${outcome.record.exitCode})${outcome.record.runDir ? ` ${outcome.record.runDir}` : ""}`,
      );
      return outcome;
    } finally {
      running.delete(job.id!);
    }
  };
  const worker = new Worker<unknown, TaskJobReturn>(options.queue, processor, {
    connection: options.redis.options,
    concurrency: options.concurrency,
    name,
    lockDuration: options.lockMs,
    stalledInterval: options.lockMs,
    maxStalledCount: MAX_STALLED_COUNT,
  });
  let lastError = "";
  worker.on("error", (error) => {
    // Connection errors repeat on every retry: one line per distinct error; the watch decides when to give up.
    const line = oneLine(error.message);
    if (line !== lastError) options.log(`queue error: ${line}`);
    lastError = line;
  });
  worker.on("failed", (job, error) => {
    if (job && !(error instanceof WaitingError)) options.log(`job ${job.id} failed: ${oneLine(error.message)}`);
  });
  const cancelPoll = setInterval(() => {
    if (running.size === 0) return;
    void cancelledJobIds(watch.client, options.queue, [...running.keys()]).then(
      (ids) => {
        for (const id of ids)
          if (worker.cancelJob(id, "cancelled by the submitter")) options.log(`cancelling job ${id} (the submitter asked)`);
      },
      () => {},
    );
  }, CANCEL_POLL_MS);
  options.log(
    `worker ${name} on queue '${options.queue}' at ${options.redis.shown}, concurrency ${options.concurrency}, runs in ${options.runsDir}`,
  );
  const stopped = new Promise<void>((resolve) => {
    if (stop.aborted) resolve();
    else stop.addEventListener("abort", () => resolve(), { once: true });
  });
  try {
    await Promise.race([stopped, watch.unavailable]);
    options.log(
      running.size > 0
        ? `stopping: no new jobs; waiting up to ${options.graceMs / 1000} s for ${running.size} running job(s)`
        : "stopping: no job running",
    );
    const grace = setTimeout(() => {
      graceOver = true;
      options.log(`grace period over: cancelling ${running.size} job(s) and returning them to the queue`);
      worker.cancelAllJobs("the worker is stopping");
    }, options.graceMs);
    try {
      await Promise.race([worker.close(), watch.unavailable]);
    } finally {
      clearTimeout(grace);
    }
  } catch (error) {
    if (!(error instanceof QueueUnavailableError)) throw error;
    graceOver = true;
    redisGone = true;
    worker.cancelAllJobs("Redis is unreachable");
    // The running runs end cancelled and complete; their jobs' locks have lapsed with Redis, so nothing waits on them.
    await Promise.race([whenIdle(running), new Promise((resolve) => setTimeout(resolve, 30_000))]);
    throw error;
  } finally {
    clearInterval(cancelPoll);
    await watch.close();
  }
}

interface JobContext extends TaskWorkerOptions {
  readonly name: string;
  readonly watch: RedisWatch;
}

/** One job: its data checked, then the task run to its record. A bad job fails at once and for good. */
async function runJob(job: Job, signal: AbortSignal | undefined, context: JobContext): Promise<TaskJobReturn> {
  const parsed = TaskJobData.safeParse(job.data);
  if (!parsed.success) {
    context.log(`refused job ${job.id}: ${schemaProblem(parsed.error)}`);
    throw new UnrecoverableError(`not a handoff task job (schema ${schemaProblem(parsed.error)})`);
  }
  const data = parsed.data;
  const spec: TaskSpec = { id: data.task.id, line: data.task.line, repo: data.task.repo, fields: data.task.fields };
  if (await cancelRequested(context.watch.client, context.queue, job.id!)) {
    context.log(`job ${job.id} was cancelled before it started`);
    return { record: recordWithoutRun(spec, "not_started", "cancelled before it started", context.name), result: null };
  }
  const runsDir = join(context.runsDir, data.batchId, "runs");
  const runId = freeRunId(runsDir, spec.id);
  context.log(`took job ${job.id} (task ${spec.id}, line ${spec.line}) into ${join(runsDir, runId)}`);
  const request = {
    ...taskRunOptions(spec, runsDir, {
      yes: data.approval.yes,
      noVerify: data.defaults.noVerify,
      sandbox: context.sandbox ?? "auto",
      env: context.env,
      workspacesDir: context.workspacesDir,
      cliHomesDir: context.cliHomesDir,
      signal,
    }),
    runId,
  };
  try {
    const result = await new ExternalCodingRunner().run(request);
    return { record: recordFromResult(spec, result, context.name), result };
  } catch (error) {
    // Bad input the run refused before anything was created: the task's own outcome, not the worker's failure.
    if (error instanceof UsageError) return { record: recordWithoutRun(spec, "invalid_task", error.message, context.name), result: null };
    throw error;
  }
}

/** The task id, or `<id>-2`, `-3`… when a run directory of that name is already here (a job run again after a crash). */
export function freeRunId(runsDir: string, id: string): string {
  if (!lexists(join(runsDir, id))) return id;
  for (let n = 2; ; n++) {
    const candidate = `${id}-${n}`;
    if (!lexists(join(runsDir, candidate))) return candidate;
  }
}

function whenIdle(running: ReadonlyMap<string, Job>): Promise<void> {
  return new Promise((resolve) => {
    const check = setInterval(() => {
      if (running.size > 0) return;
      clearInterval(check);
      resolve();
    }, 100);
  });
}
