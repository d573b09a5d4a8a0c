import { existsSync, lstatSync, realpathSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";

/** Whether `child` is `parent` or lies below it (plain string paths; resolve links first where they matter). */
export function isInside(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
}

/** The real path of an existing path, or null when it does not exist. */
export function existingRealPath(path: string): string | null {
  try {
    // The C library's realpath, one call: Node's own lstats each component (the toolchain search asks for hundreds).
    return realpathSync.native(path);
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

/** Real path of `path`, or of its nearest existing ancestor joined with the rest. */
export function realPathOrAncestor(path: string): string {
  let current = resolve(path);
  const rest: string[] = [];
  while (!existsSync(current)) {
    rest.unshift(current.slice(dirname(current).length + 1));
    const parent = dirname(current);
    if (parent === current) break;
    current = parent;
  }
  return join(realpathSync(current), ...rest);
}
