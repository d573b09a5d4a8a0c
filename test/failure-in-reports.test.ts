import { readFileSync } from "node:fs";
import { join } from "node:path";
import { XMLParser } from "fast-xml-parser";
import { describe, expect, test } from "vitest";
import { loadRun } from "../src/run-dir/run-lookup.js";
import { renderReport } from "../src/review/report.js";
import { feedbackInput } from "../src/repair/feedback-input.js";
import { handoffFeedback } from "../src/repair/feedback.js";
import { runShellCommands, TestLog } from "../src/verify/shell-commands.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, delegate } from "./helpers/run.js";

/** Output recorded from real runners (test/fixtures/failure-output/README.md). */
const recorded = (name: string) => readFileSync(join(import.meta.dirname, "fixtures", "failure-output", name), "utf8");

/** A project whose `npm test` prints a recorded runner's failing output (with its colours) and fails. */
async function projectPrinting(fixture: string): Promise<string> {
  return makeRepo({
    ...FAILING_ADD_PROJECT,
    "package.json": `${JSON.stringify({ name: "fixture", type: "module", scripts: { test: "cat runner-output.txt; exit 1" } }, null, 2)}\n`,
    "runner-output.txt": recorded(fixture),
  });
}

describe("the failure a reviewer reads is the failure", () => {
  test("after nyc's coverage table, every report names mocha's failing test, not the table", async () => {
    const repo = await projectPrinting("mocha-nyc.txt");
    const { runDir, result } = await delegate(repo, agent("breaks-add.sh"), { verify: ["npm test"] });
    expect(result.terminalReason).toBe("verification_failed");
    const run = loadRun(runDir);
    const text = renderReport(run, "text");
    expect(text).toMatch(
      /output of npm test \(40 lines at the first failure it names, \d+ before and \d+ after left out\) \(test\.log\):\n {8}2 failing\n\n {8}1\) splat\n {13}strips %c:/,
    );
    const markdown = renderReport(run, "markdown");
    expect(markdown).toContain("strips %c:");
    expect(markdown).toContain("(40 lines at the first failure it names,");
    const page = renderReport(run, "html");
    expect(page).toMatch(/<pre class="log">[^<]*2 failing\n\n {2}1\) splat\n {7}strips %c:/u);
    const xml = renderReport(run, "junit");
    const cases = new XMLParser({ ignoreAttributes: false }).parse(xml).testsuites.testsuite.testcase as Record<string, unknown>[];
    expect((cases[1]!.failure as Record<string, string>)["#text"]).toContain("strips %c:");
    for (const report of [text, markdown, xml]) expect(report).not.toContain("mod99.js");
  });

  test("colour codes reach no report: jest's coloured output is shown as plain text in text, markdown, HTML and JUnit", async () => {
    const repo = await projectPrinting("jest-colour.txt");
    const { runDir } = await delegate(repo, agent("breaks-add.sh"), { verify: ["npm test"] });
    const run = loadRun(runDir);
    for (const format of ["text", "markdown", "html", "junit"] as const) {
      const report = renderReport(run, format);
      expect(report, format).toContain("● splat › strips %c");
      // Neither the escape itself nor its escaped spelling, \x1b.
      expect(report, format).not.toMatch(/\u001b|\\x1b|&#x1b;|\[3[0-9]m/i);
    }
  });

  test("the repair feedback sends mocha's failing tests, not the end of nyc's coverage table", async () => {
    const dir = tempDir("handoff-feedback");
    const log = new TestLog(() => {});
    const fixture = join(import.meta.dirname, "fixtures", "failure-output", "mocha-nyc.txt");
    const records = await runShellCommands(["true", `cat '${fixture}'; exit 1`], {
      phase: "verify",
      cwd: dir,
      env: { PATH: process.env.PATH ?? "" },
      timeoutMs: 60_000,
      log,
    });
    const failed = records[1]!;
    const input = feedbackInput(
      {
        number: 1,
        verdict: { terminalReason: "verification_failed", status: "failed", detail: "command_failed", summary: "it failed", hint: null },
        attempt: {
          agent: null,
          patch: null,
          verification: { verify: { kind: "command_failed", commands: records, failed, tests: null }, held: null },
        },
      },
      2,
      log,
      false,
    );
    expect(input.output.text.split("\n")[0]).toBe("  2 failing");
    expect(input.output.text).toContain("  1) splat\n       strips %c:");
    expect(input.output.text).toContain("  2) splat\n       handles %d:");
    expect(Buffer.byteLength(input.output.text)).toBeLessThanOrEqual(6 * 1024);
    expect(input.output.extent).toMatch(/^\d+ lines at the first failure it names, 14 before and \d+ after left out$/);
    expect(handoffFeedback(input)).toContain(`Its output (${input.output.extent}):\n\`\`\`\n  2 failing\n`);
  });
});
