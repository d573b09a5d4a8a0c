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
  const table = known === undefined ? readIndexTable(index.bytes, objectFormat === "sha256" ? 32 : 20) : known;
  return new RacyEntryFiles(index, table).settle(workTree, objectFormat, seen);
}

/** What an lstat shows of a racily clean entry's file, against the entry; UNSEEN: not looked at yet. */
const UNSEEN = 0;
/** The inode, size, mtime and ctime the entry recorded, to the nanosecond: the checkout's file. */
const AS_CHECKED_OUT = 1;
/** Another file whose stat data differ from the entry's only below the second, where git does not look. */
const CHANGED_BELOW_THE_SECOND = 2;
/** Changed where git sees it too: a whole-second field, gone, or no longer a regular file. */
const CHANGED = 3;

function fileState(bytes: Buffer, offset: number, stats: BigIntStats | null): number {
  if (stats === null || !stats.isFile()) return CHANGED;
  if (statsMatchEntry(bytes, offset, stats)) return AS_CHECKED_OUT;
  return secondsMatchEntry(bytes, offset, stats) ? CHANGED_BELOW_THE_SECOND : CHANGED;
}

/**
 * The racily clean entries of an index, and what a walk saw of each one's file as it went (`observe`): a byte per
 * entry, not the lstat itself, since 80,000 lstats held through a walk cost more in garbage collection than taking
 * them. Settling and the check of early staging read these, and lstat only the files the walk did not see.
 */
export class RacyEntryFiles {
  readonly #index: IndexCopy;
  readonly #indexSeconds: number;
  /** Offsets of the racily clean entries in the index bytes, and their path's start and end; null: an index not to touch. */
  readonly #racy: { readonly offsets: number[]; readonly nameStarts: number[]; readonly nameEnds: number[] } | null;
  readonly #states: Uint8Array;
  /** Relative path (latin1) → racy entry number, made at the first `observe`. */
  #byPath: Map<string, number> | null = null;

  constructor(index: IndexCopy, table: IndexTable | null) {
    this.#index = index;
    this.#indexSeconds = Math.floor(index.mtimeMs / 1000);
    this.#racy = table ? racyEntries(index.bytes, this.#indexSeconds, table) : null;
    this.#states = new Uint8Array(this.#racy?.offsets.length ?? 0);
  }

  /** A regular file a walk just lstat'ed (`relPath` relative to the work tree): kept as its entry's state, if racy. */
  observe(relPath: Buffer, stats: BigIntStats): void {
    const racy = this.#racy;
    if (racy === null || racy.offsets.length === 0) return;
    this.#byPath ??= new Map(racy.offsets.map((_, i) => [this.#index.bytes.toString("latin1", racy.nameStarts[i]!, racy.nameEnds[i]!), i]));
    const i = this.#byPath.get(relPath.toString("latin1"));
    if (i !== undefined) this.#states[i] = fileState(this.#index.bytes, racy.offsets[i]!, stats);
  }

  /**
   * The index with every racy entry whose file is not as checked out smudged (size 0, so git re-hashes it), dated one
   * second past the rest (settleRacyEntries); the index itself when no entry is racy or it is not one to touch.
   */
  settle(workTree: string, objectFormat: "sha1" | "sha256", seen?: Map<string, BigIntStats>): IndexCopy {
    const racy = this.#racy;
    if (racy === null || racy.offsets.length === 0) return this.#index;
    const hashBytes = objectFormat === "sha256" ? 32 : 20;
    const bytes = Buffer.from(this.#index.bytes);
    const root = latin1Root(workTree);
    for (let i = 0; i < racy.offsets.length; i++) {
      if (this.#stateOf(i, root, seen, true) !== AS_CHECKED_OUT) bytes.writeUInt32BE(0, racy.offsets[i]! + ENTRY_SIZE);
    }
    const body = bytes.subarray(0, bytes.length - hashBytes);
    createHash(objectFormat)
      .update(body)
      .digest()
      .copy(bytes, bytes.length - hashBytes);
    return { bytes, mtimeMs: (this.#indexSeconds + 1) * 1000 };
  }

  /**
   * Whether git, given `datedPastRacyEntries(index)`, may have trusted a racily clean entry whose file changed: the
   * file differs from the entry only below the second (gitMayHaveMissedAChange).
   */
  gitMayHaveMissedAChange(workTree: string, seen?: ReadonlyMap<string, BigIntStats>): boolean {
    const racy = this.#racy;
    if (racy === null) return false;
    const root = latin1Root(workTree);
    for (let i = 0; i < racy.offsets.length; i++) {
      if (this.#stateOf(i, root, seen, false) === CHANGED_BELOW_THE_SECOND) return true;
    }
    return false;
  }

  /**
   * Entry i's state: as observed, else from `seen` (absolute path, latin1), else an lstat now (added to `seen` if
   * `keep`). `root`: the work tree's path and a slash, its bytes as latin1, as the walk keys its lstats.
   */
  #stateOf(i: number, root: string, seen: ReadonlyMap<string, BigIntStats> | undefined, keep: boolean): number {
    const observed = this.#states[i]!;
    if (observed !== UNSEEN) return observed;
    const racy = this.#racy!;
    const bytes = this.#index.bytes;
    const path = root + bytes.toString("latin1", racy.nameStarts[i]!, racy.nameEnds[i]!);
    let stats = seen?.get(path) ?? null;
    if (stats === null) {
      try {
        stats = lstatSync(Buffer.from(path, "latin1"), { bigint: true });
        if (keep) (seen as Map<string, BigIntStats> | undefined)?.set(path, stats);
      } catch {
        stats = null;
      }
    }
    return fileState(bytes, racy.offsets[i]!, stats);
  }
}

/** The work tree's path and a slash, its bytes as latin1 (one character a byte): how walks key their lstats. */
function latin1Root(workTree: string): string {
  return Buffer.from(`${workTree}/`).toString("latin1");
}

/** Racily clean entries (mtime second not before the index's): their offsets and path bounds, in index order. */
function racyEntries(
  bytes: Buffer,
  indexSeconds: number,
  table: IndexTable,
): { offsets: number[]; nameStarts: number[]; nameEnds: number[] } {
  const racy = { offsets: [] as number[], nameStarts: [] as number[], nameEnds: [] as number[] };
  for (let i = 0; i < table.count; i++) {
    const offset = table.offsets[i]!;
    if (!ordinaryRacy(bytes, offset, table.flags[i]!, indexSeconds)) continue;
    racy.offsets.push(offset);
    racy.nameStarts.push(table.nameStarts[i]!);
    racy.nameEnds.push(table.nameEnds[i]!);
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
  return new RacyEntryFiles(index, table).gitMayHaveMissedAChange(workTree, seen);
}

/**
 * A plain file at stage 0 whose mtime second is not before the index's: a conflict stage, assume-valid (0x8000),
 * extended flags (intent-to-add, skip-worktree), a link or a gitlink is left to git.
 */
function ordinaryRacy(bytes: Buffer, offset: number, flags: number, indexSeconds: number): boolean {
  const ordinary = (flags & (0xb000 | EXTENDED_FLAG)) === 0 && (bytes.readUInt32BE(offset + ENTRY_MODE) & 0o170000) === 0o100000;
  return ordinary && bytes.readUInt32BE(offset + 8) >= indexSeconds;
}
