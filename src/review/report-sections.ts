import { basename } from "node:path";
import { escapeControls } from "../vocabulary/display.js";
import type { RunResult } from "../verdict/result.js";
import { commandEnding, commandPassed } from "../verify/shell-commands.js";
import type { TestEvidence, TestList } from "../verify/test-evidence.js";
import type { ReportWriter } from "./attempts-story.js";
import { ms, usageText } from "./format.js";
import { runnerSummaryLines } from "./summary-lines.js";
import { plainText } from "../lib/plain-text.js";

/**
 * The sections the text report and the markdown report's details share, each written through a ReportWriter (text
 * or markdown): source, agent, containment, policy, verification, timings, run directory.
 */

type CommandEntry = RunResult["verification"]["commands"][number];

export function commandLine(c: CommandEntry, code: (text: string) => string): string {
  const mark = commandPassed(c) ? "ok  " : "FAIL";
  return `${mark} ${c.phase ? `[${c.phase}] ` : ""}${code(escapeControls(c.command))}: ${escapeControls(commandEnding(c))}, ${ms(c.durationMs)}`;
}

const JUDGED = {
  held_to_base: "held to the base (verification ran again with the base's version)",
  rejected: "REJECTED (--test-edits reject)",
  allowed: "ALLOWED as patched (--test-edits allow): review it",
} as const;

