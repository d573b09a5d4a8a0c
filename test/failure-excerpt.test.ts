import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { excerptExtent, failureExcerpt, REPORT_EXCERPT, tailExcerpt } from "../src/lib/failure-excerpt.js";

/** Output recorded from the real runners (test/fixtures/failure-output/README.md says how). */
function recorded(name: string): string {
  return readFileSync(join(import.meta.dirname, "fixtures", "failure-output", name), "utf8");
}

/** Each runner's recording, and what its excerpt must show: the failing test named, and what it asserted. */
const RUNNERS: readonly { file: string; names: readonly string[]; notShown?: string }[] = [
  { file: "mocha-nyc.txt", names: ["2 failing", "1) splat", "strips %c:", "'a %c1' !== 'a 1'"], notShown: "mod99.js" },
  { file: "jest.txt", names: ["● splat › strips %c", 'Received:\n      "a %c1"'], notShown: "mod99.js" },
  { file: "jest-colour.txt", names: ["● splat › strips %c", 'Received:\n      "a %c1"'], notShown: "mod99.js" },
  { file: "vitest.txt", names: ["Failed Tests 2", "FAIL  test-vitest/lib.test.js > splat > strips %c", 'Received: "a %c1"'] },
  { file: "vitest-colour.txt", names: ["Failed Tests 2", "FAIL  test-vitest/lib.test.js > splat > strips %c", 'Received: "a %c1"'] },
  { file: "node-test-tap.txt", names: ["not ok 2 - strips %c", "'a %c1' !== 'a 1'"] },
  { file: "node-test-spec.txt", names: ["✖ failing tests:", "✖ strips %c", "'a %c1' !== 'a 1'"] },
  { file: "tap.txt", names: ["not ok 2 - strips %c", "+a %c1"], notShown: "mod99.js" },
  { file: "pytest.txt", names: ["= FAILURES =", "test_strips_c", "E       AssertionError: assert 'a %c1' == 'a 1'"] },
  { file: "go-test.txt", names: ["--- FAIL: TestStripsC", 'Splat("a %c%s") = "a %c1", want "a 1"'] },
  { file: "cargo-test.txt", names: ["---- tests::handles_d stdout ----", 'left: "n=%d"'] },
];

describe("the excerpt of a failing command's output", () => {
  for (const runner of RUNNERS)
    it(`names the failing test and its assertion in real ${runner.file.replace(".txt", "")} output`, () => {
      const excerpt = failureExcerpt(recorded(runner.file), REPORT_EXCERPT);
      const text = excerpt.lines.join("\n");
      expect(excerpt.from).toBe("failure");
      for (const name of runner.names) expect(text).toContain(name);
      if (runner.notShown) expect(text).not.toContain(runner.notShown);
      // Plain text: no colour codes, no other terminal controls.
      expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
      expect(excerpt.lines.length).toBeLessThanOrEqual(REPORT_EXCERPT.lines);
      expect(Buffer.byteLength(text)).toBeLessThanOrEqual(REPORT_EXCERPT.bytes);
    });

  it("shows what the last 40 lines never did after nyc: the end of mocha's output is the coverage table", () => {
    const end = tailExcerpt(recorded("mocha-nyc.txt"), REPORT_EXCERPT).lines.join("\n");
    expect(end).toContain("mod99.js");
    expect(end).not.toContain("strips %c");
  });

  it("says which part of the output it shows", () => {
    const output = recorded("mocha-nyc.txt");
    const excerpt = failureExcerpt(output, REPORT_EXCERPT);
    const total = output.replace(/\n+$/, "").split("\n").length;
    expect(excerpt.before + excerpt.lines.length + excerpt.after).toBe(total);
    expect(excerptExtent(excerpt)).toBe(
      `40 lines at the first failure it names, ${excerpt.before} before and ${excerpt.after} after left out`,
    );
    expect(excerpt.lines[0]).toBe("  2 failing");
  });

  it("shows the end of an output that names no failure, and all of a short one", () => {
    const lines = Array.from({ length: 100 }, (_, i) => `building step ${i}`);
    const long = failureExcerpt(`${lines.join("\n")}\n`, REPORT_EXCERPT);
    expect(long.from).toBe("end");
    expect(long.lines).toEqual(lines.slice(-40));
    expect(excerptExtent(long)).toBe("its last 40 lines");
    const short = failureExcerpt("one\ntwo\n", REPORT_EXCERPT);
    expect(short.lines).toEqual(["one", "two"]);
    expect(excerptExtent(short)).toBe("");
  });

  it("fills the window with the lines before a failure near the end", () => {
    const lines = [...Array.from({ length: 60 }, (_, i) => `ok ${i + 1} - passes`), "not ok 61 - breaks", "1..61"];
    const excerpt = failureExcerpt(lines.join("\n"), REPORT_EXCERPT);
    expect(excerpt.lines).toHaveLength(40);
    expect(excerpt.lines.at(-2)).toBe("not ok 61 - breaks");
    expect(excerpt.after).toBe(0);
  });

  it("is bounded in bytes and cuts long lines", () => {
    const excerpt = failureExcerpt(`not ok 1 - x\n${"y".repeat(1000)}\n`.repeat(50), { lines: 40, lineChars: 300, bytes: 2048 });
    expect(excerpt.lines[0]).toBe("not ok 1 - x");
    expect(excerpt.lines[1]).toBe(`${"y".repeat(300)}…`);
    expect(Buffer.byteLength(excerpt.lines.join("\n"))).toBeLessThanOrEqual(2048);
  });

  it("takes a TAP todo for no failure, and shows a line as a terminal does, after its last carriage return", () => {
    const excerpt = failureExcerpt("not ok 1 - later # TODO not written\nprogress 10%\rprogress 100%\n", REPORT_EXCERPT);
    expect(excerpt.from).toBe("end");
    expect(excerpt.lines).toEqual(["not ok 1 - later # TODO not written", "progress 100%"]);
  });
});
