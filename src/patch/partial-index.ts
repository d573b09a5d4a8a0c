import { createHash } from "node:crypto";
import type { IndexTable } from "../clone/index-entries.js";
import { writeIndexCopy } from "../clone/private-git.js";

/**
 * The index extraction stages into when only a few paths changed (an overlay's upper dir): the base index's entries
 * at or below those paths, copied byte for byte (stat data included, so git trusts what it trusted in the whole
 * copy), and nothing else. git then reads, lstat's and rewrites a few entries instead of the whole index; the diff
 * against the base commit is restricted to the same paths (a literal pathspec each), so the entries left out are not
 * seen as deleted.
 *
 * One entry is kept besides: for each directory above a changed path that the base has, its first entry. git asks the
 * index whether a directory is tracked when it decides to show an ignored directory whole or to walk into it
 * (`ls-files --others --ignored --directory`): with that entry it answers as it would with the whole index. Such an
 * entry lies outside every pathspec, so nothing stages or diffs it.
 */
export function writePartialIndex(
  path: string,
  index: { readonly bytes: Buffer; readonly mtimeMs: number },
  table: IndexTable,
  hashBytes: number,
  changed: readonly Buffer[],
): void {
  const { bytes } = index;
  const nameAt = (i: number) => bytes.subarray(table.nameStarts[i]!, table.nameEnds[i]!);
  const lowerBound = (key: Buffer) => {
    let low = 0;
    let high = table.count;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (Buffer.compare(nameAt(middle), key) < 0) low = middle + 1;
      else high = middle;
    }
    return low;
  };
  const startsWith = (i: number, prefix: Buffer) => i < table.count && nameAt(i).subarray(0, prefix.length).equals(prefix);

  const kept = new Set<number>();
  for (const changedPath of changed) {
    // The entry at the path itself, then every entry below it as a directory.
    const at = lowerBound(changedPath);
    if (at < table.count && nameAt(at).equals(changedPath)) kept.add(at);
    const below = Buffer.concat([changedPath, SLASH]);
    for (let i = lowerBound(below); startsWith(i, below); i++) kept.add(i);
    for (let slash = changedPath.indexOf(0x2f); slash !== -1; slash = changedPath.indexOf(0x2f, slash + 1)) {
      const directory = changedPath.subarray(0, slash + 1);
      const first = lowerBound(directory);
      if (startsWith(first, directory)) kept.add(first);
    }
  }

  const entries = [...kept].sort((a, b) => a - b);
  const end = (i: number) => (i + 1 < table.count ? table.offsets[i + 1]! : entriesEnd(table));
  const parts: Buffer[] = [bytes.subarray(0, 12)];
  for (const i of entries) parts.push(bytes.subarray(table.offsets[i]!, end(i)));
  const body = Buffer.concat([...parts, Buffer.alloc(hashBytes)]);
  body.writeUInt32BE(entries.length, 8);
  createHash(hashBytes === 32 ? "sha256" : "sha1")
    .update(body.subarray(0, body.length - hashBytes))
    .digest()
    .copy(body, body.length - hashBytes);
  writeIndexCopy(path, body, index.mtimeMs);
}

const SLASH = Buffer.from("/");

/** Where the last entry ends: its NUL-padded name rounded as readIndexTable steps (extensions, if any, follow). */
function entriesEnd(table: IndexTable): number {
  const last = table.count - 1;
  const offset = table.offsets[last]!;
  return offset + ((table.nameEnds[last]! - offset + 8) & ~7);
}
