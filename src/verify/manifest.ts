/**
 * A package.json is held to the base whole, except its dependency sections (issue 26 item 1): Node and npm read far
 * more of it than `scripts` (`name` and `exports` make the package resolve to itself before node_modules, `imports`
 * maps `#x`, `type` decides how files load, `config` sets npm variables, runner keys configure jest, mocha, tap…).
 * The dependencies (with the lockfile, which is no input) are the task's to change. Both sides are bytes; the
 * patched side is the agent's and may be anything.
 */

/** The sections a patch may change without the run being held to the base: what gets installed, not how it runs. */
export const DEPENDENCY_KEYS: readonly string[] = ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"];

type Json = Record<string, unknown>;

/** A dependency installed from the repository itself (`file:./fake`, `link:`, `./x`): the patch's own code, not a dependency. */
const LOCAL_SPEC = /^\s*(file:|link:|portal:|\.{0,2}\/|~\/)/u;

/** `dependencies.x` for each dependency the patch points at a local path that the base did not: held like any field. */
function localDependencyChanges(before: Json, after: Json): string[] {
  const changed: string[] = [];
  for (const key of DEPENDENCY_KEYS) {
    const now = ownValue(after, key);
    if (typeof now !== "object" || now === null || Array.isArray(now)) continue;
    const was = ownValue(before, key);
    for (const [name, spec] of Object.entries(now as Json)) {
      const old = typeof was === "object" && was !== null ? ownValue(was as Json, name) : undefined;
      if (typeof spec === "string" && LOCAL_SPEC.test(spec) && spec !== old) changed.push(`${key}.${name}`);
    }
  }
  return changed;
}

/** The patch's dependency section with its local-path entries put back to the base's (removed where the base had none). */
function heldDependencies(before: Json, after: Json, key: string): unknown {
  const now = ownValue(after, key);
  if (typeof now !== "object" || now === null || Array.isArray(now)) return now;
  const was = ownValue(before, key);
  const entries: [string, unknown][] = [];
  for (const [name, spec] of Object.entries(now as Json)) {
    const old = typeof was === "object" && was !== null ? ownValue(was as Json, name) : undefined;
    if (typeof spec === "string" && LOCAL_SPEC.test(spec) && spec !== old) {
      if (old !== undefined) entries.push([name, old]);
    } else {
      entries.push([name, spec]);
    }
  }
  return Object.fromEntries(entries);
}

/** The object a package.json holds, or null when it is not JSON or not an object (npm cannot read it either). */
export function parsePackageJson(bytes: Buffer): Json | null {
  try {
    const value: unknown = JSON.parse(bytes.toString("utf8").replace(/^\uFEFF/u, ""));
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : null;
  } catch {
    return null;
  }
}

/** A package.json's `scripts` object, or null when it has none that is an object. */
function scriptsOf(pkg: Json | null): Json | null {
  const scripts = pkg === null ? undefined : ownValue(pkg, "scripts");
  return typeof scripts === "object" && scripts !== null && !Array.isArray(scripts) ? (scripts as Json) : null;
}

/** The script names a package.json defines (string entries only: npm runs nothing else). */
export function scriptNames(pkg: Json | null): string[] {
  const scripts = scriptsOf(pkg);
  return scripts === null ? [] : Object.keys(scripts).filter((name) => typeof scripts[name] === "string");
}

/** One script's body, or null. */
export function scriptBody(pkg: Json | null, name: string): string | null {
  const scripts = scriptsOf(pkg);
  const body = scripts === null ? undefined : ownValue(scripts, name);
  return typeof body === "string" ? body : null;
}

/**
 * The fields of a package.json that changed other than its dependencies: `scripts.test` for a script, the key for
 * any other field (`name`, `exports`, `imports`, `jest`…), in the patched file's order then the base's. A field
 * absent on one side counts. When either side is not JSON and the bytes differ, nothing can be separated:
 * `["(not JSON)"]`. A deleted package.json is not compared here (it is restored whole).
 */
