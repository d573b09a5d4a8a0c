import { splitNul } from "../process/git.js";
import { printablePath } from "../patch/rules/path-names.js";

/**
 * What the setup and verify commands did to the tested tree, read from two `ls-files -s -z` listings: the index
 * the commands were given and the checkout staged again after them. A file of the tested tree (the base's or
 * the patch's) changed or deleted, and a new file no ignore rule covers (neither `.gitignore` nor the tool caches,
 * src/patch/tool-caches.ts), are different stories: the first rewrote what was tested, the second left output
 * beside it.
 */
export interface TreeChanges {
  /** Files of the tested tree whose content or mode changed. */
  readonly modified: PathSample;
  /** Files of the tested tree that are gone. */
  readonly deleted: PathSample;
  /** Files that were not in the tested tree and are now, untracked and not ignored. */
  readonly added: PathSample;
}

/** How many, and the first few names (printable, in git's order). */
export interface PathSample {
  readonly count: number;
  readonly names: readonly string[];
}

/** Names kept per kind of change. */
export const NAMED_PATHS = 10;

export function compareListings(before: Buffer, after: Buffer): TreeChanges {
  const was = entries(before);
  const now = entries(after);
  const modified: Buffer[] = [];
  const deleted: Buffer[] = [];
  const added: Buffer[] = [];
  for (const [key, entry] of was) {
    const then = now.get(key);
    if (then === undefined) deleted.push(entry.path);
    else if (then.stat !== entry.stat) modified.push(entry.path);
  }
  for (const [key, entry] of now) if (!was.has(key)) added.push(entry.path);
  return { modified: sample(modified), deleted: sample(deleted), added: sample(added) };
}

/** Path (latin1, one character per byte) to its `mode oid stage` and its bytes. */
function entries(listing: Buffer): Map<string, { readonly stat: string; readonly path: Buffer }> {
  const map = new Map<string, { stat: string; path: Buffer }>();
  for (const record of splitNul(listing)) {
    const tab = record.indexOf(0x09);
    const path = record.subarray(tab + 1);
    map.set(path.toString("latin1"), { stat: record.subarray(0, tab).toString("latin1"), path });
  }
  return map;
}

function sample(paths: readonly Buffer[]): PathSample {
  return { count: paths.length, names: paths.slice(0, NAMED_PATHS).map((path) => printablePath(path)) };
}

/**
 * The verdict's words for what the commands did (verification_changed_patch), and the fix that goes with it:
 * a rewritten file of the tested tree is a command that must not run in verification; new files are output that
 * belongs in `.gitignore`.
 */
export function treeChangesText(changes: TreeChanges | null): { readonly message: string; readonly hint: string } {
  const readOnly = "make verification read-only (no formatters or generators in --verify)";
  if (changes === null || changes.modified.count + changes.deleted.count + changes.added.count === 0)
    return {
      message: "the verification commands changed the tested tree (more than handoff reads): the tested tree is not the patch",
      hint: readOnly,
    };
  const rewrote = [
    changes.modified.count > 0 ? `changed ${counted(changes.modified, "tracked file")}` : null,
    changes.deleted.count > 0 ? `deleted ${counted(changes.deleted, "tracked file")}` : null,
  ].filter((part) => part !== null);
  const wrote = changes.added.count > 0 ? `wrote ${counted(changes.added, "new untracked file")} that no .gitignore covers` : null;
  const message = `the verification commands ${[...rewrote, wrote].filter((part) => part !== null).join(", ")}: the tested tree is not the patch`;
  if (rewrote.length > 0) return { message, hint: readOnly };
  return {
    message,
    hint: "if the commands' output belongs beside the code, list it in the repository's .gitignore; otherwise have them write it elsewhere (bytecode and test-runner caches are ignored already)",
  };
}

/** "2 tracked files (a.ts, b.ts)", "12 new untracked files (a, …, j, and 2 more)". */
function counted(sample: PathSample, noun: string): string {
  const more = sample.count > sample.names.length ? `, and ${sample.count - sample.names.length} more` : "";
  return `${sample.count} ${noun}${sample.count === 1 ? "" : "s"} (${sample.names.join(", ")}${more})`;
}
