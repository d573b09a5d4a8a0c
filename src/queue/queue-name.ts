import { UsageError } from "../lib/errors.js";

/** The queue workers take tasks from when `--queue` is not given. */
export const DEFAULT_QUEUE = "handoff";

/** `--queue NAME`, the same check for the workers and the batches that submit to them. */
export function checkQueueName(queue: string): string {
  if (!/^[A-Za-z0-9_.-]{1,100}$/.test(queue)) throw new UsageError("bad_queue", "--queue takes a name of letters, digits, '.', '_' or '-'");
  return queue;
}
