/**
 * The parts of a package.json that decide what verification runs: the `scripts` a command runs and the keys test
 * runners read their config from. The rest (dependencies above all) is the task's to change. Both sides are
 * bytes; the patched side is the agent's and may be anything.
 */

/**
 * package.json keys a test runner reads its configuration from: jest (`jest`), mocha (`mocha`), ava (`ava`),
 * node-tap (`tap`), nyc (`nyc`), c8 (`c8`) and jest-junit (`jest-junit`, where a JUnit report is written). vitest,
 * playwright and cypress read only their own config files.
 */
export const RUNNER_KEYS: readonly string[] = ["jest", "mocha", "ava", "tap", "nyc", "c8", "jest-junit"];

type Json = Record<string, unknown>;

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
 * The names among `names` whose script entries differ between the base and the patch. Absent on one side and
 * present on the other counts; a deleted package.json (`patched` null) changes them all. When either side is not
 * JSON, no entry can be compared: all of them count, unless the bytes are the same.
 */
export function scriptsChanged(base: Buffer, patched: Buffer | null, names: readonly string[]): string[] {
  if (patched === null) return [...names];
  if (base.equals(patched)) return [];
  const before = parsePackageJson(base);
  const after = parsePackageJson(patched);
  if (before === null || after === null) return [...names];
  const entry = (pkg: Json, name: string) => {
    const scripts = scriptsOf(pkg);
    return scripts === null ? undefined : ownValue(scripts, name);
  };
  return names.filter((name) => !same(entry(before, name), entry(after, name)));
}

/** The RUNNER_KEYS whose values differ (key order inside them aside); every one when either side is not JSON and the bytes differ. */
export function runnerKeysChanged(base: Buffer, patched: Buffer | null): string[] {
  if (patched !== null && base.equals(patched)) return [];
  const before = parsePackageJson(base);
  const after = patched === null ? null : parsePackageJson(patched);
  if (before === null || after === null) {
    // Deleted, or unreadable on one side: what the runners read changed wherever either side had the key.
    const had = (pkg: Json | null) => RUNNER_KEYS.filter((key) => pkg === null || ownValue(pkg, key) !== undefined);
    return patched === null ? had(before) : RUNNER_KEYS.filter((key) => had(before).includes(key) || had(after).includes(key));
  }
  return RUNNER_KEYS.filter((key) => !same(ownValue(before, key), ownValue(after, key)));
}

/**
 * The patched package.json with `scripts` and the RUNNER_KEYS put back to the base's (removed where the base has
 * none), and every other field as the patch has it, so a dependency the task added still installs. The patched
 * file's indentation (two or four spaces, a tab…), line endings, byte-order mark and final newline are kept; when
 * nothing held differs, the patched bytes are returned as they are.
 *
 * When either side is not JSON (or not an object), the held fields cannot be separated from the rest: the base's
 * bytes are returned, so that verification held to the base runs the base's scripts, never the agent's.
 */
export function holdPackageJson(base: Buffer, patched: Buffer): Buffer {
  const before = parsePackageJson(base);
  const after = parsePackageJson(patched);
  if (before === null || after === null) return base;
  const held = ["scripts", ...RUNNER_KEYS];
  if (held.every((key) => same(ownValue(before, key), ownValue(after, key)))) return patched;
  try {
    const entries: [string, unknown][] = [];
    for (const key of Object.keys(after)) {
      if (!held.includes(key)) entries.push([key, after[key]]);
      else if (ownValue(before, key) !== undefined) entries.push([key, before[key]]);
    }
    for (const key of held) {
      if (ownValue(after, key) === undefined && ownValue(before, key) !== undefined) entries.push([key, before[key]]);
    }
    const text = patched.toString("utf8");
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
