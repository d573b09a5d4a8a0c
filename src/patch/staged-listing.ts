import type { RawChange } from "./raw-change.js";
import { ENTRY_MODE, ENTRY_OBJECT_ID, EXTENDED_FLAG, type IndexTable } from "../clone/index-entries.js";

/**
 * The `ls-files -s -z` listing of the staged index, written from what handoff already holds instead of asking git to
 * read the whole index once more (on 80,000 files, an 8.7 MB answer and a process): the base checkout's index (the
 * copy kept before the agent ran, a checkout of the base commit) with the changes git's `diff --cached --raw` reports
 * against that commit put in. The staged index differs from the base commit exactly where that diff says (it lists
 * every difference: no renames, submodules not ignored), and the base index is the base commit's tree.
 *
 * That last fact is checked where it matters: each change's old side must be the base index's entry at its path (an
 * addition: no entry there). Any doubt gives null, and the caller asks git: an index with conflict stages or
 * extended flags (skip-worktree, intent-to-add), or a change whose old side the base index does not hold.
 */
/** What the listing needs of a change git's raw diff reported. */
export type ListedChange = Pick<RawChange, "path" | "oldMode" | "newMode" | "oldId" | "newId" | "status">;

const HEX = Buffer.from("0123456789abcdef", "latin1");
const SPACE = 0x20;
const TAB = 0x09;
const ZERO = 0x30;
const NUL = 0;
const STAGE_BITS = 0x3000;

export function stagedListing(bytes: Buffer, table: IndexTable, hashBytes: number, changes: readonly ListedChange[]): Buffer | null {
  for (let i = 0; i < table.count; i++) if ((table.flags[i]! & (STAGE_BITS | EXTENDED_FLAG)) !== 0) return null;
  const sorted = [...changes].sort((a, b) => Buffer.compare(a.path, b.path));
  for (let j = 1; j < sorted.length; j++) if (sorted[j]!.path.equals(sorted[j - 1]!.path)) return null;

  /** Entry i's path against `path`, in byte order (<0, 0, >0), without a Buffer for the entry's path. */
  const comparePath = (i: number, path: Buffer) => -path.compare(bytes, table.nameStarts[i]!, table.nameEnds[i]!);
  const hexLength = hashBytes * 2;
  // mode (6 octal digits, or more) + space + id + " 0\t" + path + NUL: sized for the base, grown by the additions.
  let size = 0;
  for (let i = 0; i < table.count; i++) size += 7 + hexLength + 3 + (table.nameEnds[i]! - table.nameStarts[i]!) + 1 + 4;
  for (const change of sorted) size += change.newMode.length + 1 + change.newId.length + 3 + change.path.length + 1;
  const out = Buffer.allocUnsafe(size);
  let at = 0;

  // A tree holds a handful of modes: each is written as text once.
  const modes = new Map<number, Buffer>();
  const writeBase = (i: number) => {
    const offset = table.offsets[i]!;
    const modeBits = bytes.readUInt32BE(offset + ENTRY_MODE);
    let mode = modes.get(modeBits);
    if (mode === undefined) {
      mode = Buffer.from(`${modeBits.toString(8).padStart(6, "0")} `, "latin1");
      modes.set(modeBits, mode);
    }
    at += mode.copy(out, at);
    const id = offset + ENTRY_OBJECT_ID;
    for (let k = 0; k < hashBytes; k++) {
      const byte = bytes[id + k]!;
      out[at++] = HEX[byte >> 4]!;
      out[at++] = HEX[byte & 15]!;
    }
    out[at++] = SPACE;
    out[at++] = ZERO;
    out[at++] = TAB;
    at += bytes.copy(out, at, table.nameStarts[i]!, table.nameEnds[i]!);
    out[at++] = NUL;
  };
  const writeChange = (change: ListedChange) => {
    at += out.write(`${change.newMode} ${change.newId} 0\t`, at, "latin1");
    at += change.path.copy(out, at);
    out[at++] = NUL;
  };
  /** The base entry is the change's old side, as git read it from the base commit. */
  const oldSideIs = (i: number, change: ListedChange) => {
    const offset = table.offsets[i]!;
    const mode = bytes
      .readUInt32BE(offset + ENTRY_MODE)
      .toString(8)
      .padStart(6, "0");
    return (
      mode === change.oldMode && bytes.toString("hex", offset + ENTRY_OBJECT_ID, offset + ENTRY_OBJECT_ID + hashBytes) === change.oldId
    );
  };

  let i = 0;
  for (const change of sorted) {
    while (i < table.count && comparePath(i, change.path) < 0) writeBase(i++);
    const inBase = i < table.count && comparePath(i, change.path) === 0;
    if (change.status === "A") {
      if (inBase) return null;
      writeChange(change);
      continue;
    }
    if (!inBase || !oldSideIs(i, change)) return null;
    i++;
    if (change.status === "M" || change.status === "T") writeChange(change);
    else if (change.status !== "D") return null;
  }
  while (i < table.count) writeBase(i++);
  return out.subarray(0, at);
}
