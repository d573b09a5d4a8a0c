import { codeSpan, fenceFor, htmlText, markdownText } from "../lib/markdown-fence.js";
import { displayText } from "../patch/rules/path-names.js";
import { escapeControls } from "../vocabulary/display.js";
import { type LoadedRun, loadPatch } from "../run-dir/run-lookup.js";
import { networkHeadline } from "./network-story.js";
import { EXIT_CODES } from "../vocabulary/terminal-reasons.js";
import { hasDetail } from "../verdict/detail.js";
import type { RunResult } from "../verdict/result.js";
import { commandEnding, commandPassed, verificationCommands } from "../verify/shell-commands.js";
import { agentStderrTail, hiddenPathsTheAgentNamed } from "./agent-stderr.js";
import { type ReportWriter, writeAttempts } from "./attempts-story.js";
import { candidatesTable } from "./candidates-table.js";
import { type FailureOutput, firstFailureOutput } from "./command-output.js";
import { writeEnvironment } from "./environment-story.js";
import { ms } from "./format.js";
import { type FileDiff, fileDiffs } from "./patch-files.js";
import { runnerSummaryLines } from "./summary-lines.js";
import { testEvidenceLines, writeAgentFacts, writeContainment, writeSource, writeTimings, writeVerification } from "./report-sections.js";
import { localPathsOut } from "./local-paths.js";
import { proseMarkdown } from "./report-prose.js";
import { runRequest } from "./run-files.js";
import { groupWarnings, type WarningWeight } from "./warning-groups.js";

/**
 * `handoff show --format markdown`: the report a pull request carries (its body, a comment, the Action's step
 * summary). The verdict first, then the task, the verification with the first failure's output, the attempts, the
 * tests, the warnings by weight, the patch as a file list and per-file diffs, and the run's details folded away. It
 * stays under REPORT_LIMIT characters: whole per-file diffs are left out, largest first, and named (docs/report.md).
 * No path of the machine that ran it reaches it (local-paths.ts): it is read on GitHub.
 */

/** GitHub takes 65,536 characters in a comment or a PR body; the rest is room for what a caller wraps around it. */
export const REPORT_LIMIT = 60_000;
/** Room kept for the note that names the diffs left out. */
const CUT_NOTE_ROOM = 2_000;
const TASK_CHARS = 4_000;
const COMMANDS_SHOWN = 50;
const WARNINGS_SHOWN = 30;
const WARNING_CHARS = 400;
const FILES_LISTED = 100;
const CUT_FILES_NAMED = 20;

/** A part of the report; one that does not fit is replaced by `stub`, the lowest `keep` first. */
interface Part {
  readonly text: string;
  readonly keep: number;
  readonly name: string;
}

export function renderMarkdownReport(run: LoadedRun): string {
  const r = run.result;
  const diffs = fileDiffs(loadPatch(run));
  const parts: Part[] = [
    { name: "verdict", keep: 100, text: verdictPart(r) },
    ...(r.candidates ? [{ name: "candidates", keep: 90, text: section("Candidates", candidatesTable(r, "markdown").join("\n")) }] : []),
    { name: "task", keep: 80, text: taskPart(run) },
    ...agentPart(run),
    { name: "verification", keep: 70, text: verificationPart(r, firstFailureOutput(run)) },
    ...attemptsPart(run),
    ...(r.verification.tests || r.verification.summaries ? [{ name: "tests", keep: 60, text: section("Tests", testsPart(r)) }] : []),
    ...(r.policy.violations.length > 0 ? [{ name: "rejections", keep: 65, text: section("Rejected by policy", violationsPart(r)) }] : []),
    ...(r.policy.warnings.length > 0 ? [{ name: "warnings", keep: 50, text: section("Warnings", warningsPart(r)) }] : []),
    { name: "patch", keep: 40, text: section("Patch", patchListPart(r, diffs)) },
    { name: "details", keep: 10, text: detailsPart(run) },
  ];
  const fitted = fitParts(parts, REPORT_LIMIT - CUT_NOTE_ROOM);
  const room = REPORT_LIMIT - CUT_NOTE_ROOM - fitted.reduce((sum, part) => sum + part.length + 1, 0);
  const shown = diffsPart(diffs, room);
  // The diffs go right after the file list, the details last.
  const patchAt = parts.findIndex((part) => part.name === "patch");
  // The diffs are the patch as it is: a path in them is the patch's, never rewritten.
  const own = fitted.map((text) => localPathsOut(text, run));
  const out = [...own.slice(0, patchAt + 1), ...(shown ? [shown] : []), ...own.slice(patchAt + 1)];
  return `${displayText(out.join("\n"))}\n`;
}

