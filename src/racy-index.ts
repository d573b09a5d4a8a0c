import { createHash } from "node:crypto";
import { lstatSync } from "node:fs";

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

const HEADER_BYTES = 12;
const NAME_OFFSET_V2 = 62 - 20; // the fixed fields around a 20-byte object id; +12 for a 32-byte one

export function settleRacyEntries(index: IndexCopy, workTree: string, objectFormat: "sha1" | "sha256"): IndexCopy {
  const hashBytes = objectFormat === "sha256" ? 32 : 20;
  const indexSeconds = Math.floor(index.mtimeMs / 1000);
  const racy = racyEntries(index.bytes, indexSeconds, hashBytes);
  if (racy === null || racy.length === 0) return index;

  const bytes = Buffer.from(index.bytes);
  const root = Buffer.from(`${workTree}/`);
  for (const entry of racy) {
    if (!unchangedSinceCheckout(bytes, entry.offset, Buffer.concat([root, entry.path]))) bytes.writeUInt32BE(0, entry.offset + 36);
  }
  const body = bytes.subarray(0, bytes.length - hashBytes);
  createHash(objectFormat).update(body).digest().copy(bytes, bytes.length - hashBytes);
  return { bytes, mtimeMs: (indexSeconds + 1) * 1000 };
}

/** Entries git would call racily clean (mtime second not before the index's), or null for an index not to touch. */
function racyEntries(bytes: Buffer, indexSeconds: number, hashBytes: number): RacyEntry[] | null {
  if (bytes.length < HEADER_BYTES + hashBytes || bytes.toString("latin1", 0, 4) !== "DIRC") return null;
  const version = bytes.readUInt32BE(4);
  if (version !== 2 && version !== 3) return null;
  const count = bytes.readUInt32BE(8);
  const nameOffset = NAME_OFFSET_V2 + hashBytes;
  const end = bytes.length - hashBytes;
  const racy: RacyEntry[] = [];
  let offset = HEADER_BYTES;
  for (let i = 0; i < count; i++) {
    if (offset + nameOffset > end) return null;
    const flags = bytes.readUInt16BE(offset + nameOffset - 2);
    const extended = (flags & 0x4000) !== 0;
    if (extended && version < 3) return null;
    const nameStart = offset + nameOffset + (extended ? 2 : 0);
    const nameEnd = bytes.indexOf(0, nameStart);
    if (nameEnd === -1 || nameEnd >= end) return null;
    // Only plain files at stage 0: a conflict stage, assume-valid (0x8000), extended flags (intent-to-add,
    // skip-worktree), a link or a gitlink is left to git.
    const mode = bytes.readUInt32BE(offset + 24);
    const ordinary = (flags & 0xb000) === 0 && !extended && (mode & 0o170000) === 0o100000;
    if (ordinary && bytes.readUInt32BE(offset + 8) >= indexSeconds) racy.push({ offset, path: bytes.subarray(nameStart, nameEnd) });
    // Entries are padded with 1–8 NULs to a multiple of 8 bytes.
    offset += ((nameEnd - offset + 8) & ~7);
  }
  return racy;
}

/** The file still has the inode, size, mtime and ctime the index recorded, to the nanosecond (32-bit fields, as git). */
function unchangedSinceCheckout(bytes: Buffer, offset: number, path: Buffer): boolean {
  let stats;
  try {
    stats = lstatSync(path, { bigint: true });
  } catch {
    return false;
  }
  if (!stats.isFile()) return false;
  const low = (value: bigint) => Number(BigInt.asUintN(32, value));
  return (
    bytes.readUInt32BE(offset) === low(stats.ctimeNs / 1_000_000_000n) &&
    bytes.readUInt32BE(offset + 4) === low(stats.ctimeNs % 1_000_000_000n) &&
    bytes.readUInt32BE(offset + 8) === low(stats.mtimeNs / 1_000_000_000n) &&
    bytes.readUInt32BE(offset + 12) === low(stats.mtimeNs % 1_000_000_000n) &&
    bytes.readUInt32BE(offset + 20) === low(stats.ino) &&
    bytes.readUInt32BE(offset + 36) === low(stats.size)
  );
}
