import { XMLBuilder } from "fast-xml-parser";
import { escapeControls } from "../vocabulary/display.js";
import type { RunResult } from "../verdict/result.js";
import { commandEnding, commandPassed, verificationCommands } from "./shell-commands.js";
import { EXIT_CODES } from "../vocabulary/terminal-reasons.js";
import type { TestEvidence } from "./test-evidence.js";

/**
 * handoff's own verdict as JUnit XML (`handoff show --format junit`), for CI test tabs (GitLab, Jenkins, GitHub
 * test reporters): a `verdict` test case (the run as a whole), one per verification command (a failing one with its
 * ending and the end of its output), and one per test the JUnit evidence names.
 * Written by the library's builder, which escapes markup; characters XML cannot carry at all (controls, U+FFFE,
 * lone surrogates) are escaped here first, so the output always parses.
 */

type Testcase = Record<string, unknown>;

/** The one JUnit XML writer: `--format junit` of a run, and a batch's junit.xml (src/many/junit.ts). */
export const JUNIT_BUILDER = new XMLBuilder({
  ignoreAttributes: false,
  attributeNamePrefix: "@_",
  textNodeName: "#text",
  format: true,
  indentBy: "  ",
  suppressEmptyNode: true,
});

/** Text fit for XML 1.0 on one line: controls and invisibles as `\xNN`/`\uNNNN`, the rest XML cannot hold likewise. */
export function xmlLine(text: string): string {
  // With the `u` flag a surrogate range matches only a lone surrogate, never half of a pair.
  return escapeControls(text).replace(/[\ufffe\uffff\ud800-\udfff]/gu, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Several lines, each made safe as above. */
function xmlText(text: string): string {
  return text.split("\n").map(xmlLine).join("\n");
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(3);
}

function failing(name: string, classname: string, message: string, type: string, body: string, time?: string): Testcase {
  return {
    "@_name": xmlLine(name),
    "@_classname": classname,
    ...(time !== undefined ? { "@_time": time } : {}),
    failure: { "@_message": xmlLine(message), "@_type": type, "#text": xmlText(body) },
  };
}

function passing(name: string, classname: string, time?: string): Testcase {
  return { "@_name": xmlLine(name), "@_classname": classname, ...(time !== undefined ? { "@_time": time } : {}) };
}

function verdictCase(r: RunResult): Testcase {
  return { ...verdictOutcome(r), ...attemptsOutput(r) };
}

function verdictOutcome(r: RunResult): Testcase {
  if (r.terminalReason === "verified") return passing("verdict", "handoff", seconds(r.timings.durationMs));
  const reason = `${r.terminalReason}${r.detail ? ` (${r.detail})` : ""}, exit ${EXIT_CODES[r.terminalReason]}`;
  return failing(
    "verdict",
    "handoff",
    `${reason}: ${r.summary}`,
    r.terminalReason,
    [reason, r.summary, ...(r.hint ? [`hint: ${r.hint}`] : [])].join("\n"),
    seconds(r.timings.durationMs),
  );
}

/** `--attempts`: the verdict's output names each attempt and how it ended (`handoff show` has the feedback too). */
function attemptsOutput(r: RunResult): Testcase {
  const attempts = r.attempts ?? [];
  if (attempts.length < 2) return {};
  const lines = attempts.map(
    (entry) => `attempt ${entry.attempt}: ${entry.terminalReason}${entry.detail ? ` (${entry.detail})` : ""}: ${entry.summary}`,
  );
  if (r.attemptsStopped) lines.push(`no further attempt: ${r.attemptsStopped}`);
  return { "system-out": xmlText(lines.join("\n")) };
}

type CommandEntry = RunResult["verification"]["commands"][number];

/** The part of a failing command's output that names the failure (src/review/command-output.ts: from test.log, bounded, escaped). */
export interface CommandOutputTail {
  readonly command: CommandEntry;
  readonly lines: readonly string[];
  /** Which part of the output the lines are ("" when all of it). */
  readonly extent: string;
}

function commandCases(r: RunResult, output: CommandOutputTail | null): Testcase[] {
  return verificationCommands(r.verification).map((c) => {
    const name = `${c.phase ? `[${c.phase}] ` : ""}${c.command}`;
    const time = seconds(c.durationMs);
    if (commandPassed(c)) return passing(name, "handoff.verification", time);
    const ending = commandEnding(c);
    const tail = output?.command === c ? ["", `output${output.extent ? ` (${output.extent})` : ""}, from test.log:`, ...output.lines] : [];
    return failing(name, "handoff.verification", ending, "verification_command", [`${name}: ${ending}`, ...tail].join("\n"), time);
  });
}

/** Test cases named after the tests the evidence lists: findings fail, fixed tests pass; the unlisted rest counted. */
function evidenceCases(tests: TestEvidence): Testcase[] {
  const cases: Testcase[] = [];
  const findings = [
    { list: tests.vanished, kind: "vanished", says: "passed on the base, missing after the patch" },
    { list: tests.newlySkipped, kind: "newly_skipped", says: "passed on the base, skipped after the patch" },
    { list: tests.broke, kind: "broke", says: "passed on the base, fails after the patch" },
  ] as const;
  for (const { list, kind, says } of findings) {
    const classname = `handoff.tests.${kind}`;
    for (const name of list.names) cases.push(failing(name, classname, says, kind, `${name}: ${says}`));
    const more = list.count - list.names.length;
    if (more > 0)
      cases.push(
        failing(
          `${more} more not listed`,
          classname,
          says,
          kind,
          `${more} more tests ${says}; result.json keeps the first ${list.names.length} names`,
        ),
      );
  }
  for (const name of tests.fixed.names) cases.push(passing(name, "handoff.tests.fixed"));
  const moreFixed = tests.fixed.count - tests.fixed.names.length;
  if (moreFixed > 0) cases.push(passing(`${moreFixed} more not listed`, "handoff.tests.fixed"));
  return cases;
}

/** `output`: the first failing command's output tail, shown in that command's failure. */
export function renderVerdictJunit(r: RunResult, output: CommandOutputTail | null = null): string {
  const testcases = [verdictCase(r), ...commandCases(r, output), ...(r.verification.tests ? evidenceCases(r.verification.tests) : [])];
  const failures = testcases.filter((testcase) => Object.hasOwn(testcase, "failure")).length;
  const time = seconds(r.timings.durationMs);
  const properties = [
    { "@_name": "runId", "@_value": xmlLine(r.runId) },
    { "@_name": "terminalReason", "@_value": r.terminalReason },
    { "@_name": "detail", "@_value": xmlLine(r.detail ?? "") },
    { "@_name": "baseCommit", "@_value": xmlLine(r.repo.baseCommit) },
    { "@_name": "backend", "@_value": xmlLine(r.backend.name) },
  ];
  const document = {
    "?xml": { "@_version": "1.0", "@_encoding": "UTF-8" },
    testsuites: {
      "@_name": "handoff",
      "@_tests": testcases.length,
      "@_failures": failures,
      "@_errors": 0,
      "@_time": time,
      testsuite: {
        "@_name": "handoff",
        "@_tests": testcases.length,
        "@_failures": failures,
        "@_errors": 0,
        "@_skipped": 0,
        "@_time": time,
        "@_timestamp": xmlLine(r.timings.startedAt),
        properties: { property: properties },
        testcase: testcases,
      },
    },
  };
  return JUNIT_BUILDER.build(document) as string;
}
