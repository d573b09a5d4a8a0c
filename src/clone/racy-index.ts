import { createHash } from "node:crypto";
import { type BigIntStats, lstatSync } from "node:fs";
import {
  ENTRY_MODE,
  ENTRY_SIZE,
  EXTENDED_FLAG,
  type IndexTable,
  readIndexTable,
  secondsMatchEntry,
  statsMatchEntry,
} from "./index-entries.js";

/**
 * git trusts an index entry's stat data only when the file's mtime is older than the index file itself, and it
 * compares whole seconds. A checkout writes its files and its index within the same second or so, so right after
 * a clone most entries are "racily clean": every later `git add` re-hashes them (a quarter of a second for 150 MB).
 *
 * handoff can settle them itself, with more precision than git uses: an entry whose file still has the exact inode,
 * size, mtime and ctime (nanoseconds) the index recorded is unchanged since the checkout, because no user-space
 * write leaves ctime as it was. Such entries are kept; every other racy entry is smudged (size 0, git's own marker,
 * so git re-hashes it); then the index copy is dated one second past every entry, and git trusts the rest.
 * Index versions 2 and 3 only (what a checkout writes); any other index is left as it was.
 */
export interface IndexCopy {
  readonly bytes: Buffer;
  readonly mtimeMs: number;
}

interface RacyEntry {
  readonly offset: number;
  readonly path: Buffer;
}

export function settleRacyEntries(
  index: IndexCopy,
  workTree: string,
  objectFormat: "sha1" | "sha256",
  /** The entries of `index.bytes`, when the caller read them already (readIndexTable). */
  known?: IndexTable | null,
  /**
   * lstat results by absolute path (latin1), shared with a walk: a file found here (the walk just lstat'ed it) is not
   * lstat'ed again; one that is not is lstat'ed and added (for a walk that follows to reuse).
   */
  seen?: Map<string, BigIntStats>,
): IndexCopy {
  const hashBytes = objectFormat === "sha256" ? 32 : 20;
  const indexSeconds = Math.floor(index.mtimeMs / 1000);
  const racy = racyEntries(index.bytes, indexSeconds, known === undefined ? readIndexTable(index.bytes, hashBytes) : known);
  if (racy === null || racy.length === 0) return index;

  const bytes = Buffer.from(index.bytes);
  const root = Buffer.from(`${workTree}/`);
  for (const entry of racy) {
    if (!unchangedSinceCheckout(bytes, entry.offset, Buffer.concat([root, entry.path]), seen))
      bytes.writeUInt32BE(0, entry.offset + ENTRY_SIZE);
  }
  const body = bytes.subarray(0, bytes.length - hashBytes);
  createHash(objectFormat)
    .update(body)
    .digest()
    .copy(bytes, bytes.length - hashBytes);
  return { bytes, mtimeMs: (indexSeconds + 1) * 1000 };
}

/** Entries git would call racily clean (mtime second not before the index's), or null for an index not to touch. */
function racyEntries(bytes: Buffer, indexSeconds: number, table: IndexTable | null): RacyEntry[] | null {
  if (!table) return null;
  const racy: RacyEntry[] = [];
  for (let i = 0; i < table.count; i++) {
    const offset = table.offsets[i]!;
    if (ordinaryRacy(bytes, offset, table.flags[i]!, indexSeconds))
      racy.push({ offset, path: bytes.subarray(table.nameStarts[i]!, table.nameEnds[i]!) });
  }
  return racy;
}

/**
 * The index copy dated one second past its racily clean entries without looking at their files: git then trusts
 * every entry whose whole-second stat data still match, as in a settled copy, but also one whose file was rewritten
 * in the second of the checkout. For staging that starts before the files are looked at (extract.ts): its result
 * stands only if `gitMayHaveMissedAChange` then says no.
 */
export function datedPastRacyEntries(index: IndexCopy, table: IndexTable | null): IndexCopy {
  const indexSeconds = Math.floor(index.mtimeMs / 1000);
  if (!table) return index;
  for (let i = 0; i < table.count; i++) {
    if (ordinaryRacy(index.bytes, table.offsets[i]!, table.flags[i]!, indexSeconds))
      return { bytes: index.bytes, mtimeMs: (indexSeconds + 1) * 1000 };
  }
  return index;
}

/**
 * Whether git, given `datedPastRacyEntries(index)`, may have trusted a racily clean entry whose file changed: the
 * file's lstat (from `seen`, else taken now) differs from the entry only below the second, where git does not look
 * (ctime and mtime seconds, inode and size as recorded; git compares those and more, see HARDENING_CONFIG's
 * core.checkStat and core.trustctime). Where a whole-second field differs, git saw the change too and read the
 * file; a file that matches to the nanosecond is the checkout's (settleRacyEntries); a file gone or of another type
 * git sees as such.
 */
export function gitMayHaveMissedAChange(
  index: IndexCopy,
  workTree: string,
  table: IndexTable | null,
  seen?: ReadonlyMap<string, BigIntStats>,
): boolean {
  if (!table) return false;
  const { bytes } = index;
  const indexSeconds = Math.floor(index.mtimeMs / 1000);
  const root = `${workTree}/`;
  for (let i = 0; i < table.count; i++) {
    const offset = table.offsets[i]!;
    if (!ordinaryRacy(bytes, offset, table.flags[i]!, indexSeconds)) continue;
    // Keyed as the walk keys its lstats (absolute path, latin1), without a Buffer per entry: often all 80,000 are racy.
    const path = root + bytes.toString("latin1", table.nameStarts[i]!, table.nameEnds[i]!);
    const stats = lstatOf(path, seen);
    if (stats === null || !stats.isFile() || statsMatchEntry(bytes, offset, stats)) continue;
    if (secondsMatchEntry(bytes, offset, stats)) return true;
  }
  return false;
}

/**
 * A plain file at stage 0 whose mtime second is not before the index's: a conflict stage, assume-valid (0x8000),
 * extended flags (intent-to-add, skip-worktree), a link or a gitlink is left to git.
 */
function ordinaryRacy(bytes: Buffer, offset: number, flags: number, indexSeconds: number): boolean {
  const ordinary = (flags & (0xb000 | EXTENDED_FLAG)) === 0 && (bytes.readUInt32BE(offset + ENTRY_MODE) & 0o170000) === 0o100000;
  return ordinary && bytes.readUInt32BE(offset + 8) >= indexSeconds;
}

/** The file still has the inode, size, mtime and ctime the index recorded, to the nanosecond. */
function unchangedSinceCheckout(bytes: Buffer, offset: number, path: Buffer, seen?: Map<string, BigIntStats>): boolean {
  const key = seen === undefined ? null : path.toString("latin1");
  let stats = key === null ? undefined : seen!.get(key);
  if (stats === undefined) {
    try {
      stats = lstatSync(path, { bigint: true });
    } catch {
      return false;
    }
    if (key !== null) seen!.set(key, stats);
  }
  return stats.isFile() && statsMatchEntry(bytes, offset, stats);
}

/** The lstat of `path` (absolute, latin1: one character a byte) from `seen`, else taken now; null when it fails. */
function lstatOf(path: string, seen?: ReadonlyMap<string, BigIntStats>): BigIntStats | null {
  const known = seen?.get(path);
  if (known !== undefined) return known;
  try {
    return lstatSync(Buffer.from(path, "latin1"), { bigint: true });
  } catch {
    return null;
  }
}
