import { createHash } from "node:crypto";
import { type BigIntStats, lstatSync } from "node:fs";
import { ENTRY_MODE, ENTRY_SIZE, EXTENDED_FLAG, type IndexTable, readIndexTable, statsMatchEntry } from "./index-entries.js";

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
  /** Filled with the lstat of each file looked at (absolute path, latin1), for a walk that follows to reuse. */
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
    // Only plain files at stage 0: a conflict stage, assume-valid (0x8000), extended flags (intent-to-add,
    // skip-worktree), a link or a gitlink is left to git.
    const mode = bytes.readUInt32BE(offset + ENTRY_MODE);
    const ordinary = (table.flags[i]! & (0xb000 | EXTENDED_FLAG)) === 0 && (mode & 0o170000) === 0o100000;
    if (ordinary && bytes.readUInt32BE(offset + 8) >= indexSeconds)
      racy.push({ offset, path: bytes.subarray(table.nameStarts[i]!, table.nameEnds[i]!) });
  }
  return racy;
}

/** The file still has the inode, size, mtime and ctime the index recorded, to the nanosecond. */
function unchangedSinceCheckout(bytes: Buffer, offset: number, path: Buffer, seen?: Map<string, BigIntStats>): boolean {
  let stats: BigIntStats;
  try {
    stats = lstatSync(path, { bigint: true });
  } catch {
    return false;
  }
  seen?.set(path.toString("latin1"), stats);
  return stats.isFile() && statsMatchEntry(bytes, offset, stats);
}
