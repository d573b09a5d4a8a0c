import { shownLine } from "./plain-text.js";

/**
 * What a reader is shown of a command's output: a window of its lines, as plain text (no colours, no terminal
 * controls), each line cut at `lineChars`.
 */
export interface OutputExcerpt {
  readonly lines: readonly string[];
  /** Where the window is: at the first report of a failure the output names, or its end when it names none. */
  readonly from: "failure" | "end";
  /** Lines of the output left out before and after the window. */
  readonly before: number;
  readonly after: number;
}

export interface ExcerptLimits {
  readonly lines: number;
  readonly lineChars: number;
  /** Bytes of the window's lines together (UTF-8, newlines counted). */
  readonly bytes: number;
}

/** What a report (`handoff show`, the JUnit report, the HTML page) shows of a failing command's output. */
export const REPORT_EXCERPT: ExcerptLimits = { lines: 40, lineChars: 300, bytes: 8 * 1024 };

/**
 * The start of a runner's own report of its failures: the failing tests named, with their assertion. The first one in
 * the output begins the window.
 */
const FAILURE_REPORT = [
  /^\s*\d+ failing$/, // mocha: `2 failing`, then `1) suite` / `test:` and the assertion
  /^⎯+ Failed Tests \d+ ⎯+$/, // vitest, before its `FAIL  file > suite > test` blocks
  /^✖ failing tests:$/, // node:test, spec reporter
  /^\s*● (?!Console$)/, // jest, one failing test (or `Test suite failed to run`), below its `FAIL file` line
  /^\s*FAIL\s+\S.* > /, // vitest `FAIL  file > suite > test`
  /^\s*not ok \d+(?!.*#\s*(TODO|SKIP))/i, // TAP (node:test, tap…), a failing test; a todo or skipped one is not
  /^=+ (FAILURES|ERRORS) =+$/, // pytest
  /^--- FAIL: /, // go test
  /^---- .+ stdout ----$/, // cargo test
  /^failures:$/, // cargo test
];

/** A failure named without the runner's report around it: a test marked failed, an error, an assertion. */
const FAILURE_LINE = [
  /^\s*(×|✖|✗)\s/, // vitest, node:test, others, one failed test
  /^FAILED\s/, // pytest's short summary
  /^\s*\d+\) \S/, // mocha, a failed test in the list
  /\bAssertionError\b/,
  /^\s*(Uncaught )?([A-Z]\w*)?Error\b/,
  /\bFAIL(ED)?\b/,
];

function firstMatch(lines: readonly string[], patterns: readonly RegExp[]): number {
  return lines.findIndex((line) => patterns.some((pattern) => pattern.test(line)));
}

/**
 * The one choice of what a reader sees of a failing command's output (every report and the repair feedback use it):
 * from the first place the output names a failure (a runner's failure report, else a failed test or an error line),
 * else its end. The window fills its limits: when the failure is near the end, lines before it are shown too.
 */
export function failureExcerpt(output: string, limits: ExcerptLimits): OutputExcerpt {
  const lines = splitOutput(output);
  const report = firstMatch(lines, FAILURE_REPORT);
  const start = report >= 0 ? report : firstMatch(lines, FAILURE_LINE);
  return start >= 0 ? window(lines, start, "failure", limits) : window(lines, lines.length, "end", limits);
}

/** The end of an output, as failureExcerpt shows it when the output names no failure (a command that passed). */
export function tailExcerpt(output: string, limits: ExcerptLimits): OutputExcerpt {
  const lines = splitOutput(output);
  return window(lines, lines.length, "end", limits);
}

function splitOutput(output: string): string[] {
  const lines = output.split("\n").map(shownLine);
  while (lines.length > 0 && lines[lines.length - 1]!.trim() === "") lines.pop();
  return lines;
}

/** Lines from `start` on while the limits allow, then, room left, lines before `start`. */
function window(all: readonly string[], start: number, from: OutputExcerpt["from"], limits: ExcerptLimits): OutputExcerpt {
  const cut = (line: string) => (line.length > limits.lineChars ? `${line.slice(0, limits.lineChars)}…` : line);
  let bytes = 0;
  const fits = (line: string, count: number) => count < limits.lines && bytes + Buffer.byteLength(line) + 1 <= limits.bytes;
  const after: string[] = [];
  let end = start;
  while (end < all.length && fits(cut(all[end]!), after.length)) {
    bytes += Buffer.byteLength(cut(all[end]!)) + 1;
    after.push(cut(all[end]!));
    end++;
  }
  const before: string[] = [];
  let first = start;
  // Room before only when the window reached the end: a window cut short shows what follows the failure first.
  while (end === all.length && first > 0 && fits(cut(all[first - 1]!), after.length + before.length)) {
    bytes += Buffer.byteLength(cut(all[first - 1]!)) + 1;
    before.unshift(cut(all[first - 1]!));
    first--;
  }
  return { lines: [...before, ...after], from, before: first, after: all.length - end };
}

/** How a report introduces an excerpt: "" when it is the whole output, else which part of it this is. */
export function excerptExtent(excerpt: OutputExcerpt): string {
  if (excerpt.before === 0 && excerpt.after === 0) return "";
  const shown = excerpt.lines.length;
  if (excerpt.from === "end") return `its last ${shown} lines`;
  return `${shown} lines at the first failure it names, ${excerpt.before} before and ${excerpt.after} after left out`;
}
