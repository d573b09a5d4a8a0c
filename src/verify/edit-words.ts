import type { ChangedInput } from "./test-edits.js";

/**
 * What a patch did to a verification input, in a reviewer's words (issue 26 item 4): "skips `splat %c` (it.skip)",
 * "deletes test/splat.test.js", "adds .npmrc, which makes npm run scripts with /bin/true". Read from the lines the
 * patch adds and removes in that file; never from the agent's tree. A phrase, lower case, without a final stop.
 */
export function whatItDid(input: ChangedInput, lines: FileLines | null): string {
  const path = input.path;
  if (input.change === "deleted") return `deletes ${path}`;
  const name = path.slice(path.lastIndexOf("/") + 1);
  if (name === ".npmrc" || name === "npmrc") {
    const effect = npmrcEffect(lines?.added ?? []);
    return `${input.change === "added" ? "adds" : "changes"} ${path}${effect ? `, which ${effect}` : ""}`;
  }
  if (input.entries?.length) return `changes ${path}'s ${input.entries.join(", ")}${manifestEffect(input.entries)}`;
  if ((input.reason === "test_file" || input.reason === "named_by_command" || input.reason === "protected") && lines) {
    const skipped = skippedTests(lines.added);
    if (skipped.length > 0) return `skips ${listed(skipped)} in ${path}`;
    const removed = testNames(lines.removed).filter((test) => !testNames(lines.added).includes(test));
    if (removed.length > 0) return `removes ${listed(removed)} from ${path}`;
  }
  if (input.change === "added") return input.reason === "test_file" ? `adds the test file ${path}` : `adds ${path}, ${input.why}`;
  return `changes ${path}, ${input.why}`;
}

/** The lines a patch adds to and removes from one file. */
export interface FileLines {
  readonly added: readonly string[];
  readonly removed: readonly string[];
}

/** Each file's added and removed lines in a patch in git's format (text diffs only; a binary diff has none). */
export function linesByFile(patch: Buffer, wanted: ReadonlySet<string>): Map<string, FileLines> {
  const files = new Map<string, { added: string[]; removed: string[] }>();
  let current: { added: string[]; removed: string[] } | null = null;
  for (const line of patch.toString("utf8").split("\n")) {
    if (line.startsWith("diff --git ")) {
      current = null;
      continue;
    }
    if (line.startsWith("+++ ") || line.startsWith("--- ")) {
      const path = line.slice(4).replace(/^[ab]\//u, "");
      if (path !== "/dev/null" && wanted.has(path)) {
        current = files.get(path) ?? { added: [], removed: [] };
        files.set(path, current);
      }
      continue;
    }
    if (current === null) continue;
    if (line.startsWith("+")) current.added.push(line.slice(1));
    else if (line.startsWith("-")) current.removed.push(line.slice(1));
  }
  return files;
}

const SKIP_MARKERS: readonly [RegExp, string][] = [
  [/\b(?:it|test|describe|suite|context)\.skip\s*\(\s*(['"`])(.*?)\1/u, ".skip"],
  [/\b(?:it|test|describe)\.todo\s*\(\s*(['"`])(.*?)\1/u, ".todo"],
  [/\bx(?:it|describe|test)\s*\(\s*(['"`])(.*?)\1/u, "x"],
  [/\bt\.skip\s*\(\s*(['"`])(.*?)\1/u, "t.skip"],
  [/\{\s*skip\s*:\s*true\s*\}/u, "{ skip: true }"],
  [/@pytest\.mark\.(?:skip|xfail)\b/u, "@pytest.mark.skip"],
  [/@unittest\.skip\b/u, "@unittest.skip"],
  [/#\[ignore\]/u, "#[ignore]"],
  [/\bt\.Skip(?:Now|f)?\(/u, "t.Skip"],
];

/** "`splat %c` (it.skip)", for each added line that skips a test. */
function skippedTests(added: readonly string[]): string[] {
  const found: string[] = [];
  for (const line of added) {
    for (const [pattern, marker] of SKIP_MARKERS) {
      const match = pattern.exec(line);
      if (!match) continue;
      const keyword = /\b(it|test|describe|suite|context)\.(skip|todo)/u.exec(line)?.[0] ?? marker;
      found.push(match[2] !== undefined ? `\`${match[2]}\` (${keyword})` : `a test (${marker})`);
      break;
    }
  }
  return found;
}

/** The names of the tests some lines define: `it('x'`, `test("x"`, `def test_x`, and Rust's `fn x` just after a `#[test]` line. */
function testNames(lines: readonly string[]): string[] {
  const names: string[] = [];
  let afterRustTest = false;
  for (const line of lines) {
    const js = /\b(?:it|test)\s*\(\s*(['"`])(.*?)\1/u.exec(line);
    if (js) names.push(`\`${js[2]}\``);
    const py = /^\s*def\s+(test_\w+)/u.exec(line);
    if (py) names.push(`\`${py[1]}\``);
    const rust = afterRustTest ? /^\s*(?:pub\s+)?(?:async\s+)?fn\s+(\w+)/u.exec(line) : null;
    if (rust) names.push(`\`${rust[1]}\``);
    // Other attributes (`#[ignore]`, `#[should_panic]`) may stand between `#[test]` and its fn.
    afterRustTest = /^\s*#\[(?:\w+::)*test\]/u.test(line) || (afterRustTest && /^\s*#\[/u.test(line));
  }
  return names;
}

function listed(items: readonly string[]): string {
  const unique = [...new Set(items)];
  const shown = unique.slice(0, 3).join(", ");
  return unique.length > 3 ? `${shown} and ${unique.length - 3} more` : shown;
}

/** What an added .npmrc line does to `npm test`. */
function npmrcEffect(added: readonly string[]): string | null {
  for (const line of added) {
    const match = /^\s*([\w-]+)\s*=\s*(.*?)\s*$/u.exec(line);
    if (!match) continue;
    const [key, value] = [match[1]!.toLowerCase(), match[2]!];
    if (key === "script-shell") return `makes npm run scripts with ${value}`;
    if (key === "node-options") return `makes every node process npm starts run with ${value}`;
    if (key === "ignore-scripts") return "makes npm skip scripts";
  }
  return added.length > 0 ? "changes how npm runs the scripts" : null;
}

/** Why a manifest field matters to a reviewer. */
function manifestEffect(entries: readonly string[]): string {
  if (entries.includes("name") && (entries.includes("exports") || entries.includes("main")))
    return " (the package then resolves its own name before node_modules)";
  if (entries.includes("imports")) return " (what `#` imports resolve to)";
  if (entries.includes("main") || entries.includes("exports")) return " (what loading the package by its name gives)";
  if (entries.some((entry) => entry.startsWith("scripts."))) return " (what the scripts run)";
  return "";
}
