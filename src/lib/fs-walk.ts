import {
  type BigIntStats,
  type Dirent,
  type Stats,
  chmodSync,
  lstatSync,
  mkdtempSync,
  opendirSync,
  readdirSync,
  renameSync,
  rmdirSync,
  unlinkSync,
} from "node:fs";
import type { Hash } from "node:crypto";
import { join } from "node:path";

/**
 * A synchronous lstat walk that never follows a link and keeps names as bytes, so a hostile tree (non-UTF-8
 * names, symlinks to /dev/zero, FIFOs, depth in the thousands) can be observed without being trusted.
 * Synchronous on purpose: on this kind of machine sync lstat beats async pools 2.4–4× (docs/performance.md).
 * Bounded: a directory is read entry by entry and no further than the entry limit, so one directory holding
 * ten million names costs no more memory than the limit; no path longer than PATH_MAX is ever passed to the kernel.
 */

export interface WalkEntry {
  /** Path relative to the root, `/`-separated, as raw bytes. */
  readonly relPath: Buffer;
  readonly absPath: Buffer;
  readonly stats: BigIntStats;
  readonly depth: number;
}

export interface WalkOptions {
  /** Names of top-level entries not to report or descend into (e.g. `.git`). */
  readonly skipTopLevel?: readonly string[];
  /** Stop once this many entries were seen; the walk reports itself as cut short. */
  readonly maxEntries?: number;
  /** Directories deeper than this are reported but not entered. */
  readonly maxDepth?: number;
  /** A directory past `maxDepth` that may still be entered (one the base checkout already had). */
  readonly entersPastDepth?: (relPath: Buffer) => boolean;
  /** Return "skip" to not descend into a directory. */
  readonly onEntry: (entry: WalkEntry) => "skip" | void;
  /** Names already read for some directories (an earlier walk's), used instead of reading them again. */
  readonly listings?: DirectoryListings;
  /** walkTreeYielding only: once aborted, the walk throws at its next pause (a cancelled run stops within a pause). */
  readonly signal?: AbortSignal;
  /**
   * Walk only these paths (relative, raw bytes) and what lies below them, in the order and with the checks of the
   * whole walk: the directories leading to them are reported and entered, but only the names on the way are
   * looked at. A path that does not exist (a deleted one) is passed over.
   */
  readonly roots?: readonly Buffer[];
  /**
   * lstat results taken moments before (absolute path, latin1), used once instead of an lstat of that path: settling
   * the index lstat'ed every file the checkout wrote within its last second, and the walk need not do it again.
   */
  readonly knownStats?: Map<string, BigIntStats>;
  /**
   * A directory (relative path) for which this says yes when the walk enters it is walked lightly, and all below
   * it: an entry's type is taken from the directory itself (d_type), and `onLightEntry` gets it without an lstat,
   * unless it is a directory, of a type the directory does not tell, named in `lstatNames`, or the first of its
   * directory (the lstat that shows its entries can be looked up; if it fails, the rest of that directory is walked
   * as usual, so each failing entry is still unreadable).
   */
  readonly walkLightly?: (relPath: Buffer) => boolean;
  readonly onLightEntry?: (entry: LightEntry) => void;
  /** Names (latin1) always lstat'ed, even when walking lightly. */
  readonly lstatNames?: ReadonlySet<string>;
}

/** An entry seen while walking lightly: its type as its directory tells it, no lstat. */
export interface LightEntry {
  readonly relPath: Buffer;
  readonly absPath: Buffer;
  readonly type: "file" | "symlink" | "fifo" | "socket" | "char" | "block";
  readonly depth: number;
}

/** Directory (absolute path, latin1) → its names (latin1, sorted): what one walk read, for the next to reuse. */
export type DirectoryListings = ReadonlyMap<string, readonly string[]>;

export interface WalkSummary {
  readonly entries: number;
  readonly cutShort: "max_entries" | null;
  readonly tooDeep: readonly Buffer[];
  /** Entries whose absolute path reaches PATH_MAX: not lstat'ed, not entered (git would skip them silently). */
  readonly tooLong: readonly Buffer[];
  readonly unreadable: readonly Buffer[];
}

const SLASH = Buffer.from("/");
const SLASH_BYTE = 0x2f;

