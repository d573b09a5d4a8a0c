import { lstatSync, realpathSync } from "node:fs";
import { sep } from "node:path";

/** Whether `child` is `parent` or lies below it (plain string paths; resolve links first where they matter). */
export function isInside(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
}

/** The real path of an existing path, or null when it does not exist. */
export function existingRealPath(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/** Whether anything is at `path` itself (a dangling link counts: never followed). */
export function lexists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
