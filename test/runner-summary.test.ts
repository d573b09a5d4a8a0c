import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { type RunnerSummary, plainLines, readRunnerSummaries } from "../src/verify/runner-summary.js";

/**
 * The runners' summaries, read from their real output: fixtures/runner-output/*.txt were recorded by record.sh beside
 * them (each suite: two tests pass, one fails, one is skipped, one todo, and a test writes a line to stderr), stdout
 * and stderr as one stream as handoff captures a command, without colour and with it. The counts asserted are those
 * the runners printed.
 */
const FIXTURES = resolve(import.meta.dirname, "../fixtures/runner-output");
const recorded = (name: string) => readFileSync(join(FIXTURES, `${name}.txt`), "utf8");
const summary = (runner: RunnerSummary["runner"], passed: number, failed: number, skipped: number, todo: number) => ({
  runner,
  passed,
  failed,
  skipped,
  todo,
});

describe("each runner's summary, from its recorded output, without colour and with it", () => {
  test.each([
    // jest: `Tests:       1 failed, 1 skipped, 1 todo, 2 passed, 5 total` (jest writes it to stderr).
    ["jest", summary("jest", 2, 1, 1, 1)],
    // vitest: `Tests  1 failed | 2 passed | 1 skipped | 1 todo (5)`.
    ["vitest", summary("vitest", 2, 1, 1, 1)],
    // mocha has no todo: a test without a body is pending, like it.skip (`2 passing`, `2 pending`, `1 failing`).
    ["mocha", summary("mocha", 2, 1, 2, 0)],
    // node-tap under CI=true writes TAP: `# { total: 5, pass: 2, fail: 1, todo: 1, skip: 1 }`.
    ["tap", summary("tap", 2, 1, 1, 1)],
    ["node-test-spec", summary("node-test", 2, 1, 1, 1)],
    // node:test's TAP reporter writes no colour, even with FORCE_COLOR=1.
    ["node-test-tap", summary("node-test", 2, 1, 1, 1), "no colour"],
    // `npm test` running `node --test` (on Node 20, the reporter of a pipe is TAP's), after npm's own lines.
    ["npm-test", summary("node-test", 2, 1, 1, 1), "no colour"],
    // `1 failed, 2 passed, 1 skipped, 1 deselected, 1 xfailed`: xfailed and deselected did not run.
    ["pytest", summary("pytest", 2, 1, 3, 0)],
    // Three cargo test binaries (unit tests, an integration test, the doc-tests), summed: 2+1+1 passed, 1 ignored.
    ["cargo", summary("cargo", 4, 1, 1, 0)],
  ] as [string, RunnerSummary, "no colour"?][])("%s", (name, expected, colour) => {
    expect(readRunnerSummaries(recorded(`${name}.plain`))).toEqual([expected]);
    const coloured = recorded(`${name}.colour`);
    // The coloured recording really has colour codes, and they do not change what is read.
    if (colour !== "no colour") expect(coloured).toContain("\x1b[");
    expect(readRunnerSummaries(coloured)).toEqual([expected]);
  });

  test("pytest -q: the summary line without its frame (`1 failed, 3 passed, 1 skipped, 1 xfailed in 1.39s`)", () => {
    expect(readRunnerSummaries(recorded("pytest-q.plain"))).toEqual([summary("pytest", 3, 1, 2, 0)]);
  });

  test("go test: packages, summed (one fails, one passes, one has no test files); a cached package passed too", () => {
    expect(readRunnerSummaries(recorded("go.plain"))).toEqual([summary("go", 1, 1, 1, 0)]);
    const cached = recorded("go-cached.plain");
    expect(cached).toMatch(/^ok\s+\S+\s+\(cached\)$/mu);
    expect(readRunnerSummaries(cached)).toEqual([summary("go", 1, 1, 1, 0)]);
  });

  test("go test -v: each test and subtest by its --- PASS, --- FAIL and --- SKIP line, over every package", () => {
    // math: TestAdds, TestSubtracts and its two subtests pass, TestMultiplies fails, TestDivides skips; strs: TestUpper.
    expect(readRunnerSummaries(recorded("go-v.plain"))).toEqual([summary("go", 5, 1, 1, 0)]);
  });

  test("cargo test without --no-fail-fast stops after the first failing binary: only its counts are there", () => {
    expect(readRunnerSummaries(recorded("cargo-stops.plain"))).toEqual([summary("cargo", 2, 1, 1, 0)]);
  });
});

describe("reading a command's whole output", () => {
  test("a line written to stderr by a test, between the runner's lines, is passed over", () => {
    for (const name of ["mocha.plain", "jest.plain", "node-test-tap.plain", "go.plain", "vitest.plain"])
      expect(recorded(name)).toContain("a line on stderr from a test");
    // A stderr line inside the summary block itself (as two streams interleave): node:test's TAP trailer still reads.
    for (const before of ["# pass ", "# fail ", "# todo "]) {
      const lines = recorded("node-test-tap.plain").split("\n");
      lines.splice(
        lines.findIndex((line) => line.startsWith(before)),
        0,
        "(node:123) ExperimentalWarning: something on stderr",
      );
      expect(readRunnerSummaries(lines.join("\n"))).toEqual([summary("node-test", 2, 1, 1, 1)]);
    }
  });

  test("several runners in one command (`npm test` running mocha, then jest): each runner's summary", () => {
    expect(readRunnerSummaries(recorded("mocha.plain") + recorded("jest.colour"))).toEqual([
      summary("mocha", 2, 1, 2, 0),
      summary("jest", 2, 1, 1, 1),
    ]);
  });

  test("the same runner twice in one output: the last summary counts", () => {
    expect(readRunnerSummaries(recorded("pytest-q.plain") + recorded("pytest.plain"))).toEqual([summary("pytest", 2, 1, 3, 0)]);
    expect(readRunnerSummaries(recorded("pytest.plain") + recorded("pytest-q.plain"))).toEqual([summary("pytest", 3, 1, 2, 0)]);
  });

  test("CRLF line endings and a carriage-return redraw read as a terminal shows them", () => {
    expect(readRunnerSummaries(recorded("vitest.colour").replaceAll("\n", "\r\n"))).toEqual([summary("vitest", 2, 1, 1, 1)]);
    expect(plainLines("progress 10%\rprogress 100%\r\n")).toEqual(["progress 100%", ""]);
  });

  test("only \\n splits lines: a U+2028 inside a line does not make a summary line of its end", () => {
    expect(readRunnerSummaries("some text\u2028Tests:       2 passed, 2 total\n")).toEqual([]);
  });

  test("output with no summary: none found (a build, a linter, an empty output)", () => {
    expect(readRunnerSummaries("")).toEqual([]);
    expect(readRunnerSummaries("> fixture@1.0.0 test\n> true\n\n")).toEqual([]);
    expect(readRunnerSummaries("src/a.js\n  1:1  error  'x' is defined but never used\n\n✖ 1 problem (1 error, 0 warnings)\n")).toEqual([]);
  });

  test("plain TAP without closing comments: its top-level points, when it has a plan", () => {
    const tap = ["TAP version 13", "1..4", "ok 1 - a", "not ok 2 - b", "ok 3 - c # SKIP later", "not ok 4 - d # TODO soon", ""].join("\n");
    expect(readRunnerSummaries(tap)).toEqual([summary("tap-protocol", 1, 1, 1, 1)]);
    // tape's closing comments (`# pass  3` with two spaces).
    expect(readRunnerSummaries("1..3\n# tests 3\n# pass  3\n\n# ok\n")).toEqual([summary("tap-protocol", 3, 0, 0, 0)]);
  });
});
