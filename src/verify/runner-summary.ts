import { shownLine } from "../lib/plain-text.js";
/**
 * The closing summary a test runner prints (docs/verification.md, "Runner summaries"), read from a command's captured
 * output (stdout and stderr as one stream, as test.log keeps it): how many tests passed, failed, were skipped and left
 * todo. Colour codes are removed first; lines are split on `\n` only; lines of other output (stderr, a linter run
 * before the tests) between the runner's lines are passed over. Of each runner the last summary counts; go packages
 * and cargo test binaries are summed, each prints its own.
 */

export const RUNNERS = ["tap-protocol", "node-test", "mocha", "jest", "vitest", "tap", "pytest", "go", "cargo"] as const;
export type RunnerName = (typeof RUNNERS)[number];

/** A type, not an interface, so that it fits the zod record in result.json. */
export type RunnerSummary = {
  readonly runner: RunnerName;
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
  readonly todo: number;
};

type Counts = Omit<RunnerSummary, "runner">;
const ZERO: Counts = { passed: 0, failed: 0, skipped: 0, todo: 0 };

/** The output as lines a terminal shows (src/lib/plain-text.ts): no colour codes, a carriage-return redraw's end. */
export function plainLines(output: string): string[] {
  return output.split("\n").map(shownLine);
}

/** `2 passed, 1 failed` or `2 passed | 1 failed`: each count by its word (the first word after the number). */
function countsByWord(list: string, separator: RegExp): Map<string, number> | null {
  const counts = new Map<string, number>();
  for (const item of list.split(separator)) {
    const match = /^\s*(\d+) ([a-z]+)/u.exec(item);
    if (!match) return null;
    counts.set(match[2]!, (counts.get(match[2]!) ?? 0) + Number(match[1]));
  }
  return counts;
}

const get = (counts: ReadonlyMap<string, number>, ...words: string[]) => words.reduce((sum, word) => sum + (counts.get(word) ?? 0), 0);

function lastMatch(lines: readonly string[], pattern: RegExp): RegExpExecArray | null {
  for (let i = lines.length - 1; i >= 0; i -= 1) {
    const match = pattern.exec(lines[i]!);
    if (match) return match;
  }
  return null;
}

/** jest: `Tests:       1 failed, 1 skipped, 1 todo, 2 passed, 5 total`. */
function jest(lines: readonly string[]): Counts | null {
  const match = lastMatch(lines, /^Tests:\s+(\d+ [a-z]+(?:, \d+ [a-z]+)*)\s*$/u);
  const counts = match && countsByWord(match[1]!, /, /u);
  if (!counts) return null;
  return { passed: get(counts, "passed"), failed: get(counts, "failed"), skipped: get(counts, "skipped"), todo: get(counts, "todo") };
}

/** vitest: ` Tests  1 failed | 2 passed | 1 skipped | 1 todo (5)`. */
function vitest(lines: readonly string[]): Counts | null {
  const match = lastMatch(lines, /^\s*Tests\s{2,}(\d+ [a-z]+(?: \| \d+ [a-z]+)*)\s+\(\d+\)\s*$/u);
  const counts = match && countsByWord(match[1]!, / \| /u);
  if (!counts) return null;
  return { passed: get(counts, "passed"), failed: get(counts, "failed"), skipped: get(counts, "skipped"), todo: get(counts, "todo") };
}

/** mocha: `  2 passing (70ms)`, then `  2 pending` and `  1 failing` when there are any (mocha has no todo). */
function mocha(lines: readonly string[]): Counts | null {
  for (let i = lines.length - 1; i >= 0; i -= 1) {
    const passing = /^\s*(\d+) passing \(\d+(?:\.\d+)?(?:ms|s|m)\)\s*$/u.exec(lines[i]!);
    if (!passing) continue;
    const counts = { ...ZERO, passed: Number(passing[1]) };
    for (const line of lines.slice(i + 1, i + 3)) {
      const more = /^\s*(\d+) (pending|failing)\s*$/u.exec(line);
      if (!more) break;
      if (more[2] === "pending") counts.skipped = Number(more[1]);
      else counts.failed = Number(more[1]);
    }
    return counts;
  }
  return null;
}

