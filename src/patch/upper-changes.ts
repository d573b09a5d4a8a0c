import { type Stats, lstatSync, readdirSync } from "node:fs";

/**
 * What the agent changed in an overlay workspace, read from the overlay's upper dir (src/environment/overlay.ts):
 * the kernel writes there every file the agent created, modified, chmod'ed or deleted, so a walk of it alone costs
 * O(changed files) where a walk of the work tree costs O(all files). The agent cannot hide a change from it: a
 * write through the merged view always lands in upper (the lower tree is the read-only environment).
 *
 * Each path, relative to the work tree as raw bytes, is a root for the scan and a literal pathspec for git:
 *   - a file, symbolic link or special file in upper: written, created or replaced by the agent;
 *   - a whiteout (a character device 0/0): deleted;
 *   - a directory in upper that lower has no directory at: new (an agent's mkdir, a renamed directory, which
 *     redirect_dir=off copies up whole, or a directory that replaced a file), all its content in upper;
 *   - a directory lower has too: walked, and each name lower has there that the merged view lacks is deleted (a
 *     whiteout says so too, but an opaque directory, `rm -rf d; mkdir d`, hides lower's names without one).
 * Directories are compared by names only (readdir of lower and merged for the touched directories): no xattr.
 * handoff's own gitfile, the top-level `.git`, is left out.
 *
 * null, for the caller to walk the whole tree instead, when anything is not as expected: an entry that cannot be
 * read, a name in the merged view that neither layer has (a redirect or a layer changed under the mount), or more
 * than `maxEntries` entries in upper.
 */
export interface UpperChanges {
  readonly paths: readonly Buffer[];
  /** Entries read in upper (files, whiteouts and directories): the work this took. */
  readonly entries: number;
}

const SLASH = Buffer.from("/");

export function readUpperChanges(upperDir: string, mergedDir: string, lowerDir: string, maxEntries: number): UpperChanges | null {
  try {
    return walkUpper(Buffer.from(upperDir), Buffer.from(mergedDir), Buffer.from(lowerDir), maxEntries);
  } catch {
    return null; // unreadable, or changed under the walk
  }
}

function walkUpper(upper: Buffer, merged: Buffer, lower: Buffer, maxEntries: number): UpperChanges | null {
  const paths: Buffer[] = [];
  let entries = 0;
  // Directories both layers have, relative ("" the top): the agent changed something inside each.
  const stack: Buffer[] = [Buffer.alloc(0)];
  while (stack.length > 0) {
    const rel = stack.pop()!;
    const top = rel.length === 0;
    const at = (root: Buffer) => (top ? root : Buffer.concat([root, SLASH, rel]));
    const below = (name: string) => (top ? Buffer.from(name, "latin1") : Buffer.concat([rel, SLASH, Buffer.from(name, "latin1")]));
    const lowerNames = new Set(names(at(lower)));
    const mergedNames = new Set(names(at(merged)));
    const upperLive = new Set<string>();
    const deleted = new Set<string>();
    for (const name of names(at(upper))) {
      if (top && name === ".git") continue; // handoff's gitfile, written after the mount
      if (++entries > maxEntries) return null;
      const path = below(name);
      const stats = lstatSync(Buffer.concat([upper, SLASH, path]));
      if (isWhiteout(stats)) {
        if (mergedNames.has(name)) return null; // a whiteout that hides nothing
        deleted.add(name);
        paths.push(path);
        continue;
      }
      upperLive.add(name);
      if (!stats.isDirectory()) paths.push(path);
      else if (lowerNames.has(name) && lstatSync(Buffer.concat([lower, SLASH, path])).isDirectory()) stack.push(path);
      else if (mergedShowsOnly(Buffer.concat([merged, SLASH, path]), Buffer.concat([upper, SLASH, path]))) paths.push(path);
      else return null; // a new directory whose view holds more than upper: a redirect handoff does not follow
    }
    for (const name of lowerNames) {
      if (top && name === ".git") continue;
      if (!mergedNames.has(name) && !deleted.has(name)) paths.push(below(name)); // hidden by an opaque directory
    }
    for (const name of mergedNames) {
      if (!(top && name === ".git") && !lowerNames.has(name) && !upperLive.has(name)) return null; // from neither layer
    }
  }
  return { paths, entries };
}

/** overlayfs marks a deleted lower entry with a character device numbered 0/0 in upper. */
function isWhiteout(stats: Stats): boolean {
  return stats.isCharacterDevice() && stats.rdev === 0;
}

/** The merged view of a directory new in upper shows nothing upper does not hold (no lower dir merged into it). */
function mergedShowsOnly(mergedDir: Buffer, upperDir: Buffer): boolean {
  const inUpper = new Set(names(upperDir));
  return names(mergedDir).every((name) => inUpper.has(name));
}

/** A directory's names as latin1 strings (one character per byte: any name survives the round trip). */
function names(dir: Buffer): string[] {
  return readdirSync(dir, { encoding: "latin1" });
}