/** Linux's PATH_MAX, counting the terminating NUL: a longer path fails with ENAMETOOLONG in every path-based call. */
export const PATH_MAX = 4096;

/**
 * Whether a directory is small enough, by its st_size, to read in one readdir whatever the entry limit: at most 1 MiB
 * holds some 100,000 names (tmpfs counts 20 bytes a name, ext4 and XFS bytes of blocks). 0 means unknown: no.
 */
export function readsAtOnce(size: bigint | number): boolean {
  return size > 0 && size <= ONE_READ_DIR_BYTES;
}

const ONE_READ_DIR_BYTES = 1024 * 1024;

/**
 * Up to `limit` names of a directory, read entry by entry (readdirSync would hold all of them), sorted by bytes.
 * Names travel as latin1 strings, one character per byte: lossless for any byte, and sorted by V8's own string
 * order, several times faster than sorting Buffers with a comparator.
 */
function readNames(dir: Buffer, limit: number, sizeHint: bigint): string[] {
  // One readdir is 12% faster than reading entry by entry: used when the walk is unbounded (the user's own tree) or
  // the directory is small.
  if (limit === Number.POSITIVE_INFINITY || readsAtOnce(sizeHint)) {
    return readdirSync(dir, { encoding: "latin1" }).sort().slice(0, limit);
  }
  return readSomeEntries(dir, limit)
    .map((entry) => entry.name)
    .sort();
}

/** The first `limit` entries of a directory in the order it gives them, read one by one (readdirSync would hold all). */
function readSomeEntries(dir: Buffer, limit: number): Dirent[] {
  const handle = opendirSync(dir, { encoding: "latin1" });
  const entries: Dirent[] = [];
  try {
    while (entries.length < limit) {
      const entry = handle.readSync();
      if (entry === null) break;
      entries.push(entry);
    }
  } finally {
    handle.closeSync();
  }
  return entries;
}

/**
 * Up to `limit` names of a directory with their types as the directory tells them (null: it does not, DT_UNKNOWN),
 * sorted by bytes as readNames sorts them.
 */
function readTypes(dir: Buffer, limit: number, sizeHint: bigint): Map<string, LightEntry["type"] | "dir" | null> {
  const entries =
    limit === Number.POSITIVE_INFINITY || readsAtOnce(sizeHint)
      ? (readdirSync(dir, { encoding: "latin1", withFileTypes: true }) as unknown as Dirent[])
      : readSomeEntries(dir, limit);
  const names = entries.map((entry) => entry.name).sort();
  const byName = new Map(entries.map((entry) => [entry.name, direntType(entry)] as const));
  return new Map(names.slice(0, limit).map((name) => [name, byName.get(name)!] as const));
}

function direntType(entry: Dirent): LightEntry["type"] | "dir" | null {
  const type = fileType(entry);
  return type === "other" ? null : type;
}

