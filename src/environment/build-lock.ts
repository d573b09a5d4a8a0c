import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { pidAlive, processStart } from "./owner-pid.js";

/** How often a run waiting for another's build looks again. */
const POLL_MS = 100;
/**
 * How long a lock that names no live handoff build of its key is waited on before it is broken: one just created and
 * not yet written, or one that is not a lock this code wrote (a planted file, a pid that another process holds now).
 */
const NOT_A_BUILD_MS = 10_000;
/** What a build may take beyond its setup's own timeout (the checkout before it, the commit after it). */
const BUILD_MARGIN_MS = 120_000;

/** The lock taken, and why a lock found there was broken (null when there was none to break). */
export interface BuildLock {
  readonly release: () => void;
  readonly broke: string | null;
}

/**
 * One build per environment key at a time: `<cacheDir>/locks/<key>`, made O_EXCL and holding `<pid> <start> <key>`
 * (the start time from /proc, so a reused pid is not the holder). Runs that need the same environment at once (the
 * candidates of a best-of-N run) wait for the one building it and then find it in the cache, instead of each running
 * the setup. A lock whose holder is gone is taken over at once; one that names no live handoff build of this key is
 * broken after NOT_A_BUILD_MS, and a live holder's after `maxWaitMs` (its setup's timeout cannot be longer), each with
 * the reason in `broke`. The lock saves work and decides nothing: two builds of one key are still safe (the cache's
 * commit keeps the first). Resolves to the lock, or null when `signal` aborted while waiting.
 */
export async function acquireBuildLock(
  cacheDir: string,
  key: string,
  options: { readonly signal?: AbortSignal; readonly maxWaitMs: number },
): Promise<BuildLock | null> {
  const dir = join(cacheDir, "locks");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, key);
  const started = Date.now();
  let broke: string | null = null;
  for (;;) {
    if (options.signal?.aborted) return null;
    if (tryCreate(path, key)) return { release: () => release(path), broke };
    const holder = lockHolder(path, key);
    const why =
      holder.kind === "gone"
        ? null
        : holder.kind === "not_a_build" && lockAgeMs(path) > NOT_A_BUILD_MS
          ? `the build lock of environment ${key.slice(0, 12)} names no handoff build of it (${holder.why}): broken`
          : holder.kind === "building" && Date.now() - started > options.maxWaitMs + BUILD_MARGIN_MS
            ? `the build of environment ${key.slice(0, 12)} by process ${holder.pid} took longer than its setup may: its lock was broken`
            : undefined;
    if (why !== undefined) {
      // Taken over (another waiter may remove it first; both then try O_EXCL again).
      if (why !== null) broke = why;
      release(path);
      continue;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

function tryCreate(path: string, key: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  try {
    writeSync(fd, `${process.pid} ${processStart(process.pid) ?? "-"} ${key}\n`);
  } finally {
    closeSync(fd);
  }
  return true;
}

type Holder =
  | { readonly kind: "building"; readonly pid: number }
  | { readonly kind: "gone" }
  | { readonly kind: "not_a_build"; readonly why: string };

/** Who holds the lock: a live handoff build of this key, nobody (its process is gone), or something else. */
function lockHolder(path: string, key: string): Holder {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return { kind: "not_a_build", why: "it cannot be read" };
  }
  const match = /^([1-9][0-9]{0,9}) ([0-9]+|-) ([0-9a-f]{64})\n$/.exec(text);
  if (!match) return { kind: "not_a_build", why: text === "" ? "it is empty" : "it is not a lock handoff wrote" };
  const pid = Number(match[1]);
  if (match[3] !== key) return { kind: "not_a_build", why: "it names another environment" };
  if (!pidAlive(pid)) return { kind: "gone" };
  const start = processStart(pid);
  // Without /proc the pid alone must do.
  if (start === null || match[2] === "-") return { kind: "building", pid };
  return start === match[2] ? { kind: "building", pid } : { kind: "not_a_build", why: `process ${pid} is another process now` };
}

function lockAgeMs(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

function release(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // gone already
  }
}
