import { assertNever } from "../lib/assert-never.js";
import { fenceFor } from "../lib/markdown-fence.js";
import { type LoadedRun, loadPatch } from "../run-dir/run-lookup.js";
import { displayText, escapeControls } from "../patch/rules/path-names.js";
import { hunkCounts, parsePatch } from "../patch/patch.js";
import { EXIT_CODES } from "../verdict/decide.js";
import type { RunResult } from "../verdict/result.js";
import { commandEnding, commandPassed } from "../verify/shell-commands.js";
import { renderVerdictJunit } from "../verify/junit-verdict.js";
import type { TestEvidence, TestList } from "../verify/test-evidence.js";
import { writeAttempts } from "./attempts-story.js";
import { renderHtml } from "./html-report.js";
import { writeEnvironment } from "./environment-story.js";
import { candidatesTable } from "./candidates-table.js";
import { ms, usageText } from "./format.js";

export type ReportFormat = "text" | "markdown" | "json" | "junit" | "html";

type CommandEntry = RunResult["verification"]["commands"][number];

function commandLine(c: CommandEntry, code: (text: string) => string): string {
  const mark = commandPassed(c) ? "ok  " : "FAIL";
  return `${mark} ${c.phase ? `[${c.phase}] ` : ""}${code(escapeControls(c.command))}: ${escapeControls(commandEnding(c))}, ${ms(c.durationMs)}`;
}

const JUDGED = {
  held_to_base: "held to the base (verification ran again with the base's version)",
  rejected: "REJECTED (--test-edits reject)",
  allowed: "ALLOWED as patched (--test-edits allow): review it",
} as const;

const STATE = { green: "green", red: "red", not_run: "not run" } as const;

export function renderReport(run: LoadedRun, format: ReportFormat): string {
  switch (format) {
    case "json":
      return `${JSON.stringify(run.result, null, 2)}\n`;
    case "text":
      return renderText(run, false);
    case "markdown":
      return renderText(run, true);
    case "junit":
      return renderVerdictJunit(run.result);
    case "html":
      return renderHtml(run);
    default:
      return assertNever(format);
  }
}

/** Names shown per list in the report (result.json keeps up to 50, `show --format json` has them all). */
const TEST_NAMES_SHOWN = 10;

function testNames(list: TestList, code: (text: string) => string): string {
  const shown = list.names.slice(0, TEST_NAMES_SHOWN).map(code).join(", ");
  const more = list.count - Math.min(list.names.length, TEST_NAMES_SHOWN);
  return `${shown}${more > 0 ? `${shown ? ", " : ""}and ${more} more` : ""}`;
}

/**
 * The JUnit evidence, findings first: a test that passed on the base and vanished or is now skipped is what a
 * reviewer must see before anything else, then tests the patch broke, then what it fixed.
 */
function testEvidenceLines(tests: TestEvidence, code: (text: string) => string): string[] {
  const totals = (t: { passed: number; failed: number; skipped: number }) => `${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped`;
  const lines = [
    `tests (JUnit): ${tests.patched ? totals(tests.patched) : "no report read"} with the patch${tests.base ? `; ${totals(tests.base)} on the base` : ""}`,
  ];
  if (tests.vanished.count > 0)
    lines.push(`VANISHED ${tests.vanished.count} (passed on the base, missing now): ${testNames(tests.vanished, code)}`);
  if (tests.newlySkipped.count > 0)
    lines.push(`NEWLY SKIPPED ${tests.newlySkipped.count} (passed on the base, skipped now): ${testNames(tests.newlySkipped, code)}`);
  if (tests.broke.count > 0) lines.push(`broke ${tests.broke.count} (passed on the base, fail now): ${testNames(tests.broke, code)}`);
  if (tests.fixed.count > 0) lines.push(`fixed ${tests.fixed.count} (failed on the base, pass now): ${testNames(tests.fixed, code)}`);
  for (const diagnostic of tests.diagnostics) lines.push(`junit: ${diagnostic}`);
  return lines;
}

