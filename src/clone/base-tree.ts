import { createHash } from "node:crypto";
import { type BigIntStats, closeSync, fstatSync, openSync, readSync } from "node:fs";
import { READ_NO_FOLLOW } from "../lib/safe-read.js";
import { ENTRY_MODE, ENTRY_OBJECT_ID, ENTRY_SIZE, type IndexTable, readIndexTable, statsMatchEntry } from "./index-entries.js";

/**
 * What the base checkout put in the workspace, read from the index git wrote right after the checkout (the copy
 * handoff kept in memory before the agent started; never the agent's index). The pre-walk's limits apply to what
 * the agent changed: a committed 200 MB file the agent did not touch, or a directory depth the base already has, is
 * not held against the run. And git stages nothing below a submodule's path, so the scan must know those paths.
 *
 * Nothing is copied: the entries' offsets are kept, and a path is found by binary search (the index is sorted by
 * path, byte by byte). Index versions 2 and 3 only (what a checkout writes; handoff's git calls read no global
 * config that could ask for version 4); any other index gives an empty base, which exempts nothing.
 */
export interface BaseTree {
  /** Entries of the base checkout's index: its files, symbolic links and submodules (directories are not counted). */
  readonly entries: number;
  /** Paths of the base's submodules (gitlinks), latin1: an empty directory in the clone. */
  readonly gitlinks: ReadonlySet<string>;
  /**
   * The base has a regular file at `relPath` and the workspace file (`absPath`, `stats` its lstat) still holds its
   * bytes: every stat field is as the checkout recorded it (no user-space write leaves ctime as it was), or, when
   * only its size is, its bytes hash to the base's blob (read through a descriptor, never past that size). Anything
   * else, or any doubt (a file whose bytes git converts on checkout), is a change.
   */
  unchanged(relPath: Buffer, absPath: Buffer, stats: BigIntStats): boolean;
  /** The base has a directory at `relPath` (some entry lies below it). */
  hasDirectory(relPath: Buffer): boolean;
  /** The base has an entry at `relPath` or below it (git can match it in the base index). */
  tracks(relPath: Buffer): boolean;
}

export const EMPTY_BASE: BaseTree = {
  entries: 0,
  gitlinks: new Set(),
  unchanged: () => false,
  hasDirectory: () => false,
  tracks: () => false,
};

const FOUR_GIB = 2n ** 32n;

export function readBaseTree(
  index: Buffer,
  objectFormat: "sha1" | "sha256",
  /** The entries of `index`, when the caller read them already (readIndexTable). */
  known?: IndexTable | null,
): BaseTree {
  const hashBytes = objectFormat === "sha256" ? 32 : 20;
  const table = known === undefined ? readIndexTable(index, hashBytes) : known;
  if (!table) return EMPTY_BASE;
  const { count, offsets, nameStarts, nameEnds } = table;
  const gitlinks = new Set<string>();
  for (let i = 0; i < count; i++) {
    if ((index.readUInt32BE(offsets[i]! + ENTRY_MODE) & 0o170000) === 0o160000)
      gitlinks.add(index.toString("latin1", nameStarts[i]!, nameEnds[i]!));
  }

  const nameAt = (i: number) => index.subarray(nameStarts[i]!, nameEnds[i]!);
  /** The first entry whose path is not below `key` in byte order. */
  const lowerBound = (key: Buffer) => {
    let low = 0;
    let high = count;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (Buffer.compare(nameAt(middle), key) < 0) low = middle + 1;
      else high = middle;
    }
    return low;
  };

  const hasDirectory = (relPath: Buffer) => {
    const prefix = Buffer.concat([relPath, Buffer.from("/")]);
    const i = lowerBound(prefix);
    return i < count && nameAt(i).subarray(0, prefix.length).equals(prefix);
  };

  return {
    entries: count,
    gitlinks,
    unchanged(relPath, absPath, stats) {
      const i = lowerBound(relPath);
      if (i >= count || !nameAt(i).equals(relPath)) return false;
      const at = offsets[i]!;
      if ((index.readUInt32BE(at + ENTRY_MODE) & 0o170000) !== 0o100000 || !stats.isFile()) return false;
      if (index.readUInt32BE(at + ENTRY_SIZE) !== Number(BigInt.asUintN(32, stats.size))) return false;
      if (statsMatchEntry(index, at, stats)) return true;
      // The index keeps sizes modulo 2^32: past 4 GiB only the stat data above can tell.
      if (stats.size >= FOUR_GIB) return false;
      const blob = index.subarray(at + ENTRY_OBJECT_ID, at + ENTRY_OBJECT_ID + hashBytes);
      return blobIdOfFile(absPath, stats.size, objectFormat)?.equals(blob) ?? false;
    },
    hasDirectory,
    tracks(relPath) {
      const i = lowerBound(relPath);
      return (i < count && nameAt(i).equals(relPath)) || hasDirectory(relPath);
    },
  };
}

const READ_CHUNK = 1024 * 1024;

/**
 * git's blob id of a regular file of `size` bytes (what `hash-object --no-filters` gives), read in chunks through a
 * descriptor opened without following a link or blocking; null if it is not that file any more.
 */
function blobIdOfFile(path: Buffer, size: bigint, objectFormat: "sha1" | "sha256"): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, READ_NO_FOLLOW);
  } catch {
    return null;
  }
  try {
    const stats = fstatSync(fd, { bigint: true });
    if (!stats.isFile() || stats.size !== size) return null;
    const hash = createHash(objectFormat).update(`blob ${size}\0`);
    const chunk = Buffer.allocUnsafe(READ_CHUNK);
    let remaining = Number(size);
    while (remaining > 0) {
      const read = readSync(fd, chunk, 0, Math.min(READ_CHUNK, remaining), null);
      if (read === 0) return null;
      hash.update(chunk.subarray(0, read));
      remaining -= read;
    }
    return hash.digest();
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}
