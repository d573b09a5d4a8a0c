import {
  type BigIntStats,
  type Stats,
  lstatSync,
  lutimesSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmdirSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { removeTree } from "../clone/workspace.js";
import { UsageError } from "../lib/errors.js";
import { readFileSafely } from "../lib/safe-read.js";
import { escapeControls } from "../vocabulary/display.js";
import { ownedName, ownerGone, ownerPid } from "./owner-pid.js";
import { EnvironmentRecord } from "./record.js";

/**
 * The cache of base environments across runs. Layout under the root (every directory 0700):
 *   environments/<key>/   tree/, index, environment.json (record.ts) and last-used (its mtime: the LRU clock)
 *   building/<pid>-<r>/   a build in progress, renamed to environments/<key>/ when it is complete
 *   in-use/<key>/<pid>-<r>  a use marker: while its process lives, the environment is never removed
 *   removing/<pid>-<r>/   an environment on its way out (renamed here first, so no reader ever sees half of one)
 *   retired/<key>.<pid>-<r>/  an environment no run may take again (modified, incomplete, or committed before a run
 *                         without the sandbox ended), removed once no process uses its key: a mounted view keeps its lower tree
 *   exposures/            one file per run without the sandbox in progress; the directory's ctime is when the last one
 *                         ended (environment.ts, trustedAfter)
 *   downloads/            the package managers' persistent download caches
 *   probes/               what the sandbox and overlay probes found for this boot (src/containment/boot-probes.ts)
 * A directory named for a pid that is gone is stale, and the next evict or clear removes it.
 */

/** $HANDOFF_CACHE_DIR, else $XDG_CACHE_HOME/handoff, else ~/.cache/handoff (absolute paths only; a relative XDG_CACHE_HOME is ignored, as the XDG spec says). */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HANDOFF_CACHE_DIR) return resolve(env.HANDOFF_CACHE_DIR);
  const cache = env.XDG_CACHE_HOME?.startsWith("/") ? env.XDG_CACHE_HOME : join(homedir(), ".cache");
  return join(cache, "handoff");
}

export const DEFAULT_CACHE_LIMIT_BYTES = 10 * 1024 ** 3;
const UNITS: Readonly<Record<string, number>> = { "": 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };

/** 10 GiB, or $HANDOFF_CACHE_LIMIT ("20G", "500M", "1.5G", or bytes; K/M/G/T binary). A bad value is a UsageError naming the variable. */
export function cacheLimitBytes(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.HANDOFF_CACHE_LIMIT?.trim();
  if (!raw) return DEFAULT_CACHE_LIMIT_BYTES;
  const match = /^([0-9]+(?:\.[0-9]+)?)([KMGT]?)$/i.exec(raw);
  const unit = match ? UNITS[match[2]!.toUpperCase()]! : 0;
  const bytes = match ? Math.floor(Number(match[1]) * unit) : Number.NaN;
  // Bytes are whole: "1.5" alone is no size.
  if (!Number.isSafeInteger(bytes) || (unit === 1 && match![1]!.includes("."))) {
    const shown = escapeControls(raw.length > 40 ? `${raw.slice(0, 40)}…` : raw);
    throw new UsageError(
      "bad_cache_limit",
      `HANDOFF_CACHE_LIMIT must be a size such as 20G, 500M, 1.5G or a whole number of bytes (K, M, G, T are powers of 1024), not '${shown}'`,
    );
  }
  return bytes;
}

export interface CachedEnvironment {
  /** 64 hex chars. */
  readonly key: string;
  /** <root>/environments/<key> */
  readonly dir: string;
  /** <dir>/tree */
  readonly tree: string;
  readonly record: EnvironmentRecord;
  /** mtime of <dir>/last-used. */
  readonly lastUsedAt: Date;
  /** A live process holds a use marker. */
  readonly inUse: boolean;
}

/** What reading one entry of environments/ found: unreadable is a passing failure (EMFILE, EIO), never a reason to remove. */
type EnvironmentRead =
  | { readonly kind: "valid"; readonly environment: CachedEnvironment }
  | { readonly kind: "invalid"; readonly why: string }
  | { readonly kind: "unreadable"; readonly why: string };