function section(title: string, body: string): string {
  return `\n## ${title}\n\n${body}`;
}

/** Replaces the parts that do not fit by a line naming them, lowest `keep` first, until the rest fits `limit`. */
function fitParts(parts: readonly Part[], limit: number): string[] {
  const texts = parts.map((part) => part.text);
  const size = () => texts.reduce((sum, text) => sum + text.length + 1, 0);
  const order = parts.map((part, i) => ({ keep: part.keep, i })).sort((a, b) => a.keep - b.keep);
  for (const { i } of order) {
    if (size() <= limit) break;
    texts[i] =
      `\n_The ${parts[i]!.name} (${parts[i]!.text.length} characters) left out to keep this report short; ${handoffShow("the whole report")}._`;
  }
  return texts;
}

function verdictPart(r: RunResult): string {
  const mark = r.terminalReason === "verified" ? (hasDetail(r.detail, "nothing_checked") ? "⚠️" : "✅") : "❌";
  const lines = [
    `# handoff run ${codeSpan(r.runId)}`,
    "",
    `${mark} **${r.terminalReason}**${r.detail ? ` (${codeSpan(r.detail)})` : ""}, exit ${EXIT_CODES[r.terminalReason]}: ${proseMarkdown(r.summary)}`,
  ];
  const hint = r.hint ? proseMarkdown(r.hint) : "";
  if (hint) lines.push("", `**What to do:** ${hint}`);
  const network = networkHeadline(r);
  if (network) lines.push("", `🌐 **Network:** ${proseMarkdown(network)}`);
  return lines.join("\n");
}

/** Lines in a fence no line of theirs can close. */
function fenced(lines: readonly string[], info = "text"): string {
  const fence = fenceFor(lines.join("\n"));
  return [`${fence}${info}`, ...lines, fence].join("\n");
}

function taskPart(run: LoadedRun): string {
  const request = runRequest(run);
  if (!request) return section("Task", "_not recorded (request.json is missing or unreadable)_");
  const task = request.task;
  const shown = task.length > TASK_CHARS ? `${task.slice(0, TASK_CHARS)}…` : task;
  const more = task.length > TASK_CHARS ? `\n\n_${task.length - TASK_CHARS} more characters: ${handoffShow("the whole task")}_` : "";
  return section("Task", `${fenced(shown.split("\n").map(escapeControls))}${more}`);
}

function verificationPart(r: RunResult, failure: FailureOutput | null): string {
  const v = r.verification;
  const status =
    v.skipped === "no_verify"
      ? "**NOTHING WAS CHECKED** (`--no-verify`): no verification command ran on this patch."
      : !v.ran
        ? "Not run."
        : v.passed
          ? "Passed: every command below, run by handoff in a fresh checkout (not by the agent)."
          : "**Failed**, run by handoff in a fresh checkout (not by the agent).";
  const lines = [status];
  const commands = verificationCommands(v);
  if (commands.length > 0) {
    lines.push("", "| | phase | command | ending | time |", "|---|---|---|---|---|");
    for (const c of commands.slice(0, COMMANDS_SHOWN))
      lines.push(
        `| ${commandPassed(c) ? "✅" : "❌"} | ${c.phase ?? ""} | ${codeSpan(escapeControls(c.command)).replaceAll("|", "\\|")} | ${markdownText(commandEnding(c))} | ${ms(c.durationMs)} |`,
      );
    if (commands.length > COMMANDS_SHOWN)
      lines.push("", `_and ${commands.length - COMMANDS_SHOWN} more commands: ${handoffShow("all of them")}_`);
  }
  if (failure) {
    const name = codeSpan(escapeControls(failure.command.command));
    if (failure.kind === "unavailable") lines.push("", `Output of ${name}: ${proseMarkdown(failure.why)}.`);
    else {
      const cut = failure.extent ? ` (${failure.extent})` : "";
      lines.push("", `Output of the first failing command, ${name}${cut}:`, "", fenced(failure.lines));
    }
  }
  const more: string[] = [];
  writeVerification(r, markdownWriter(more), { commands: false });
  if (more.length > 0) lines.push("", ...more);
  return section("Verification", lines.join("\n"));
}

