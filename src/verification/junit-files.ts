import { realpathSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { splitNul } from "../git.js";
import { isInside } from "../paths.js";

/**
 * Reads the JUnit files a verify command wrote, then removes those the checkout does not track: a report is output,
 * not part of the tested tree, and left there it would read as a change the commands made to it. A file is removed
 * only inside the checkout, never through a symbolic link to elsewhere. Null when no `--junit` path was given.
 */
export function takeJunitFiles<T>(checkoutDir: string, paths: readonly string[], tracked: Buffer | null, read: (dir: string, paths: readonly string[]) => T): T | null {
  if (paths.length === 0) return null;
  const evidence = read(checkoutDir, paths);
  const trackedPaths = new Set(tracked ? splitNul(tracked).map((record) => record.subarray(record.indexOf(9) + 1).toString("utf8")) : []);
  const root = realpathSync(checkoutDir);
  for (const path of paths) {
    if (trackedPaths.has(path)) continue;
    let parent: string;
    try {
      parent = realpathSync(dirname(join(checkoutDir, path)));
    } catch {
      continue;
    }
    if (isInside(parent, root)) rmSync(join(parent, basename(path)), { force: true, recursive: true });
  }
  return evidence;
}