export function manifestChanges(base: Buffer, patched: Buffer): string[] {
  if (base.equals(patched)) return [];
  const before = parsePackageJson(base);
  const after = parsePackageJson(patched);
  if (before === null || after === null) return ["(not JSON)"];
  const keys = [...new Set([...Object.keys(after), ...Object.keys(before)])].filter((key) => !DEPENDENCY_KEYS.includes(key));
  const changed: string[] = [];
  changed.push(...localDependencyChanges(before, after));
  for (const key of keys) {
    if (same(ownValue(before, key), ownValue(after, key))) continue;
    if (key !== "scripts") {
      changed.push(key);
      continue;
    }
    const [was, now] = [scriptsOf(before), scriptsOf(after)];
    const names = [...new Set([...Object.keys(now ?? {}), ...Object.keys(was ?? {})])];
    const differ = names.filter(
      (name) => !same(was === null ? undefined : ownValue(was, name), now === null ? undefined : ownValue(now, name)),
    );
    changed.push(...(differ.length > 0 ? differ.map((name) => `scripts.${name}`) : ["scripts"]));
  }
  return changed;
}

/**
 * The base's package.json with the patch's dependency sections (added, changed or removed as the patch has them),
 * so a dependency the task added still installs and nothing else of the patch's manifest steers verification. The
 * base file's indentation, line endings, byte-order mark and final newline are kept; when the dependencies did not
 * change, the base's bytes are returned as they are. Either side not JSON (or not an object): the base's bytes.
 */
export function holdManifest(base: Buffer, patched: Buffer): Buffer {
  const before = parsePackageJson(base);
  const after = parsePackageJson(patched);
  if (before === null || after === null) return base;
  const dependencies = (key: string) => heldDependencies(before, after, key);
  if (DEPENDENCY_KEYS.every((key) => same(ownValue(before, key), dependencies(key)))) return base;
  try {
    const entries: [string, unknown][] = [];
    for (const key of Object.keys(before)) {
      if (!DEPENDENCY_KEYS.includes(key)) entries.push([key, before[key]]);
      else if (ownValue(after, key) !== undefined) entries.push([key, dependencies(key)]);
    }
    for (const key of DEPENDENCY_KEYS) {
      if (ownValue(before, key) === undefined && ownValue(after, key) !== undefined) entries.push([key, dependencies(key)]);
    }
    const text = base.toString("utf8");
    // Object.fromEntries defines own properties, so a "__proto__" key stays a key and never becomes a prototype.
    let json = JSON.stringify(Object.fromEntries(entries), null, indentOf(text));
    if (/\r?\n\s*$/u.test(text)) json += "\n";
    if (text.includes("\r\n")) json = json.replace(/\n/gu, "\r\n");
    if (text.startsWith("\uFEFF")) json = `\uFEFF${json}`;
    return Buffer.from(json, "utf8");
  } catch {
    // JSON.stringify can overflow the stack on a value nested thousands deep; the base is always safe to run.
    return base;
  }
}

/** The indentation of the first indented line: a tab, some spaces, or none (a one-line file). */
function indentOf(text: string): string {
  const match = /\n([ \t]+)\S/u.exec(text);
  if (!match) return "";
  return match[1]!.startsWith("\t") ? "\t" : match[1]!.replace(/\t/gu, "");
}

function ownValue(object: Json, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

/** Whether two JSON values (or absences) are equal, object keys in any order. A value too deep to compare differs. */
function same(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return a === b;
  try {
    return canonical(a) === canonical(b);
  } catch {
    return false; // JSON.stringify overflows the stack on a value nested thousands deep
  }
}

/** A JSON value as text with object keys sorted, so that reordering a config's keys is not a change. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    typeof inner === "object" && inner !== null && !Array.isArray(inner)
      ? Object.fromEntries(
          Object.keys(inner)
            .sort()
            .map((k) => [k, (inner as Json)[k]]),
        )
      : inner,
  );
}