/** node-tap: its TAP output's closing comment `# { total: 5, pass: 2, fail: 1, todo: 1, skip: 1 }`. */
function tap(lines: readonly string[]): Counts | null {
  const match = lastMatch(lines, /^# \{ total: \d+((?:, [a-z]+: \d+)*) \}\s*$/u);
  if (!match) return null;
  const counts = new Map([...match[1]!.matchAll(/([a-z]+): (\d+)/gu)].map((m) => [m[1]!, Number(m[2])] as const));
  return { passed: get(counts, "pass"), failed: get(counts, "fail"), skipped: get(counts, "skip"), todo: get(counts, "todo") };
}

/** node:test's spec reporter: `ℹ tests 5`, `ℹ pass 2`, `ℹ fail 1`, `ℹ cancelled 0`, `ℹ skipped 1`, `ℹ todo 1`. */
function nodeSpec(lines: readonly string[]): Counts | null {
  return trailer(lines, /^ℹ ([a-z_]+) (\d+(?:\.\d+)?)\s*$/u);
}

/**
 * A TAP stream's closing comments, `# tests 5`, `# pass 2`, `# fail 1`, `# skip 1`, `# todo 1` (node:test's TAP
 * reporter also writes `# suites`, `# cancelled` and `# skipped`): the last block of them that has `pass` or `tests`.
 * A block may have up to two other lines inside (stderr interleaved); a word seen twice starts an earlier block.
 */
function trailer(lines: readonly string[], pattern: RegExp): Counts | null {
  let end = lines.length - 1;
  while (end >= 0) {
    if (!pattern.test(lines[end]!)) {
      end -= 1;
      continue;
    }
    const counts = new Map<string, number>();
    let i = end;
    for (let gap = 0; i >= 0 && gap <= 2; i -= 1) {
      const match = pattern.exec(lines[i]!);
      if (!match) gap += 1;
      else if (counts.has(match[1]!)) break;
      else {
        counts.set(match[1]!, Number(match[2]));
        gap = 0;
      }
    }
    if (counts.has("pass") || counts.has("tests")) {
      const passed = get(counts, "pass");
      const failed = counts.has("fail") ? get(counts, "fail", "cancelled") : Math.max(0, get(counts, "tests") - passed);
      return { passed, failed, skipped: get(counts, "skip", "skipped"), todo: get(counts, "todo") };
    }
    end = i;
  }
  return null;
}

const TAP_COMMENT = /^# (tests|suites|pass|fail|cancelled|skip|skipped|todo|duration_ms)\s+(\d+(?:\.\d+)?)\s*$/u;

/** Which TAP producer wrote the trailer: node:test's reporter adds `# suites`, `# cancelled` and `# duration_ms`. */
function tapTrailerRunner(lines: readonly string[]): RunnerName {
  return lines.some((line) => /^# (suites|cancelled|duration_ms) /u.test(line)) ? "node-test" : "tap-protocol";
}

/** A TAP stream without closing comments: its top-level `ok`/`not ok` lines, when it has a top-level plan `1..N`. */
function tapPoints(lines: readonly string[]): Counts | null {
  if (!lines.some((line) => /^1\.\.\d+\s*$/u.test(line))) return null;
  const counts = { ...ZERO };
  for (const line of lines) {
    const point = /^(not )?ok\b[^#]*(?:#\s*(skip|todo)\b)?/iu.exec(line);
    if (!point) continue;
    const directive = point[2]?.toLowerCase();
    if (directive === "skip") counts.skipped += 1;
    else if (directive === "todo") counts.todo += 1;
    else if (point[1]) counts.failed += 1;
    else counts.passed += 1;
  }
  return counts.passed + counts.failed + counts.skipped + counts.todo > 0 ? counts : null;
}

const PYTEST_WORDS = new Set([
  "passed",
  "failed",
  "skipped",
  "deselected",
  "xfailed",
  "xpassed",
  "error",
  "errors",
  "warning",
  "warnings",
  "rerun",
]);

/** pytest: `==== 1 failed, 2 passed, 1 skipped, 1 xfailed, 1 deselected in 0.12s ====`, or the same unframed (`-q`). */
function pytest(lines: readonly string[]): Counts | null {
  for (let i = lines.length - 1; i >= 0; i -= 1) {
    const match = /^(=+ )?(.+?) in \d+(?:\.\d+)?s(?: \([^)]*\))?(?: =+)?\s*$/u.exec(lines[i]!);
    if (!match) continue;
    if (/^no tests ran$/u.test(match[2]!)) return { ...ZERO };
    const counts = countsByWord(match[2]!, /, /u);
    if (!counts || ![...counts.keys()].every((word) => PYTEST_WORDS.has(word))) continue;
    return {
      passed: get(counts, "passed", "xpassed"),
      failed: get(counts, "failed", "error", "errors"),
      skipped: get(counts, "skipped", "xfailed", "deselected"),
      todo: 0,
    };
  }
  return null;
}

/**
 * go test: with `-v` (`=== RUN` lines), every `--- PASS`, `--- FAIL` and `--- SKIP` line, subtests included; without
 * it, only packages are named: `ok pkg` (also `(cached)`) passed, `FAIL pkg` failed, `? pkg [no test files]` and
 * `[no tests to run]` skipped. Summed over every package the output names.
 */
function goTest(lines: readonly string[]): Counts | null {
  const counts = { ...ZERO };
  let packages = 0;
  const verbose = lines.some((line) => /^\s*=== RUN\s/u.test(line));
  for (const line of lines) {
    if (/^ok\s+\S+\s+(?:\(cached\)|\d+(?:\.\d+)?s)/u.test(line)) {
      packages += 1;
      if (!verbose) counts[/\[no tests to run\]/u.test(line) ? "skipped" : "passed"] += 1;
    } else if (/^FAIL\s+\S+\s+(?:\d+(?:\.\d+)?s|\[[a-z ]+ failed\])/u.test(line)) {
      packages += 1;
      if (!verbose) counts.failed += 1;
    } else if (/^\?\s+\S+\s+\[no test files\]\s*$/u.test(line)) {
      packages += 1;
      if (!verbose) counts.skipped += 1;
    } else if (verbose) {
      const result = /^\s*--- (PASS|FAIL|SKIP): /u.exec(line);
      if (result?.[1] === "PASS") counts.passed += 1;
      else if (result?.[1] === "FAIL") counts.failed += 1;
      else if (result?.[1] === "SKIP") counts.skipped += 1;
    }
  }
  return packages > 0 ? counts : null;
}

/** cargo test: `test result: ok. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; …`, summed over binaries. */
function cargo(lines: readonly string[]): Counts | null {
  const counts = { ...ZERO };
  let binaries = 0;
  for (const line of lines) {
    const match = /^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; \d+ measured; (\d+) filtered out/u.exec(line);
    if (!match) continue;
    binaries += 1;
    counts.passed += Number(match[1]);
    counts.failed += Number(match[2]);
    counts.skipped += Number(match[3]) + Number(match[4]);
  }
  return binaries > 0 ? counts : null;
}

/** Every runner's summary in the output, one per runner, in the order of RUNNERS; empty when none is found. */
export function readRunnerSummaries(output: string | Buffer): RunnerSummary[] {
  const lines = plainLines(typeof output === "string" ? output : output.toString("utf8"));
  const found: RunnerSummary[] = [];
  const add = (runner: RunnerName, counts: Counts | null) => {
    if (counts) found.push({ runner, ...counts });
  };
  const tapComments = trailer(lines, TAP_COMMENT);
  add(tapTrailerRunner(lines), tapComments);
  add("node-test", nodeSpec(lines));
  add("mocha", mocha(lines));
  add("jest", jest(lines));
  add("vitest", vitest(lines));
  add("tap", tap(lines));
  add("pytest", pytest(lines));
  add("go", goTest(lines));
  add("cargo", cargo(lines));
  // Plain TAP is read from its points only when nothing else was found: node-tap and node:test write TAP points too.
  if (found.length === 0) add("tap-protocol", tapPoints(lines));
  // node:test with both reporters' trailers in one output: one summary, the TAP reporter's.
  const unique = found.filter((summary, i) => found.findIndex((other) => other.runner === summary.runner) === i);
  return unique.sort((a, b) => RUNNERS.indexOf(a.runner) - RUNNERS.indexOf(b.runner));
}

/** Tests that ran (passed or failed) and tests that did not (skipped or todo). */
export const ranCount = (s: Counts) => s.passed + s.failed;
export const notRunCount = (s: Counts) => s.skipped + s.todo;
