import type { Redis } from "ioredis";

/**
 * Cancelling a task that runs on a worker. BullMQ cancels a job only inside the worker that runs it (Worker.cancelJob
 * aborts the processor's signal), so the submitter leaves a mark in Redis, one key per job, and each worker looks for
 * the marks of the jobs it runs (every second) and when it takes a job. A key, not a pub/sub message: a worker that
 * was reconnecting when the submitter asked still sees it.
 */

/** How long a mark stays: longer than any run, so a job handed on after a crash is still seen as cancelled. */
const CANCEL_MARK_SECONDS = 7 * 24 * 3600;

function cancelKey(queue: string, jobId: string): string {
  return `handoff:cancelled:${queue}:${jobId}`;
}

/** The submitter's side: marks the job cancelled. */
export async function requestCancel(client: Redis, queue: string, jobId: string): Promise<void> {
  await client.set(cancelKey(queue, jobId), "1", "EX", CANCEL_MARK_SECONDS);
}

/** The worker's side: which of these jobs are marked cancelled. */
export async function cancelledJobIds(client: Redis, queue: string, jobIds: readonly string[]): Promise<string[]> {
  if (jobIds.length === 0) return [];
  const marks = await client.mget(...jobIds.map((id) => cancelKey(queue, id)));
  return jobIds.filter((_, index) => marks[index] !== null);
}

export async function cancelRequested(client: Redis, queue: string, jobId: string): Promise<boolean> {
  return (await cancelledJobIds(client, queue, [jobId])).length > 0;
}