function testsPart(r: RunResult): string {
  const code = (text: string) => codeSpan(escapeControls(text));
  const { tests, summaries } = r.verification;
  return [...(tests ? testEvidenceLines(tests, code) : []), ...(summaries ? runnerSummaryLines(summaries, code) : [])]
    .map((line) => `- ${line}`)
    .join("\n");
}

function violationsPart(r: RunResult): string {
  return r.policy.violations
    .slice(0, WARNINGS_SHOWN)
    .map(findingLine)
    .concat(r.policy.violations.length > WARNINGS_SHOWN ? [`- and ${r.policy.violations.length - WARNINGS_SHOWN} more`] : [])
    .join("\n");
}

function findingLine(finding: RunResult["policy"]["warnings"][number]): string {
  const message = finding.message.length > WARNING_CHARS ? `${finding.message.slice(0, WARNING_CHARS)}…` : finding.message;
  return `- ${codeSpan(finding.rule)}${finding.path ? ` ${codeSpan(escapeControls(finding.path))}` : ""}: ${proseMarkdown(escapeControls(message))}`;
}

const GROUP_TITLE: Readonly<Record<WarningWeight, string>> = {
  review: "Needs review",
  know: "Worth knowing",
  routine: "Routine (what a setup or the tests leave behind, such as `node_modules/` or `__pycache__/`)",
};

function warningsPart(r: RunResult): string {
  const groups = groupWarnings(r);
  const out: string[] = [];
  for (const weight of ["review", "know", "routine"] as const) {
    const list = groups[weight];
    if (list.length === 0) continue;
    const lines = list.slice(0, WARNINGS_SHOWN).map(findingLine);
    if (list.length > WARNINGS_SHOWN) lines.push(`- and ${list.length - WARNINGS_SHOWN} more`);
    if (weight === "routine")
      out.push(`<details><summary>${GROUP_TITLE[weight].replace(/`/g, "")} (${list.length})</summary>`, "", ...lines, "", "</details>", "");
    else out.push(`**${GROUP_TITLE[weight]}** (${list.length})`, "", ...lines, "");
  }
  return out.join("\n").trimEnd();
}

function patchListPart(r: RunResult, diffs: readonly FileDiff[]): string {
  if (!r.patch) return "Not extracted.";
  if (r.patch.files.length === 0) return "No changes.";
  const adds = r.patch.files.reduce((sum, f) => sum + f.additions, 0);
  const dels = r.patch.files.reduce((sum, f) => sum + f.deletions, 0);
  const lines = [
    `${r.patch.files.length} file(s), +${adds} −${dels}, ${r.patch.bytes !== undefined ? `${kb(r.patch.bytes)}, ` : ""}sha256 ${codeSpan(r.patch.sha256)}`,
    "",
    "| file | change | + | − | hunks |",
    "|---|---|---|---|---|",
  ];
  r.patch.files.slice(0, FILES_LISTED).forEach((file, i) => {
    const hunks = diffs[i]?.binary ? "binary" : (diffs[i]?.hunks ?? "");
    lines.push(`| ${codeSpan(file.path).replaceAll("|", "\\|")} | ${file.change} | ${file.additions} | ${file.deletions} | ${hunks} |`);
  });
  if (r.patch.files.length > FILES_LISTED)
    lines.push("", `_and ${r.patch.files.length - FILES_LISTED} more files: ${handoffShow("all of them")}_`);
  return lines.join("\n");
}

function kb(bytes: number): string {
  return bytes >= 1024 ? `${Math.round(bytes / 1024)} KB` : `${bytes} B`;
}

/**
 * Per-file diffs, each folded and in a fence longer than any backtick run in it, within `room` characters: whole
 * files only, the smallest first (the most files shown), listed in the patch's order; what is left out is named.
 */
function diffsPart(diffs: readonly FileDiff[], room: number): string | null {
  if (diffs.length === 0) return null;
  const blocks = diffs.map((diff) => (diff.binary ? null : diffBlock(diff)));
  const order = blocks.map((block, i) => ({ i, size: block?.length ?? 0 })).sort((a, b) => a.size - b.size);
  const shown = new Set<number>();
  let left = room;
  for (const { i, size } of order) {
    if (blocks[i] === null || size + 1 > left) continue;
    shown.add(i);
    left -= size + 1;
  }
  const out = ["\n### Changes\n", ...blocks.filter((_, i) => shown.has(i))];
  const cut = diffs.filter((_, i) => !shown.has(i));
  if (cut.length > 0) {
    const bytes = cut.reduce((sum, diff) => sum + Buffer.byteLength(diff.text), 0);
    const names = cut.slice(0, CUT_FILES_NAMED).map((diff) => codeSpan(diff.path));
    const more = cut.length > CUT_FILES_NAMED ? `, and ${cut.length - CUT_FILES_NAMED} more` : "";
    out.push(
      "",
      `**Diffs of ${cut.length} file(s) not shown (${kb(bytes)})** to keep this report under ${REPORT_LIMIT.toLocaleString("en")} characters: ${names.join(", ")}${more}.`,
      `The whole patch is ${codeSpan("changes.patch")} in the run directory (in CI, the workflow's run artifact).`,
    );
  }
  return out.join("\n");
}

