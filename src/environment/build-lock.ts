import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { pidAlive } from "./owner-pid.js";

/** How often a run waiting for another's build looks again. */
const POLL_MS = 100;
/** A lock still without its pid after this long lost its holder between creating and writing it. */
const UNWRITTEN_STALE_MS = 10_000;

/**
 * One build per environment key at a time: `<cacheDir>/locks/<key>`, made O_EXCL and holding its owner's pid. Runs
 * that need the same environment at once (the candidates of a best-of-N run) wait for the one building it and then
 * find it in the cache, instead of each running the setup. A lock whose pid is gone is stale and taken over. The lock
 * saves work and decides nothing: two builds of one key are still safe (the cache's commit keeps the first).
 * Resolves to the release, or null when `signal` aborted while waiting.
 */
export async function acquireBuildLock(cacheDir: string, key: string, signal?: AbortSignal): Promise<(() => void) | null> {
  const dir = join(cacheDir, "locks");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, key);
  for (;;) {
    if (signal?.aborted) return null;
    if (tryCreate(path)) return () => release(path);
    const holder = lockHolder(path);
    if (holder === null ? unwrittenTooLong(path) : !pidAlive(holder)) {
      // A dead holder's lock: taken over (another waiter may remove it first; both then try O_EXCL again).
      release(path);
      continue;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

function tryCreate(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  try {
    writeSync(fd, `${process.pid}\n`);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** The pid a lock names; null while its holder has not written it yet (or for a lock gone again). */
function lockHolder(path: string): number | null {
  try {
    const match = /^([1-9][0-9]{0,9})\n$/.exec(readFileSync(path, "utf8"));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

function unwrittenTooLong(path: string): boolean {
  try {
    return Date.now() - statSync(path).mtimeMs > UNWRITTEN_STALE_MS;
  } catch {
    return false;
  }
}

function release(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // gone already
  }
}