const KEY = /^[0-9a-f]{64}$/;
const MAX_RECORD_BYTES = 16 * 1024 * 1024;

export class EnvironmentCache {
  readonly root: string;
  readonly limitBytes: number;

  readonly #downloads: string | null;

  /** `downloads`: where the download caches are, when not `<root>/downloads` (a run's private cache shares one). */
  constructor(root: string, limitBytes: number = cacheLimitBytes(), downloads: string | null = null) {
    this.root = resolve(root);
    this.limitBytes = limitBytes;
    this.#downloads = downloads === null ? null : resolve(downloads);
  }

  /**
   * The environment under this key, or null. A directory that is not a complete environment of this key (half-written,
   * foreign, corrupt, its tree/ gone) is retired, whoever uses it, so that the next build can take its place: never a
   * key that stays dead. Touches last-used (LRU).
   */
  find(key: string): CachedEnvironment | null {
    assertKey(key);
    const environments = this.existingSubdir("environments");
    if (environments === null) return null;
    const read = this.read(key);
    if (read.kind === "invalid" && read.why !== "absent") this.retire(key);
    if (read.kind !== "valid") return null;
    const now = new Date();
    touch(join(read.environment.dir, "last-used"), now);
    return { ...read.environment, lastUsedAt: now };
  }

  /** A new empty directory <root>/building/<pid>-<random>/ (0700, parents made 0700). */
  startBuild(): string {
    const dir = join(this.subdir("building"), ownedName());
    mkdirSync(dir, { mode: 0o700 });
    return dir;
  }