const STATE = { green: "green", red: "red", not_run: "not run" } as const;

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
export function testEvidenceLines(tests: TestEvidence, code: (text: string) => string): string[] {
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

export function writeSource(r: RunResult, w: ReportWriter): void {
  w.heading("Source");
  w.item(`${w.localPaths ? r.repo.path : `the repository ${w.code(basename(r.repo.path))}`} at ${w.code(r.repo.baseCommit)}`);
  w.item(
    r.sourceInvariant.matched ? "unchanged during the run" : `CHANGED during the run: ${r.sourceInvariant.changed.slice(0, 20).join(", ")}`,
  );
}

/** The agent's line: backend, version, executable, session, how it ended; its last word, a claim; its usage. */
export function writeAgentFacts(r: RunResult, w: ReportWriter): void {
  const b = r.backend;
  w.item(
    `${b.name}${b.version ? ` ${b.version}` : ""}${b.executable ? ` (${escapeControls(w.localPaths ? b.executable : basename(b.executable))})` : ""}; session ${b.sessionId ?? "none"}; exit ${b.exitCode ?? (b.signal ? `signal ${b.signal}` : "none")}`,
  );
  if (r.agent.finalMessage)
    w.item(`its last word (a claim, not evidence): ${escapeControls(plainText(r.agent.finalMessage).slice(0, 500))}`);
  if (r.agent.usage) w.item(`usage: ${usageText(r.agent.usage)}`);
}

export function writeContainment(r: RunResult, w: ReportWriter): void {
  if (!r.containment) return;
  w.heading("Containment");
  const c = r.containment;
  w.item(
    c.sandbox === "bwrap"
      ? `sandbox: bubblewrap${c.bwrapVersion ? ` ${c.bwrapVersion}` : ""}; network: ${networkWords(r)}`
      : `NO SANDBOX (${c.requested === "none" ? "--sandbox none" : `bubblewrap unusable: ${c.reason ?? "unknown"}`})`,
  );
  w.item(
    c.caps.enforcedBy
      ? `caps: ${c.caps.processes} processes, ${Math.round(c.caps.memoryBytes / 1024 ** 2)} MiB per process tree (${c.caps.enforcedBy})`
      : `caps: not enforced (${c.caps.reason ?? "no cgroup"})`,
  );
  for (const open of c.uncontained) w.item(`open: ${open}`);
}

/** Each role's network in words: filtered through the allowlist, the host's, or none. */
function networkWords(r: RunResult): string {
  const c = r.containment!;
  const words = (access: string | boolean) =>
    access === "filtered" ? "filtered (allowlist)" : access === "host" || access === true ? "this machine's" : "none";
  const lines = [`the agent ${words(c.network.agent)}`, `setup ${words(c.network.setup)}`, `verification ${words(c.network.verify)}`];
  const n = r.network;
  if (n) lines.push(`${n.allowed.length} host(s) reached, ${n.blocked.length} blocked`);
  return lines.join(", ");
}

export function writePolicy(r: RunResult, w: ReportWriter): void {
  w.heading("Policy");
  if (r.policy.violations.length === 0) w.item("no violations");
  for (const v of r.policy.violations) w.item(`REJECTED ${v.rule}: ${v.path ? `${w.code(v.path)}: ` : ""}${w.prose(v.message)}`);
  for (const warning of r.policy.warnings)
    w.item(`warning ${warning.rule}: ${warning.path ? `${w.code(warning.path)}: ` : ""}${w.prose(warning.message)}`);
}

/** Verification as handoff ran it: the outcome, each command, the tests, the agent's claim beside it, test edits, holdouts, baseline. */
export function writeVerification(r: RunResult, w: ReportWriter, { commands = true }: { readonly commands?: boolean } = {}): void {
  if (commands) {
    if (r.verification.skipped === "no_verify") w.item("NOTHING WAS CHECKED (--no-verify): no verification command ran on this patch");
    else if (!r.verification.ran) w.item("not run");
    else w.item(r.verification.passed ? "passed" : "FAILED");
    for (const c of r.verification.commands) w.item(commandLine(c, w.code));
    if (r.verification.tests) for (const line of testEvidenceLines(r.verification.tests, w.code)) w.item(line);
    if (r.verification.summaries) for (const line of runnerSummaryLines(r.verification.summaries, w.code)) w.item(line);
  }
  const claim = r.agent.claim;
  if (claim) {
    const said = claim.tests === "pass" ? "the tests pass" : claim.tests === "fail" ? "the tests fail" : "it did not run the tests";
    w.item(`the agent claimed ${said}: "${escapeControls(plainText(claim.quote))}"`);
    if (r.verification.ran && claim.tests !== "not_run" && (claim.tests === "pass") !== (r.verification.passed === true)) {
      w.item(`the claim does NOT match handoff's own verification (${r.verification.passed ? "passed" : "failed"})`);
    }
  }
  const edits = r.verification.testEdits;
  if (edits && edits.changed.length > 0) {
    w.item(`the patch changed ${edits.changed.length} verification input(s) (--test-edits ${edits.policy}):`);
    for (const input of edits.changed) {
      const entries = input.entries?.length ? ` (${input.entries.join(", ")})` : "";
      w.item(`${input.change} ${w.code(input.path)}${entries}: ${input.why}; ${JUDGED[input.judged]}`, 1);
    }
  }
  for (const entry of edits?.notHeld ?? []) w.item(`not held: ${w.code(entry.path)}, ${escapeControls(entry.why)}`);
  const held = r.verification.heldToBase;
  if (held) {
    w.item(`held to the base (changed inputs put back): ${held.passed ? "passed" : "FAILED"}`);
    for (const c of held.commands) w.item(commandLine(c, w.code), 1);
  }
  for (const holdout of r.verification.holdouts ?? []) {
    w.item(
      `held-out patch ${escapeControls(w.localPaths ? holdout.source : basename(holdout.source))} (sha256 ${holdout.sha256.slice(0, 16)}…), applied by handoff, unseen by the agent: ${holdout.files.map(w.code).join(", ") || "no files"}`,
    );
  }
  const baseline = r.verification.baseline;
  if (baseline) {
    w.item(
      `baseline on the untouched base: ${baseline.passed ? "passed" : baseline.setupFailed ? "setup FAILED" : "failed"}${baseline.holdoutsApplied === false ? " (the held-out patches do not apply to the base alone; it ran without them)" : ""}`,
    );
    for (const t of baseline.transitions ?? [])
      w.item(`${w.code(escapeControls(t.command))}: ${STATE[t.base]} on the base, ${STATE[t.patched]} with the patch`, 1);
    for (const c of baseline.commands) w.item(commandLine(c, w.code), 1);
  }
}

export function writeTimings(r: RunResult, w: ReportWriter): void {
  w.heading("Timings");
  const cleanup = r.timings.phases.cleanup;
  w.item(
    `total ${ms(r.timings.durationMs)} to the verdict${cleanup !== undefined ? `, then ${ms(cleanup)} removing the workspaces` : ""}, started ${r.timings.startedAt}`,
  );
  w.item(
    Object.entries(r.timings.phases)
      .map(([phase, value]) => `${phase} ${ms(value)}`)
      .join(", "),
  );
}