function diffBlock(diff: FileDiff): string {
  const body = (diff.crlf ? diff.text.replaceAll("\r\n", "\n") : diff.text).replace(/\n$/, "");
  const fence = fenceFor(body);
  return [
    `<details><summary>${htmlText(diff.path)} +${diff.additions} −${diff.deletions}${diff.crlf ? " (CRLF line endings, shown without the CRs)" : ""}</summary>`,
    "",
    `${fence}diff`,
    body,
    fence,
    "",
    "</details>",
  ].join("\n");
}

/**
 * The markdown ReportWriter: headings (`###` by default), list items, code spans that cannot end early, fenced blocks,
 * the run's prose as proseMarkdown words it, and no path of this machine.
 */
function markdownWriter(out: string[], level = "###"): ReportWriter {
  return {
    heading: (text) => out.push("", `${level} ${text}`, ""),
    item: (text, depth = 0) => out.push(`${"  ".repeat(depth)}- ${text}`),
    code: codeSpan,
    block: (lines) => out.push("", fenced(lines), ""),
    prose: (text) => proseMarkdown(escapeControls(text)),
    localPaths: false,
  };
}

/** Where the reader finds what this report left out: `handoff show` of the run, or its directory in the CI artifact. */
function handoffShow(what: string): string {
  return `${what} in ${codeSpan("handoff show")} of this run (in CI, the workflow's run artifact)`;
}

/** The attempts of a repair run (or the session kept or continued), in the open: the story of how the verdict came. */
function attemptsPart(run: LoadedRun): Part[] {
  const out: string[] = [];
  writeAttempts(run, markdownWriter(out, "##"));
  return out.length === 0 ? [] : [{ name: "attempts", keep: 68, text: out.join("\n").replace(/\n+$/u, "") }];
}

/** The agent's part when it failed or left no patch to judge: the end of its stderr, and the hidden paths it named. */
function agentPart(run: LoadedRun): Part[] {
  const hidden = hiddenPathsTheAgentNamed(run.result);
  const stderr = agentStderrTail(run);
  if (hidden.length === 0 && !stderr) return [];
  const lines = hidden.map(
    (path) => `- the sandbox hid ${codeSpan(path)} from the agent, which named it: it saw an empty place there, not this machine's`,
  );
  if (stderr)
    lines.push(
      ...(lines.length > 0 ? [""] : []),
      `The end of the agent's stderr${stderr.omitted > 0 ? ` (its last ${stderr.lines.length} lines)` : ""}, from \`backend-result.json\`:`,
      "",
      fenced(stderr.lines),
    );
  return [{ name: "agent", keep: 75, text: section("Agent", lines.join("\n")) }];
}

/** Source, agent, attempts, containment, environment, timings: folded away. */
function detailsPart(run: LoadedRun): string {
  const r = run.result;
  const out: string[] = [];
  const w = markdownWriter(out);
  writeSource(r, w);
  w.heading("Agent");
  writeAgentFacts(r, w);
  writeContainment(r, w);
  writeEnvironment(r, w);
  writeTimings(r, w);
  w.heading("Run directory");
  w.item(`run ${codeSpan(r.runId)}: its directory holds every file named here (in CI, the workflow's run artifact)`);
  if (r.workspace) w.item("the agent's workspace was kept, on the machine that ran it");
  return ["", "<details><summary>Run details: source, agent, containment, environment, timings</summary>", ...out, "", "</details>"].join(
    "\n",
  );
}