  /** Renames a finished build (it holds tree/, index, environment.json) to environments/<key>/ atomically and writes last-used. If that key exists already (another run won the race), the build is removed and the existing one returned. */
  commit(buildDir: string, key: string): CachedEnvironment {
    assertKey(key);
    this.assertBuild(buildDir);
    const built = readEnvironment(buildDir, key);
    if (built.kind !== "valid") {
      this.discard(buildDir);
      throw new Error(`the build ${buildDir} is not a complete environment for ${key}: ${built.why}`);
    }
    const now = new Date();
    touch(join(buildDir, "last-used"), now);
    waitPastCtime(join(buildDir, "last-used"), bigLstatOrNull(join(buildDir, "environment.json"))?.ctimeNs ?? 0n, now);
    const target = join(this.subdir("environments"), key);
    // Twice at most: a first loser finds a corrupt winner, which find removes; the second rename then lands.
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        renameSync(buildDir, target);
        return { ...built.environment, dir: target, tree: join(target, "tree"), lastUsedAt: now, inUse: this.inUse(key) };
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== "ENOTEMPTY" && code !== "EEXIST") throw error;
      }
      const existing = this.find(key);
      if (existing !== null) {
        this.discard(buildDir);
        return existing;
      }
    }
    this.discard(buildDir);
    throw new Error(`cannot commit the environment ${key}: ${target} is there and cannot be read or removed`);
  }

  /** Removes a build that failed or was cancelled. */
  discard(buildDir: string): void {
    this.assertBuild(buildDir);
    removeTree(buildDir);
  }

  /** Marks the environment in use by this process (a marker file <root>/in-use/<key>/<pid>-<random>) until the returned function runs. Call it before find: evict checks the marker before it removes. */
  use(key: string): () => void {
    assertKey(key);
    const keyDir = join(this.subdir("in-use"), key);
    const marker = join(keyDir, ownedName());
    // A sweep removes an empty in-use/<key>/ between the mkdir and the write at most once in a while: try again.
    for (let attempt = 0; ; attempt++) {
      mkdirSync(keyDir, { recursive: true, mode: 0o700 });
      if (!lstatSync(keyDir).isDirectory()) throw new UsageError("cache_untrusted", `${keyDir} in the handoff cache is not a directory`);
      try {
        writeFileSync(marker, `${process.pid}\n`, { flag: "wx", mode: 0o600 });
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT" || attempt >= 3) throw error;
      }
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      rmSync(marker, { force: true });
      removeIfEmpty(keyDir);
      // The last user of a retired environment removes it.
      this.sweepRetired();
    };
  }

  /** Least-recently-used first, removes environments until the total record.sizeBytes is within the limit; never one in use by a live process (a marker whose pid is gone is stale and removed); also removes building/ dirs whose pid is gone. */
  evict(): { readonly removed: readonly CachedEnvironment[]; readonly freedBytes: number } {
    this.sweep();
    const valid: CachedEnvironment[] = [];
    for (const name of this.names("environments")) {
      const read = KEY.test(name) ? this.read(name) : ({ kind: "invalid", why: "not a key" } as const);
      if (read.kind === "valid") valid.push(read.environment);
      else if (read.kind === "invalid" && KEY.test(name)) this.retire(name);
      else if (read.kind === "invalid") this.remove(join(this.root, "environments", name));
    }
    valid.sort((a, b) => a.lastUsedAt.getTime() - b.lastUsedAt.getTime());
    let total = valid.reduce((sum, environment) => sum + environment.record.sizeBytes, 0);
    const removed: CachedEnvironment[] = [];
    let freedBytes = 0;
    for (const environment of valid) {
      if (total <= this.limitBytes) break;
      // Asked again now, not from the listing: a run may have started using it since.
      if (this.inUse(environment.key) || !this.remove(environment.dir)) continue;
      removed.push(environment);
      freedBytes += environment.record.sizeBytes;
      total -= environment.record.sizeBytes;
    }
    return { removed, freedBytes };
  }

  /** Most recently used first. Removes nothing: an entry that is not a valid environment is not listed. */
  list(): CachedEnvironment[] {
    const listed: CachedEnvironment[] = [];
    for (const name of this.names("environments")) {
      const read = KEY.test(name) ? this.read(name) : null;
      if (read?.kind === "valid") listed.push(read.environment);
    }
    return listed.sort((a, b) => b.lastUsedAt.getTime() - a.lastUsedAt.getTime());
  }

  /**
   * Removes every environment not in use (and stale builds); the downloads/ dir too unless keepDownloads. freedBytes
   * counts the environments' record.sizeBytes; downloadsRemoved says whether there was a downloads/ to remove.
   */
  clear(options: { keepDownloads?: boolean } = {}): {
    readonly removed: number;
    readonly freedBytes: number;
    readonly skippedInUse: number;
    readonly downloadsRemoved: boolean;
  } {
    this.sweep();
    let removed = 0;
    let freedBytes = 0;
    let skippedInUse = 0;
    for (const name of this.names("environments")) {
      const read = KEY.test(name) ? this.read(name) : null;
      if (read !== null && this.inUse(name)) {
        if (read.kind === "valid") skippedInUse++;
        continue;
      }
      if (!this.remove(join(this.root, "environments", name)) || read?.kind !== "valid") continue;
      removed++;
      freedBytes += read.environment.record.sizeBytes;
    }
    let downloadsRemoved = false;
    if (!options.keepDownloads) {
      downloadsRemoved = this.existingSubdir("downloads") !== null && this.remove(join(this.root, "downloads"));
      // Those of the runs without the sandbox too (their private caches are theirs: removed with each run).
      const unsandboxed = this.existingSubdir("unsandboxed");
      if (unsandboxed !== null && realDirectory(join(unsandboxed, "downloads")))
        downloadsRemoved = this.remove(join(unsandboxed, "downloads")) || downloadsRemoved;
    }
    return { removed, freedBytes, skippedInUse, downloadsRemoved };
  }

  /**
   * Takes an environment out of the cache whatever uses it (one found modified, incomplete or untrusted): renamed into
   * retired/ at once, so no run finds it again, and removed there once no process uses its key (a run's mounted view
   * keeps its lower tree). With `inode`, only the directory with that inode: a newer build under the same key stays.
   */
  retire(key: string, inode?: bigint): void {
    assertKey(key);
    const path = join(this.root, "environments", key);
    if (inode !== undefined && bigLstatOrNull(path)?.ino !== inode) return;
    if (lstatOrNull(path) === null) return;
    try {
      renameSync(path, join(this.subdir("retired"), `${key}.${ownedName()}`));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    this.sweepRetired();
  }

  /** <root>/downloads (or the one given): the persistent package-manager download caches (made 0700 on first call). */
  downloadsDir(): string {
    if (this.#downloads === null) return this.subdir("downloads");
    mkdirSync(this.#downloads, { recursive: true, mode: 0o700 });
    if (!realDirectory(this.#downloads))
      throw new UsageError("cache_untrusted", `${this.#downloads} in the handoff cache is not a directory`);
    return this.#downloads;
  }

  /**
   * A run whose agent runs without the sandbox, from now until the returned function runs: a file in exposures/ while
   * it lasts, then the directory's ctime set to the moment it ended (a ctime only the kernel sets, and only forward).
   * Such an agent can write this cache (it runs as you), so no environment committed before that moment is taken again.
   */
  markExposure(): () => void {
    const dir = this.exposuresDir();
    const marker = join(dir, ownedName());
    writeFileSync(marker, `${process.pid}\n`, { flag: "wx", mode: 0o600 });
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      rmSync(marker, { force: true });
      const now = new Date();
      // The agent may have removed or replaced the directory: made again, its ctime is now all the same.
      utimesSync(this.exposuresDir(), now, now);
    };
  }

  /**
   * The ctime (ns) after which an environment must have been committed to be trusted: when the last run without the
   * sandbox ended. Null while one is in progress (nothing can be trusted then). A marker whose process is gone is
   * removed, which sets the ctime to now: that run's end is unknown.
   */
  trustedAfter(): bigint | null {
    const dir = this.exposuresDir();
    let live = false;
    for (const name of this.names("exposures")) {
      if (ownerGone(name)) rmSync(join(dir, name), { recursive: true, force: true });
      else live = true;
    }
    return live ? null : (bigLstatOrNull(dir)?.ctimeNs ?? null);
  }

  /** <root>/exposures, a real directory: anything else there (a link, a file) is replaced, which dates it now. */
  private exposuresDir(): string {
    const dir = join(this.root, "exposures");
    if (!realDirectory(dir)) rmSync(dir, { recursive: true, force: true });
    return this.subdir("exposures");
  }

  private read(key: string): EnvironmentRead {
    const read = readEnvironment(join(this.root, "environments", key), key);
    return read.kind === "valid" ? { kind: "valid", environment: { ...read.environment, inUse: this.inUse(key) } } : read;
  }

  /** Whether a live process holds a use marker for this key. */
  private inUse(key: string): boolean {
    return this.names(join("in-use", key)).some((name) => !ownerGone(name));
  }

  /** Removes the retired environments whose key no live process uses. */
  private sweepRetired(): void {
    for (const name of this.names("retired")) {
      const key = name.split(".")[0]!;
      if (!(KEY.test(key) && this.inUse(key))) removeTree(join(this.root, "retired", name));
    }
  }

  /** Removes what dead processes left: builds, half-removed environments, use markers, retired environments. */
  private sweep(): void {
    this.sweepRetired();
    for (const kind of ["building", "removing"]) {
      for (const name of this.names(kind)) if (ownerGone(name)) removeTree(join(this.root, kind, name));
    }
    for (const key of this.names("in-use")) {
      const keyDir = join(this.root, "in-use", key);
      for (const name of this.names(join("in-use", key))) if (ownerGone(name)) removeTree(join(keyDir, name));
      removeIfEmpty(keyDir);
    }
  }

  /**
   * Removes an entry of the cache: renamed into removing/ first (one atomic step that readers see whole), then
   * removed there; a link is moved and unlinked, never followed. False when it was gone already.
   */
  private remove(path: string): boolean {
    const parking = join(this.subdir("removing"), ownedName());
    try {
      renameSync(path, parking);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
      removeTree(path); // another file system under the root (EXDEV): removed where it is
      return true;
    }
    removeTree(parking);
    return true;
  }

  /** The names in a directory of the cache (none when it is missing). */
  private names(relative: string): string[] {
    const dir = join(this.root, relative);
    if (!realDirectory(dir)) return [];
    try {
      return readdirSync(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
  }

  /**
   * A top-level directory of the cache, made 0700 (with the root) if missing. One that is a link or a file is
   * refused: nothing is written or removed through it.
   */
  private subdir(name: string): string {
    const dir = join(this.root, name);
    if (realDirectory(dir)) return dir;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!realDirectory(dir)) throw new UsageError("cache_untrusted", `${dir} in the handoff cache is not a directory`);
    return dir;
  }

  /** A top-level directory of the cache if it is one (a real directory, not a link), else null. */
  private existingSubdir(name: string): string | null {
    const dir = join(this.root, name);
    return realDirectory(dir) ? dir : null;
  }

  private assertBuild(buildDir: string): void {
    const dir = resolve(buildDir);
    if (dirname(dir) !== join(this.root, "building") || ownerPid(basename(dir)) === null)
      throw new Error(`${buildDir} is not a build directory of the cache at ${this.root} (startBuild makes them)`);
  }
}

/** Reads and checks one environment directory: tree/ a directory, index a file, environment.json valid with this key. */
function readEnvironment(dir: string, key: string): EnvironmentRead {
  const stats = lstatOrNull(dir);
  if (stats === null) return { kind: "invalid", why: "absent" };
  if (!stats.isDirectory()) return { kind: "invalid", why: "not a directory" };
  if (!lstatOrNull(join(dir, "tree"))?.isDirectory()) return { kind: "invalid", why: "no tree/ directory" };
  if (!lstatOrNull(join(dir, "index"))?.isFile()) return { kind: "invalid", why: "no index file" };
  const read = readFileSafely(join(dir, "environment.json"), MAX_RECORD_BYTES);
  if (read.kind === "unreadable")
    return read.message === "ENOENT" ? { kind: "invalid", why: "no environment.json" } : { kind: "unreadable", why: read.message };
  if (read.kind !== "bytes")
    return { kind: "invalid", why: `environment.json is ${read.kind === "too_large" ? "too large" : "not a file"}` };
  let json: unknown;
  try {
    json = JSON.parse(read.bytes.toString("utf8"));
  } catch {
    return { kind: "invalid", why: "environment.json is not JSON" };
  }
  const parsed = EnvironmentRecord.safeParse(json);
  if (!parsed.success) return { kind: "invalid", why: `environment.json is not a valid record: ${parsed.error.issues[0]?.message}` };
  if (parsed.data.key !== key) return { kind: "invalid", why: "environment.json names another key" };
  const lastUsed = lstatOrNull(join(dir, "last-used"));
  const created = new Date(parsed.data.createdAt);
  const lastUsedAt = lastUsed?.mtime ?? (Number.isNaN(created.getTime()) ? stats.mtime : created);
  return { kind: "valid", environment: { key, dir, tree: join(dir, "tree"), record: parsed.data, lastUsedAt, inUse: false } };
}

function assertKey(key: string): void {
  if (!KEY.test(key)) throw new Error(`not an environment key (64 lowercase hex digits): ${JSON.stringify(key)}`);
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/** lstat with nanosecond times (the cache compares ctimes), or null when there is nothing there. */
function bigLstatOrNull(path: string): BigIntStats | null {
  try {
    return lstatSync(path, { bigint: true });
  } catch {
    return null;
  }
}

/** A directory itself, not a link to one. */
function realDirectory(path: string): boolean {
  return lstatOrNull(path)?.isDirectory() === true;
}

/** Sets a file's mtime (writing it when missing); a cache on a read-only file system just keeps the old time. */
function touch(path: string, time: Date): void {
  try {
    lutimesSync(path, time, time);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") return;
    try {
      writeFileSync(path, "", { mode: 0o600 });
    } catch {}
  }
}

/**
 * Waits (1 ms at a time, a few ms in all: the kernel's timestamps advance by its tick) until a ctime set now is later
 * than `after`: the commit's rename then dates the environment strictly after its last write (environment.ts,
 * checkEnvironment), and a write in the same tick as the commit cannot pass for one before it.
 */
function waitPastCtime(probe: string, after: bigint, time: Date): void {
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  for (let attempt = 0; attempt < 1000; attempt++) {
    touch(probe, time);
    const ctime = bigLstatOrNull(probe)?.ctimeNs;
    if (ctime === undefined || ctime > after) return;
    Atomics.wait(sleeper, 0, 0, 1);
  }
}

function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {}
}