/** The walk itself, pausing (yield) every YIELD_EVERY entries so an async caller can let the event loop run. */
function* walkSteps(root: string, options: WalkOptions): Generator<void, WalkSummary> {
  const skip = new Set(options.skipTopLevel ?? []);
  const maxEntries = options.maxEntries ?? Number.POSITIVE_INFINITY;
  const maxDepth = options.maxDepth ?? Number.POSITIVE_INFINITY;
  const tooDeep: Buffer[] = [];
  const tooLong: Buffer[] = [];
  const unreadable: Buffer[] = [];
  const ways = options.roots ? waysToRoots(options.roots) : null;
  const known = options.knownStats?.size ? options.knownStats : undefined;
  // `whole`: every name of the directory is walked (no `roots`, or a root or below one); else only those on `ways`.
  const rootBytes = Buffer.from(root);
  const rootLength = rootBytes.length;
  const stack: { abs: Buffer; rel: Buffer; depth: number; size: bigint; whole: boolean; light: boolean }[] = [
    { abs: rootBytes, rel: Buffer.alloc(0), depth: 0, size: 0n, whole: ways === null, light: false },
  ];
  const lstatNames = options.lstatNames ?? new Set<string>();
  let entries = 0;
  while (stack.length > 0) {
    const dir = stack.pop()!;
    const light =
      dir.whole && options.onLightEntry !== undefined && (dir.light || (dir.depth > 0 && (options.walkLightly?.(dir.rel) ?? false)));
    let names: readonly string[];
    let types: ReadonlyMap<string, LightEntry["type"] | "dir" | null> | null = null;
    try {
      // One more name than the limit can take is enough to know the walk is cut short.
      const limit = maxEntries - entries + 1 + (dir.depth === 0 ? skip.size : 0);
      if (light) {
        types = readTypes(dir.abs, limit, dir.size);
        names = [...types.keys()];
      } else {
        names = !dir.whole
          ? (ways?.namesIn.get(dir.rel.toString("latin1")) ?? [])
          : (options.listings?.get(dir.abs.toString("latin1"))?.slice(0, limit) ?? readNames(dir.abs, limit, dir.size));
      }
    } catch {
      unreadable.push(dir.rel);
      continue;
    }
    let lookedUp = false; // walking lightly: whether an lstat in this directory succeeded yet
    for (const latin1Name of names) {
      if (dir.depth === 0 && skip.has(latin1Name)) continue;
      if (entries >= maxEntries) return { entries, cutShort: "max_entries", tooDeep, tooLong, unreadable };
      // One buffer for both paths: the relative one is the tail of the absolute one (after the root and a slash).
      const abs = Buffer.allocUnsafe(dir.abs.length + 1 + latin1Name.length);
      dir.abs.copy(abs);
      abs[dir.abs.length] = SLASH_BYTE;
      abs.write(latin1Name, dir.abs.length + 1, "latin1");
      const rel = abs.subarray(rootLength + 1);
      if (abs.length >= PATH_MAX) {
        tooLong.push(rel);
        continue;
      }
      const type = types?.get(latin1Name);
      if (types !== null && lookedUp && type && type !== "dir" && !lstatNames.has(latin1Name)) {
        entries++;
        if (entries % YIELD_EVERY === 0) yield;
        options.onLightEntry!({ relPath: rel, absPath: abs, type, depth: dir.depth + 1 });
        continue;
      }
      let stats: BigIntStats;
      try {
        const key = known === undefined ? null : abs.toString("latin1");
        const taken = key === null ? undefined : known!.get(key);
        if (taken !== undefined) known!.delete(key!);
        stats = taken ?? lstatSync(abs, { bigint: true });
        lookedUp = true;
      } catch (error) {
        // A name on the way to a root that is not there: a deleted path, nothing to walk.
        if (!dir.whole && (error as NodeJS.ErrnoException).code === "ENOENT") continue;
        unreadable.push(rel);
        if (!lookedUp) types = null; // the rest of this directory is lstat'ed entry by entry, as usual
        continue;
      }
      entries++;
      if (entries % YIELD_EVERY === 0) yield;
      const depth = dir.depth + 1;
      const verdict = options.onEntry({ relPath: rel, absPath: abs, stats, depth });
      if (stats.isDirectory() && verdict !== "skip") {
        if (depth >= maxDepth && !(options.entersPastDepth?.(rel) ?? false)) tooDeep.push(rel);
        else
          stack.push({
            abs,
            rel,
            depth,
            size: stats.size,
            whole: dir.whole || (ways?.roots.has(rel.toString("latin1")) ?? false),
            light,
          });
      }
    }
  }
  return { entries, cutShort: null, tooDeep, tooLong, unreadable };
}

/** The roots (latin1) and, per directory on the way to one (relative, latin1; "" the top), its names there, sorted. */
function waysToRoots(roots: readonly Buffer[]): {
  readonly roots: ReadonlySet<string>;
  readonly namesIn: ReadonlyMap<string, readonly string[]>;
} {
  const names = new Map<string, Set<string>>();
  for (const root of roots) {
    const parts = root.toString("latin1").split("/");
    for (let i = 0; i < parts.length; i++) {
      const dir = parts.slice(0, i).join("/");
      const set = names.get(dir) ?? new Set<string>();
      names.set(dir, set.add(parts[i]!));
    }
  }
  const namesIn = new Map<string, readonly string[]>();
  for (const [dir, set] of names) namesIn.set(dir, [...set].sort());
  return { roots: new Set(roots.map((root) => root.toString("latin1"))), namesIn };
}