function renderText(run: LoadedRun, markdown: boolean): string {
  const r = run.result;
  const patch = loadPatch(run);
  // Hunks per file, for the summary table: read from the patch, which stays bytes on disk.
  const hunks = hunkCounts(parsePatch(patch));
  const out: string[] = [];
  const heading = (text: string) => out.push(markdown ? `\n## ${text}\n` : `\n${text}`);
  const item = (text: string, depth = 0) => out.push(markdown ? `${"  ".repeat(depth)}- ${text}` : `${"  ".repeat(depth + 1)}${text}`);
  const code = (text: string) => (markdown ? `\`${text}\`` : text);
  // Lines shown as they are: a fenced block in markdown (a fence longer than any inside), indented in text.
  const block = (lines: readonly string[]) => {
    if (!markdown) return out.push(...lines.map((line) => (line === "" ? "" : `      ${line}`)));
    const fence = fenceFor(lines.join("\n"));
    return out.push("", `${fence}text`, ...lines, fence, "");
  };

  out.push(markdown ? `# handoff run ${r.runId}\n` : `handoff run ${r.runId}`);
  out.push(
    `${markdown ? "**Verdict:** " : "verdict: "}${r.terminalReason}${r.detail ? ` (${r.detail})` : ""}, exit ${EXIT_CODES[r.terminalReason]}`,
  );
  out.push(`${markdown ? "**Summary:** " : "summary: "}${escapeControls(r.summary)}`);
  if (r.hint) out.push(`${markdown ? "**Hint:** " : "hint:    "}${escapeControls(r.hint)}`);
  if (r.candidates) {
    heading(`Candidates (${r.candidates.length}; each a run of its own in candidates/<k>/)`);
    out.push(...candidatesTable(r, markdown));
  }

  heading("Source");
  item(`${r.repo.path} at ${code(r.repo.baseCommit)}`);
  item(
    r.sourceInvariant.matched ? "unchanged during the run" : `CHANGED during the run: ${r.sourceInvariant.changed.slice(0, 20).join(", ")}`,
  );

  heading("Agent");
  const b = r.backend;
  item(
    `${b.name}${b.version ? ` ${b.version}` : ""}${b.executable ? ` (${escapeControls(b.executable)})` : ""}; session ${b.sessionId ?? "none"}; exit ${b.exitCode ?? (b.signal ? `signal ${b.signal}` : "none")}`,
  );
  if (r.agent.finalMessage) item(`its last word (a claim, not evidence): ${escapeControls(r.agent.finalMessage.slice(0, 500))}`);
  if (r.agent.usage) item(`usage: ${usageText(r.agent.usage)}`);
  writeAttempts(run, { heading, item, code, block });

  if (r.containment) {
    heading("Containment");
    const c = r.containment;
    item(
      c.sandbox === "bwrap"
        ? `sandbox: bubblewrap${c.bwrapVersion ? ` ${c.bwrapVersion}` : ""}; network for the agent, ${c.network.verify ? "and for verification (--verify-network)" : "none for verification"}`
        : `NO SANDBOX (${c.requested === "none" ? "--sandbox none" : `bubblewrap unusable: ${c.reason ?? "unknown"}`})`,
    );
    item(
      c.caps.enforcedBy
        ? `caps: ${c.caps.processes} processes, ${Math.round(c.caps.memoryBytes / 1024 ** 2)} MiB per process tree (${c.caps.enforcedBy})`
        : `caps: not enforced (${c.caps.reason ?? "no cgroup"})`,
    );
    for (const open of c.uncontained) item(`open: ${open}`);
  }

  heading("Patch");
  if (!r.patch) item("not extracted");
  else if (r.patch.files.length === 0) item("no changes");
  else {
    const adds = r.patch.files.reduce((sum, f) => sum + f.additions, 0);
    const dels = r.patch.files.reduce((sum, f) => sum + f.deletions, 0);
    item(`${r.patch.files.length} file(s), +${adds} -${dels}, sha256 ${r.patch.sha256.slice(0, 16)}…`);
    r.patch.files.forEach((file, i) => {
      const letter = file.change === "added" ? "A" : file.change === "deleted" ? "D" : "M";
      item(`${letter} ${code(file.path)} +${file.additions} -${file.deletions}${hunks[i] !== undefined ? `, ${hunks[i]} hunk(s)` : ""}`);
    });
  }

  heading("Policy");
  if (r.policy.violations.length === 0) item("no violations");
  for (const v of r.policy.violations) item(`REJECTED ${v.rule}: ${v.path ? `${code(v.path)}: ` : ""}${v.message}`);
  for (const w of r.policy.warnings) item(`warning ${w.rule}: ${w.path ? `${code(w.path)}: ` : ""}${w.message}`);

  heading("Verification (run by handoff, not the agent)");
  if (r.verification.skipped === "no_verify") item("NOTHING WAS CHECKED (--no-verify): no verification command ran on this patch");
  else if (!r.verification.ran) item("not run");
  else item(r.verification.passed ? "passed" : "FAILED");
  for (const c of r.verification.commands) item(commandLine(c, code));
  if (r.verification.tests) for (const line of testEvidenceLines(r.verification.tests, code)) item(line);
  const claim = r.agent.claim;
  if (claim) {
    const said = claim.tests === "pass" ? "the tests pass" : claim.tests === "fail" ? "the tests fail" : "it did not run the tests";
    item(`the agent claimed ${said}: "${escapeControls(claim.quote)}"`);
    if (r.verification.ran && claim.tests !== "not_run" && (claim.tests === "pass") !== (r.verification.passed === true)) {
      item(`the claim does NOT match handoff's own verification (${r.verification.passed ? "passed" : "failed"})`);
    }
  }
  const edits = r.verification.testEdits;
  if (edits && edits.changed.length > 0) {
    item(`the patch changed ${edits.changed.length} verification input(s) (--test-edits ${edits.policy}):`);
    for (const input of edits.changed) {
      const entries = input.entries?.length ? ` (${input.entries.join(", ")})` : "";
      item(`  ${input.change} ${code(input.path)}${entries}: ${input.why}; ${JUDGED[input.judged]}`);
    }
  }
  const held = r.verification.heldToBase;
  if (held) {
    item(`held to the base (changed inputs put back): ${held.passed ? "passed" : "FAILED"}`);
    for (const c of held.commands) item(`  ${commandLine(c, code)}`);
  }
  for (const holdout of r.verification.holdouts ?? []) {
    item(
      `held-out patch ${escapeControls(holdout.source)} (sha256 ${holdout.sha256.slice(0, 16)}…), applied by handoff, unseen by the agent: ${holdout.files.map(code).join(", ") || "no files"}`,
    );
  }
  const baseline = r.verification.baseline;
  if (baseline) {
    item(
      `baseline on the untouched base: ${baseline.passed ? "passed" : baseline.setupFailed ? "setup FAILED" : "failed"}${baseline.holdoutsApplied === false ? " (the held-out patches do not apply to the base alone; it ran without them)" : ""}`,
    );
    for (const t of baseline.transitions ?? [])
      item(`  ${code(escapeControls(t.command))}: ${STATE[t.base]} on the base, ${STATE[t.patched]} with the patch`);
    for (const c of baseline.commands) item(`  ${commandLine(c, code)}`);
  }

  writeEnvironment(r, { heading, item, code });
  heading("Timings");
  const cleanup = r.timings.phases.cleanup;
  item(
    `total ${ms(r.timings.durationMs)} to the verdict${cleanup !== undefined ? `, then ${ms(cleanup)} removing the workspaces` : ""}, started ${r.timings.startedAt}`,
  );
  item(
    Object.entries(r.timings.phases)
      .map(([phase, value]) => `${phase} ${ms(value)}`)
      .join(", "),
  );
  heading("Run directory");
  item(run.dir);
  if (r.workspace) item(`workspace kept at ${r.workspace}`);

  if (patch.length > 0) {
    heading("changes.patch");
    // As bytes decoded: the one escape below covers the patch too, newlines and tabs kept.
    const text = patch.toString("utf8");
    out.push(markdown ? `\`\`\`diff\n${text}\`\`\`` : text);
  }
  // Everything printed passes through one escape: agent text, paths and messages can carry terminal controls.
  return `${displayText(out.join("\n"))}\n`;
}
