// A setting's field in `RunOptions`, `ResolvedOptions` or request.json is a dotted path (`limits.maxFileBytes`).

/** The value at `path`, or undefined when a step is missing. */
export function getPath(object: unknown, path: string): unknown {
  let at: unknown = object;
  for (const step of path.split(".")) {
    if (typeof at !== "object" || at === null) return undefined;
    at = (at as Record<string, unknown>)[step];
  }
  return at;
}

/** Sets `path`, making the objects on the way. */
export function setPath(object: Record<string, unknown>, path: string, value: unknown): void {
  const steps = path.split(".");
  let at = object;
  for (const step of steps.slice(0, -1)) {
    if (typeof at[step] !== "object" || at[step] === null) at[step] = {};
    at = at[step] as Record<string, unknown>;
  }
  at[steps.at(-1)!] = value;
}