export function walkTree(root: string, options: WalkOptions): WalkSummary {
  const steps = walkSteps(root, options);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * The same walk, letting the event loop run every YIELD_EVERY entries: child processes started before it (git
 * staging during the workspace scan) are fed, read and followed by the next step while it walks.
 */
export async function walkTreeYielding(root: string, options: WalkOptions): Promise<WalkSummary> {
  const steps = walkSteps(root, options);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await new Promise((resolve) => setImmediate(resolve));
    options.signal?.throwIfAborted();
  }
}

// About 2 ms of walking: git staging beside the scan waits no longer than that for its next step to start.
const YIELD_EVERY = 500;

/** A one-word file type from lstat (or a directory entry), as `find -printf %y` would say it. */
export function fileType(stats: BigIntStats | Dirent): "file" | "dir" | "symlink" | "fifo" | "socket" | "char" | "block" | "other" {
  if (stats.isFile()) return "file";
  if (stats.isDirectory()) return "dir";
  if (stats.isSymbolicLink()) return "symlink";
  if (stats.isFIFO()) return "fifo";
  if (stats.isSocket()) return "socket";
  if (stats.isCharacterDevice()) return "char";
  if (stats.isBlockDevice()) return "block";
  return "other";
}

/** Bytes to a printable path: valid UTF-8 stays as it is, anything else is shown with \xNN escapes. */
export function displayPath(bytes: Buffer): string {
  const text = bytes.toString("utf8");
  if (Buffer.from(text, "utf8").equals(bytes)) return text;
  let out = "";
  for (const byte of bytes) out += byte >= 0x20 && byte < 0x7f ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, "0")}`;
  return out;
}

/**
 * Removes a tree the agent made, whatever its shape: depth in the thousands (Node's recursive rmSync overflows its
 * stack), paths past PATH_MAX (every path-based call fails), directories made unlistable. Iterative, never follows
 * a link, and keeps every path short: a directory whose path passes RELOCATE_AT bytes is first renamed up into the
 * tree's root. Memory: per level, one path and the names of at most one batch of subdirectories.
 */
export function removeTreeNoFollow(root: string): void {
  let rootStats: Stats;
  try {
    rootStats = lstatSync(root);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  if (!rootStats.isDirectory()) {
    unlinkSync(root);
    return;
  }
  const frames: { path: Buffer; subdirs: string[] }[] = [{ path: Buffer.from(root), subdirs: [] }];
  while (frames.length > 0) {
    const frame = frames[frames.length - 1]!;
    const next = frame.subdirs.pop();
    if (next !== undefined) {
      const path = Buffer.concat([frame.path, SLASH, Buffer.from(next, "latin1")]);
      frames.push({ path: path.length > RELOCATE_AT ? relocate(path, root) : path, subdirs: [] });
      continue;
    }
    try {
      chmodSync(frame.path, 0o700); // an agent's `chmod 000` would leave it unlistable for a non-root user
    } catch {
      // not ours to change: listing it reports what is wrong
    }
    const names = readNames(frame.path, REMOVE_BATCH, 0n);
    if (names.length === 0) {
      rmdirSync(frame.path);
      frames.pop();
      continue;
    }
    for (const name of names) {
      const path = Buffer.concat([frame.path, SLASH, Buffer.from(name, "latin1")]);
      if (lstatSync(path).isDirectory()) frame.subdirs.push(name);
      else unlinkSync(path);
    }
  }
}

const REMOVE_BATCH = 1024;
const RELOCATE_AT = 2048;

/** Moves a deep directory to a fresh, short-named place in `root`, so everything below it has short paths again. */
function relocate(path: Buffer, root: string): Buffer {
  const moved = Buffer.from(join(mkdtempSync(join(root, ".handoff-rm-")), "d"));
  renameSync(path, moved);
  return moved;
}

/**
 * Adds an lstat fingerprint of every entry below `root` to `hash`: path, type, mode, size, mtime, ctime and inode.
 * ctime cannot be put back from user space, so any write since shows. `onEntry` sees each entry's stats too.
 */
export function hashLstatTree(hash: Hash, root: string, onEntry?: (stats: BigIntStats) => void): void {
  walkTree(root, {
    onEntry: ({ relPath, stats }) => {
      onEntry?.(stats);
      hash.update(relPath).update(` ${fileType(stats)} ${stats.mode} ${stats.size} ${stats.mtimeNs} ${stats.ctimeNs} ${stats.ino}\n`);
    },
  });
}
