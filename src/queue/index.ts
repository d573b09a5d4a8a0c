/**
 * `agent-handoff/queue`: batches on workers through BullMQ on Redis (docs/many-tasks.md). A subpath of its own so that
 * `import "agent-handoff"` never loads BullMQ and its Redis client.
 */
export { queueExecutor } from "./queue-executor.js";
export { runWorker } from "./worker.js";
export { DEFAULT_QUEUE } from "./queue-name.js";
export { parseRedisUrl } from "./redis-url.js";
export { QueueUnavailableError } from "../lib/errors.js";
export type { QueueExecutorOptions } from "./queue-executor.js";
export type { RedisTarget } from "./redis-url.js";
export type { TaskWorkerOptions } from "./worker.js";
