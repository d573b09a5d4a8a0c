import { realpathSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { isInside } from "../lib/paths.js";
import { listingPaths } from "../patch/staging.js";
import { type JunitEvidence, readJunitEvidence } from "./junit.js";

/**
 * Reads the JUnit files a verify command wrote, then removes those the checkout does not track (`tracked`: its
 * `ls-files -s -z`): a report is output, not part of the tested tree, and left there it would read as a change the
 * commands made to it. A file is removed only inside the checkout, never through a symbolic link to elsewhere. Null
 * when no `--junit` path was given.
 */
export function takeJunitFiles(checkoutDir: string, paths: readonly string[], tracked: Buffer): JunitEvidence | null {
  if (paths.length === 0) return null;
  const evidence = readJunitEvidence(checkoutDir, paths);
  const trackedPaths = new Set(listingPaths(tracked).map((path) => path.toString("utf8")));
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
