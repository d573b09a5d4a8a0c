import type { BigIntStats } from "node:fs";

/**
 * The git index as handoff reads it in memory (versions 2 and 3, what a checkout writes): the copy kept before the
 * agent ran, for the racy-entry settling (racy-index.ts) and the base tree (base-tree.ts). Each entry starts with
 * 32-bit ctime s/ns, mtime s/ns, dev, ino (offset 20), mode (24), uid, gid, size (36), then the object id (40), the
 * flags and the NUL-padded path.
 */

const HEADER_BYTES = 12;
const FIXED_BYTES = 62 - 20; // the fixed fields around a 20-byte object id; +12 for a 32-byte one
export const ENTRY_MODE = 24;
export const ENTRY_SIZE = 36;
export const ENTRY_OBJECT_ID = 40;
/** Set in an entry's flags when a second flags word (intent-to-add, skip-worktree) follows; version 3 only. */
export const EXTENDED_FLAG = 0x4000;

/** Where each entry of an index lies in its bytes: columns, one row an entry, in index order (sorted by path). */
export interface IndexTable {
  readonly count: number;
  readonly offsets: Uint32Array;
  readonly nameStarts: Uint32Array;
  readonly nameEnds: Uint32Array;
  readonly flags: Uint16Array;
}

/** The entries of `bytes`, or null for bytes that are not an index of version 2 or 3 read whole. */
export function readIndexTable(bytes: Buffer, hashBytes: number): IndexTable | null {
  if (bytes.length < HEADER_BYTES + hashBytes || bytes.toString("latin1", 0, 4) !== "DIRC") return null;
  const version = bytes.readUInt32BE(4);
  if (version !== 2 && version !== 3) return null;
  const count = bytes.readUInt32BE(8);
  const nameOffset = FIXED_BYTES + hashBytes;
  const end = bytes.length - hashBytes;
  // Every entry takes more than its fixed fields: a count the bytes cannot hold is a bad index, not an allocation.
  if (count > (end - HEADER_BYTES) / nameOffset) return null;
  const table = {
    count,
    offsets: new Uint32Array(count),
    nameStarts: new Uint32Array(count),
    nameEnds: new Uint32Array(count),
    flags: new Uint16Array(count),
  };
  let offset = HEADER_BYTES;
  for (let i = 0; i < count; i++) {
    if (offset + nameOffset > end) return null;
    const flags = bytes.readUInt16BE(offset + nameOffset - 2);
    const extended = (flags & EXTENDED_FLAG) !== 0;
    if (extended && version < 3) return null;
    const nameStart = offset + nameOffset + (extended ? 2 : 0);
    const nameEnd = bytes.indexOf(0, nameStart);
    if (nameEnd === -1 || nameEnd >= end) return null;
    table.offsets[i] = offset;
    table.nameStarts[i] = nameStart;
    table.nameEnds[i] = nameEnd;
    table.flags[i] = flags;
    // Entries are padded with 1–8 NULs to a multiple of 8 bytes.
    offset += (nameEnd - offset + 8) & ~7;
  }
  return table;
}

/**
 * The file (`stats`, an lstat in nanoseconds) still has the inode, size, mtime and ctime the entry at `offset`
 * recorded, to the nanosecond (32-bit fields, as git keeps them): no user-space write leaves ctime as it was.
 */
export function statsMatchEntry(bytes: Buffer, offset: number, stats: BigIntStats): boolean {
  return (
    bytes.readUInt32BE(offset) === low32(stats.ctimeNs / NS_PER_SECOND) &&
    bytes.readUInt32BE(offset + 4) === low32(stats.ctimeNs % NS_PER_SECOND) &&
    bytes.readUInt32BE(offset + 8) === low32(stats.mtimeNs / NS_PER_SECOND) &&
    bytes.readUInt32BE(offset + 12) === low32(stats.mtimeNs % NS_PER_SECOND) &&
    bytes.readUInt32BE(offset + 20) === low(stats.ino) &&
    bytes.readUInt32BE(offset + ENTRY_SIZE) === low(stats.size)
  );
}

const NS_PER_SECOND = 1_000_000_000n;

/** The low 32 bits of a value, as git keeps it in an entry. */
function low(value: bigint): number {
  return Number(BigInt.asUintN(32, value));
}

/**
 * low() of a value under 2^53 in magnitude (seconds or nanoseconds of an int64 count of nanoseconds), without a
 * BigInt more: such a value is exact as a Number, and `>>> 0` takes it modulo 2^32 as BigInt.asUintN(32) does.
 */
function low32(value: bigint): number {
  return Number(value) >>> 0;
}

/**
 * The entry at `offset` and the file (`stats`) agree on what git compares of a regular file's stat data at whole
 * seconds: ctime and mtime seconds, inode and size (32-bit fields). Differing only below the second, git takes the
 * file for unchanged.
 */
export function secondsMatchEntry(bytes: Buffer, offset: number, stats: BigIntStats): boolean {
  return (
    bytes.readUInt32BE(offset) === low32(stats.ctimeNs / NS_PER_SECOND) &&
    bytes.readUInt32BE(offset + 8) === low32(stats.mtimeNs / NS_PER_SECOND) &&
    bytes.readUInt32BE(offset + 20) === low(stats.ino) &&
    bytes.readUInt32BE(offset + ENTRY_SIZE) === low(stats.size)
  );
}
