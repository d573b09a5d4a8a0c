import { Redis, type RedisOptions as IORedisOptions } from "ioredis";
import { QueueUnavailableError } from "../lib/errors.js";
import { type RedisTarget, oneLine, redisRetryMs } from "./redis-url.js";

/**
 * One connection of our own to the queue's Redis that tells whether Redis is there: ioredis retries a lost connection
 * with backoff for ever; `unavailable` rejects with a QueueUnavailableError once it has been down (or never up) for
 * the retry period. The worker also listens on it for cancellations (pub/sub); the submitter publishes them on it.
 */
export class RedisWatch {
  readonly client: Redis;
  readonly unavailable: Promise<never>;
  readonly #target: RedisTarget;
  readonly #retryMs: number;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  #lastError = "";
  #fail: (error: Error) => void = () => {};

  constructor(target: RedisTarget, retryMs: number = redisRetryMs()) {
    this.#target = target;
    this.#retryMs = retryMs;
    this.unavailable = new Promise<never>((_, reject) => {
      this.#fail = reject;
    });
    this.unavailable.catch(() => {}); // observed by whoever races it; never an unhandled rejection
    this.client = new Redis({ ...(target.options as IORedisOptions), lazyConnect: true });
    this.client.on("ready", () => this.#up());
    this.client.on("close", () => this.#down());
    this.client.on("error", (error: Error) => {
      this.#lastError = oneLine(error.message);
    });
    this.#down();
  }

  /**
   * Connects: resolves once Redis is ready, however many attempts that takes (a first attempt refused while Redis
   * restarts is retried); rejects with a QueueUnavailableError when it is not ready within the retry period, or
   * resolves early when `stop` aborts. `waiting` hears once when the first attempt fails.
   */
  async connect(stop?: AbortSignal, waiting?: (line: string) => void): Promise<void> {
    if (this.client.status === "ready") return;
    let done = () => {};
    const ready = new Promise<void>((resolve) => {
      done = resolve;
      this.client.once("ready", resolve);
      stop?.addEventListener("abort", () => resolve(), { once: true });
    });
    // ioredis retries a failed first attempt by itself; its rejection of connect() is not the end, `ready` or the
    // retry period is.
    this.client
      .connect()
      .catch((error: Error) =>
        waiting?.(
          `waiting for Redis at ${this.#target.shown} (${this.#lastError || oneLine(error.message)}); retrying for ${this.#retryMs / 1000} s`,
        ),
      );
    try {
      await Promise.race([ready, this.unavailable]);
    } finally {
      this.client.off("ready", done);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.client.disconnect();
  }

  #up(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#lastError = "";
  }

  #down(): void {
    if (this.#timer || this.#closed) return;
    this.#timer = setTimeout(() => {
      const why = this.#lastError ? ` (${this.#lastError})` : "";
      this.#fail(
        new QueueUnavailableError(
          `cannot reach Redis at ${this.#target.shown}: retried for ${this.#retryMs / 1000} s${why}; is it running and reachable? ($HANDOFF_REDIS_RETRY_SECONDS sets how long)`,
        ),
      );
    }, this.#retryMs);
  }
}
