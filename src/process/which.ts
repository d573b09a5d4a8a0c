import { accessSync, constants } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";

/** The first executable `name` in the directories of `path` (a PATH string), or null. Relative entries are skipped. */
export function which(name: string, path: string | undefined): string | null {
  for (const dir of (path ?? "").split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // next directory
    }
  }
  return null;
}
