import { isUtf8 } from "node:buffer";
import { lstatSync } from "node:fs";
import type { BaseTree } from "../clone/base-tree.js";
import { type GitTarget, git, splitNul } from "../process/git.js";
import { LITERAL } from "./staging.js";
import { isUnderIgnored } from "./workspace-scan.js";

/**
 * The git side of an extraction restricted to the paths the agent changed (an overlay's upper dir,
 * upper-changes.ts): the same answers as for the whole work tree, with git looking at those paths alone.
 */

/** Pathspec bytes per `ls-files` call: its pathspecs go on the command line, far below the kernel's argument limit. */
const ARGUMENT_BYTES = 256 * 1024;

/**
 * git matches every index entry against every pathspec: past a few hundred paths the whole walk costs less. On
 * 80,000 files, against the whole walk of the same view: 20 changed files 0.26×, 200 0.32×, 500 0.45×, 1,000 0.75×,
 * 4,000 1.8×.
 */
export const MAX_CHANGED_PATHS = 500;

/**
 * Whether extraction may be restricted to these paths: few enough, and each can go on git's command line as it is
 * (arguments are strings, which reach git as UTF-8, so a name that is not UTF-8 would name another file).
 * Otherwise the run is extracted as a whole.
 */
export function restrictable(paths: readonly Buffer[]): boolean {
  // The diff takes them on its command line at once (git diff has no pathspec file).
  const bytes = paths.reduce((sum, path) => sum + path.length + LITERAL.length + 1, 0);
  return paths.length <= MAX_CHANGED_PATHS && bytes <= ARGUMENT_BYTES && paths.every((path) => isUtf8(path));
}

/**
 * `ls-files --others --ignored --exclude-standard --directory` limited to `paths`, in the order git gives the whole
 * tree's (by bytes). With `--directory`, git fails ("directory entry not superset of prefix") when the pathspecs'
 * common prefix lies inside an ignored directory it shows whole: `.git`, which git never lists, keeps that prefix empty.
 */
export async function listIgnoredAmong(target: GitTarget, paths: readonly Buffer[], signal?: AbortSignal): Promise<Buffer[]> {
  const listed = new Map<string, Buffer>();
  for (const chunk of chunks(paths)) {
    const pathspecs = [":(literal).git", ...chunk.map((path) => `:(literal)${path.toString("utf8")}`)];
    const out = await git(target, ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory", "--", ...pathspecs], {
      signal,
    });
    for (const path of splitNul(out.stdout)) listed.set(path.toString("latin1"), path);
  }
  return [...listed.values()].sort(Buffer.compare);
}

/**
 * The changed paths `git add` may be given: none that is ignored (git fails on a pathspec naming an ignored file),
 * at or below a path staging leaves out, or gone from the work tree and unknown to the base index (a deleted
 * untracked file: git fails on a pathspec that matches nothing). Those the base tracks as files, and that are no
 * directory now, are `force`d: git stages a tracked file whatever ignores it, but fails a pathspec that leads into
 * an ignored directory (a committed file under `__pycache__/`, or under a gitignored `build/`).
 */
export function pathsToStage(
  changed: readonly Buffer[],
  context: {
    readonly ignored: ReadonlySet<string>;
    readonly exclude: readonly Buffer[];
    readonly base: BaseTree;
    readonly workTree: string;
  },
): { readonly paths: Buffer[]; readonly force: Buffer[] } {
  // Both sets in `ls-files --directory` form (a directory ends with "/"): a path is at or below an entry when it
  // is, with a "/" added, below one, or it is one as it is (an ignored file).
  const excluded = new Set(context.exclude.map((path) => `${path.toString("latin1")}/`));
  const root = Buffer.from(`${context.workTree}/`);
  const paths: Buffer[] = [];
  const force: Buffer[] = [];
  for (const path of changed) {
    const asDirectory = Buffer.concat([path, SLASH]);
    if (isUnderIgnored(path, context.ignored) || isUnderIgnored(asDirectory, context.ignored)) continue;
    if (isUnderIgnored(asDirectory, excluded)) continue;
    const type = typeAt(Buffer.concat([root, path]));
    if (context.base.tracks(path) && !context.base.hasDirectory(path) && type !== "directory") force.push(path);
    else if (type !== "missing" || context.base.tracks(path)) paths.push(path);
  }
  return { paths, force };
}

const SLASH = Buffer.from("/");

function typeAt(path: Buffer): "directory" | "other" | "missing" {
  try {
    return lstatSync(path).isDirectory() ? "directory" : "other";
  } catch {
    return "missing";
  }
}

function* chunks(paths: readonly Buffer[]): Generator<Buffer[]> {
  let chunk: Buffer[] = [];
  let bytes = 0;
  for (const path of paths) {
    if (chunk.length > 0 && bytes + path.length > ARGUMENT_BYTES) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(path);
    bytes += path.length + LITERAL.length + 1;
  }
  if (chunk.length > 0) yield chunk;
}
