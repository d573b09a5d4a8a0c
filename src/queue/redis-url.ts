import type { RedisOptions } from "bullmq";
import { UsageError } from "../lib/errors.js";

/**
 * The queue's Redis as a user names it: `--redis URL` parsed and checked, and the ioredis options every connection of a
 * worker or a submitter uses. The password is in the options only: what is shown, recorded or thrown names the Redis
 * by `shown`, which has none. Nothing here loads a Redis client (a `handoff run` never pays for one).
 */
export interface RedisTarget {
  /** The URL without its password (`redis://user@host:port/db`): for messages, batch.json and logs. */
  readonly shown: string;
  readonly options: RedisOptions;
}

export const DEFAULT_REDIS_RETRY_SECONDS = 60;
const DEFAULT_PORT = 6379;

export function parseRedisUrl(text: string): RedisTarget {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(
      "bad_redis_url",
      `--redis takes redis://[user:password@]host:port[/db] or rediss://…, not '${withoutPassword(text)}'`,
    );
  }
  const tls = url.protocol === "rediss:";
  if (!tls && url.protocol !== "redis:")
    throw new UsageError("bad_redis_url", `--redis takes a redis:// or rediss:// URL, not ${url.protocol}//…`);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (host === "") throw new UsageError("bad_redis_url", "--redis names no host (redis://host:port)");
  const db = url.pathname === "" || url.pathname === "/" ? 0 : Number(url.pathname.slice(1));
  if (!Number.isInteger(db) || db < 0 || db > 65_535)
    throw new UsageError("bad_redis_url", `--redis names database '${url.pathname.slice(1)}': a database is a number`);
  if (url.search !== "" || url.hash !== "")
    throw new UsageError("bad_redis_url", "--redis takes no query or fragment (redis://host:port/db)");
  const port = url.port === "" ? DEFAULT_PORT : Number(url.port);
  const username = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  const shown = `${url.protocol}//${username ? `${username}@` : ""}${url.host}${db === 0 ? "" : `/${db}`}`;
  return {
    shown,
    options: {
      host,
      port,
      db,
      ...(username ? { username } : {}),
      ...(password ? { password } : {}),
      ...(tls ? { tls: { servername: host } } : {}),
      // BullMQ's blocking commands must wait through a reconnect, not fail after a few tries; the watch gives up.
      maxRetriesPerRequest: null,
      connectTimeout: 5_000,
      retryStrategy: (times: number) => Math.min(100 * 2 ** Math.min(times, 5), 2_000),
    },
  };
}

/** A URL as typed, its password (if any) replaced: what an error about a bad URL may show. */
function withoutPassword(text: string): string {
  return text.replace(/^([a-z]+:\/\/[^:@/]*:)[^@/]*@/i, "$1***@").slice(0, 200);
}

/** How long a lost Redis is retried before the command gives up: $HANDOFF_REDIS_RETRY_SECONDS, else 60 s. */
export function redisRetryMs(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.HANDOFF_REDIS_RETRY_SECONDS;
  if (text === undefined || text === "") return DEFAULT_REDIS_RETRY_SECONDS * 1000;
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new UsageError("bad_number", `$HANDOFF_REDIS_RETRY_SECONDS takes a positive number of seconds, not '${text}'`);
  return seconds * 1000;
}

/** An error message as one line, without a password that a URL in it might carry. */
export function oneLine(message: string): string {
  return message
    .replace(/\s+/g, " ")
    .replace(/(\/\/[^:@/\s]*:)[^@/\s]*@/g, "$1***@")
    .trim()
    .slice(0, 300);
}
