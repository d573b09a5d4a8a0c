import { setMaxListeners } from "node:events";
import { hostname, userInfo } from "node:os";
import { type Job, Queue, QueueEvents } from "bullmq";
import { type TaskRecord, recordWithoutRun } from "../many/batch-record.js";
import type { TaskSpec } from "../many/batch-task.js";
import type { TaskContext, TaskExecutor } from "../many/task-executor.js";
import { requestCancel } from "./cancel.js";
import { RedisWatch } from "./connection.js";
import { type RedisTarget, oneLine, parseRedisUrl, redisRetryMs } from "./redis-url.js";
import { DEFAULT_QUEUE } from "./queue-name.js";
import { TASK_JOB_NAME, TaskJobReturn, schemaProblem, taskJobData, taskJobId } from "./job.js";

/**
 * The batch runner's executor for `--redis`: each task becomes a job on the queue (jobId `<batchId>.<task id>`, so a
 * batch submitted again adds nothing twice), run by whichever `handoff worker` takes it; its record comes back as the
 * job's return value. The end of a job is seen through QueueEvents and, in case an event was missed (a Redis restart,
 * a reconnect), by reading the job's state every few seconds: each task's record is returned once.
 */
export interface QueueExecutorOptions {
  /** `--redis URL` as given, or parsed. */
  readonly redis: string | RedisTarget;
  /** `--queue NAME` (default `handoff`): the workers' queue. */
  readonly queue?: string;
  /** How long a lost Redis is retried (default $HANDOFF_REDIS_RETRY_SECONDS, else 60 s). */
  readonly retryMs?: number;
  /** How often each waiting task's job is read, besides the events (default 2 s). */
  readonly pollMs?: number;
  /** How many tasks the batch has: the executor takes them all at once (its concurrency); the workers decide what runs. */
  readonly tasks?: number;
}

/** How long finished jobs stay in Redis (a batch submitted again within it gets its records back, not new runs). */
const KEEP_FINISHED_SECONDS = 7 * 24 * 3600;
const DEFAULT_POLL_MS = 2_000;
const DEFAULT_TASKS = 1_000;
const UNKNOWN_READS = 3;

/** The task executor that runs a batch on workers. Rejects with a QueueUnavailableError when Redis cannot be reached. */
export async function queueExecutor(options: QueueExecutorOptions): Promise<TaskExecutor> {
  const target = typeof options.redis === "string" ? parseRedisUrl(options.redis) : options.redis;
  const name = options.queue ?? DEFAULT_QUEUE;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const watch = new RedisWatch(target, options.retryMs ?? redisRetryMs());
  try {
    await watch.connect();
  } catch (error) {
    await watch.close();
    throw error;
  }
  const queue = new Queue(name, { connection: target.options });
  const events = new QueueEvents(name, { connection: target.options });
  // Connection errors repeat on every retry; the watch is what gives up, with one clear error.
  queue.on("error", () => {});
  events.on("error", () => {});
  const wakers = new Map<string, () => void>();
  for (const event of ["active", "completed", "failed", "removed"] as const) {
    events.on(event, ({ jobId }: { jobId: string }) => wakers.get(jobId)?.());
  }
  const submitter = `${userInfo().username}@${hostname()}:${process.pid}`;
  const orUnavailable = <T>(promise: Promise<T>) => Promise.race([promise, watch.unavailable]);

  async function run(spec: TaskSpec, context: TaskContext): Promise<TaskRecord> {
    if (context.signal.aborted) return recordWithoutRun(spec, "not_started", "not started: the batch was interrupted");
    // Every task of a batch listens on the batch's one signal while it waits.
    setMaxListeners(0, context.signal);
    const jobId = taskJobId(context.batchId, spec.id);
    await orUnavailable(
      queue.add(TASK_JOB_NAME, taskJobData(context.batchId, spec, context.defaults, submitter), {
        jobId,
        attempts: 1,
        removeOnComplete: { age: KEEP_FINISHED_SECONDS },
        removeOnFail: { age: KEEP_FINISHED_SECONDS },
      }),
    );
    let started = false;
    let cancelAsked = false;
    let unknownReads = 0;
    const start = () => {
      if (!started) context.started();
      started = true;
    };
    let woken: ReturnType<typeof wakeUp> | null = null;
    try {
      for (;;) {
        woken = wakeUp(jobId, context.signal, pollMs);
        // The state first, then the job: a job read while active and found completed a moment later has no return value yet.
        const state = await orUnavailable(queue.getJobState(jobId));
        const job = await orUnavailable(queue.getJob(jobId));
        const aborted = context.signal.aborted;
        if (state === "completed" && job) {
          start();
          return returnedRecord(spec, job);
        }
        if (state === "failed" && job) {
          start();
          return recordWithoutRun(spec, "internal_error", `the worker failed on it: ${oneLine(job.failedReason ?? "no reason given")}`);
        }
        // A job in no list is gone only when it stays so (or its hash is gone): not on one odd read.
        unknownReads = state === "unknown" || !job ? unknownReads + 1 : 0;
        if (unknownReads >= UNKNOWN_READS || (state === "unknown" && !job))
          return recordWithoutRun(
            spec,
            aborted ? "not_started" : "internal_error",
            aborted ? "not started: removed from the queue" : "its job left the queue unfinished (removed by someone else?)",
          );
        if (state === "active") start();
        if (aborted && job && state !== "active" && (await orUnavailable(removed(job)))) {
          return recordWithoutRun(spec, "not_started", "not started: the batch was interrupted");
        }
        if (aborted && state === "active" && !cancelAsked) {
          // Its run ends user_cancelled on the worker, which then completes the job with that record.
          await orUnavailable(requestCancel(watch.client, name, jobId));
          cancelAsked = true;
        }
        await orUnavailable(woken.promise);
        woken.dispose();
      }
    } finally {
      woken?.dispose();
      wakers.delete(jobId);
    }
  }

  /** Resolves on the job's next event, the next poll, or the batch's interrupt. */
  function wakeUp(jobId: string, signal: AbortSignal, ms: number): { promise: Promise<void>; dispose: () => void } {
    let wake = () => {};
    const promise = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const timer = setTimeout(wake, ms);
    signal.addEventListener("abort", wake, { once: true });
    wakers.set(jobId, wake);
    return {
      promise,
      dispose: () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", wake);
      },
    };
  }

  return {
    concurrency: Math.max(1, options.tasks ?? DEFAULT_TASKS),
    run,
    async close() {
      await Promise.allSettled([events.close(), queue.close()]);
      await watch.close();
    },
  };
}

/** The record a worker returned, checked: a job whose return value is not a task record is the worker's failure. */
function returnedRecord(spec: TaskSpec, job: Job): TaskRecord {
  const parsed = TaskJobReturn.safeParse(job.returnvalue);
  if (!parsed.success)
    return recordWithoutRun(spec, "internal_error", `the worker returned no task record (${schemaProblem(parsed.error)})`);
  if (parsed.data.record.id !== spec.id)
    return recordWithoutRun(spec, "internal_error", `the worker returned the record of task '${parsed.data.record.id}'`);
  return parsed.data.record;
}

/** Removes a job not yet taken; false when a worker took it meanwhile (BullMQ refuses to remove a locked job). */
async function removed(job: Job): Promise<boolean> {
  try {
    await job.remove();
    return true;
  } catch {
    return false;
  }
}
