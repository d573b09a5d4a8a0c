import { assertNever } from "../lib/assert-never.js";
import { clip } from "../lib/clip.js";
import { type RunStatus, type TerminalReason, statusOf } from "../vocabulary/terminal-reasons.js";
import type { ExternalAgentResult } from "../agent/backend.js";
import { type CommandRecord, commandEndingOf } from "../verify/shell-commands.js";
import type { ProgramUnavailable } from "../vocabulary/events.js";
import type { BaselineOutcome, VerificationOutcome } from "../verify/verify.js";
import { type CommandTransition, commandTransitions } from "../verify/command-transitions.js";
import { type ChangedInput, type TestEditFacts, heldWhatText, judgedText } from "../verify/test-edits.js";
import type { TestEvidence } from "../verify/test-evidence.js";
import { treeChangesText } from "../verify/tree-changes.js";
import type { PolicyFinding, ViolationRule } from "../patch/rules/findings.js";
import { type PhaseFailedDetail, type VerdictDetail, agentDetail } from "./detail.js";
import { type SummaryFinding, summaryFindingText, summaryFindings } from "../verify/summary-evidence.js";

/** Everything the run learned, gathered as it went. `decideOutcome` turns it into exactly one verdict. */
export interface RunFacts {
  readonly cancelled: "approval_declined" | "interrupted" | null;
  /** Paths that changed in the source; empty when it held. */
  readonly sourceChanged: readonly string[];
  readonly agent: ExternalAgentResult | null;
  /** A write to the run directory failed (a full disk): the record of the run is incomplete. */
  readonly runDirWrite: { readonly artifact: string; readonly message: string } | null;
  /** handoff could not produce an artifact (clone, extraction, run directory). */
  readonly artifactError: { readonly detail: PhaseFailedDetail; readonly message: string } | null;
  readonly patch: { readonly empty: boolean; readonly violations: readonly PolicyFinding[] } | null;
  /** Verification of the tree as patched (with the holdouts). */
  readonly verification: VerificationOutcome | null;
  /** The same, with the changed verification inputs held to the base (`--test-edits base`); null when not run. */
  readonly held: VerificationOutcome | null;
  readonly baseline: BaselineOutcome | null;
  readonly verifyCommands: readonly string[];
  /** Which verification inputs the patch changed, and the policy they were judged by. */
  readonly testEdits: TestEditFacts | null;
  readonly holdoutCount: number;
  /** Test-level evidence (`--junit`; with `--baseline`, tests fixed, broken, vanished or newly skipped by the patch). */
  readonly tests: TestEvidence | null;
  /** `--no-verify`: the user accepted a patch nothing checks; how many `.handoff.json` verify commands that skipped. */
  readonly noVerify: { readonly configVerifySkipped: number } | null;
  /** A setup command failed in the agent's workspace, before the agent started. */
  readonly setupFailed: CommandRecord | null;
  /** A program a setup or verify command starts could not be found or started in the sandbox, before the agent. */
  readonly programUnavailable?: ProgramUnavailable | null;
  /** `--egress-blocked fail`: the hosts the agent or setup were refused (absent or null: blocked egress is only a warning). */
  readonly egressRefused?: readonly { readonly role: string; readonly host: string; readonly port: number }[] | null;
  /** How the agent reached the network (none, filtered through handoff's gate, the host's); null before containment. */
  readonly agentNetwork?: "none" | "filtered" | "host" | null;
  /**
   * The hosts the agent was refused, whatever `--egress-blocked` says; `reason` `outside_proxy` or `dns_lookup`: it
   * went around handoff's proxy (the packet watch saw it), any other: the gate refused it.
   */
  readonly agentBlocked?: readonly { readonly host: string; readonly port: number; readonly reason?: string }[];
  /** The agent went out by its model's own way (handoff's model forwarder or the tunnel to a local endpoint). */
  readonly agentUsedModelRoute?: boolean;
  /** The run's handoff died and a later start swept the run (src/run-dir/crash-result.ts); absent for a run that ended itself. */
  readonly crashed?: CrashFacts | null;
}

/** What the crash sweep knows of a run whose handoff died: where it stopped, and what the sweep found and did. */
export interface CrashFacts {
  /** The phase checkpoint.json named, or null when the run died before its first phase. */
  readonly phase: string | null;
  /** With `--attempts`: the attempt the run was in, else null or absent. */
  readonly attempt?: number | null;
  readonly ownerPid: number;
  readonly killed: number;
  readonly removed: number;
  /** Processes of the run the sweep could not kill. */
  readonly stillAlive: readonly { readonly pid: number; readonly command: string }[];
  /** Why a non-empty changes.patch was not taken as the run's patch (not the recorded one, a link), or null. */
  readonly patchNotTaken: string | null;
}

/** A run that has learned nothing yet: what the pipeline starts from, and all a crashed run has besides `crashed`. */
export const NO_FACTS: RunFacts = {
  cancelled: null,
  sourceChanged: [],
  agent: null,
  runDirWrite: null,
  artifactError: null,
  patch: null,
  verification: null,
  held: null,
  baseline: null,
  verifyCommands: [],
  testEdits: null,
  holdoutCount: 0,
  tests: null,
  noVerify: null,
  setupFailed: null,
};

export interface Verdict {
  readonly terminalReason: TerminalReason;
  readonly status: RunStatus;
  readonly detail: VerdictDetail | null;
  readonly summary: string;
  readonly hint: string | null;
}

function verdict(terminalReason: TerminalReason, detail: VerdictDetail | null, summary: string, hint: string | null = null): Verdict {
  return { terminalReason, status: statusOf(terminalReason), detail, summary, hint };
}

/**
 * The one place a run's terminal reason is decided. Order: a changed source overrides everything; then a handoff
 * that died mid-run (swept by a later start); then a run directory that could not be written whole; then the
 * user's cancel; then what happened to the agent; then handoff's own artifacts and policy; then verification.
 */
export function decideOutcome(facts: RunFacts): Verdict {
  if (facts.sourceChanged.length > 0) {
    const shown = facts.sourceChanged.slice(0, 5).join(", ") + (facts.sourceChanged.length > 5 ? ", …" : "");
    return verdict(
      "source_repository_changed",
      "source_modified",
      `the source repository changed during the run: ${shown}`,
      "something wrote to your repository while the run was going on; inspect it before trusting it or this run",
    );
  }
  if (facts.crashed) return crashedVerdict(facts.crashed);
  if (facts.runDirWrite) {
    return verdict(
      "policy_or_artifact_error",
      "artifact_write_failed",
      `handoff could not write ${facts.runDirWrite.artifact} in the run directory (${facts.runDirWrite.message}); the run stopped there and its record is incomplete`,
      "free space on the file system of the runs directory (and of the workspace directory), then run the task again",
    );
  }
  if (facts.cancelled) {
    return facts.cancelled === "approval_declined"
      ? verdict("user_cancelled", "approval_declined", "approval declined: the agent did not run")
      : verdict("user_cancelled", "interrupted", "handoff was interrupted; the run stopped and its artifacts were kept");
  }
  if (facts.programUnavailable) return programUnavailableVerdict(facts.programUnavailable);
  if (facts.setupFailed) {
    const failed = facts.setupFailed;
    const ending = commandEndingOf(failed);
    if (ending.kind === "program_unavailable") return startFailedVerdict(failed, ending);
    if (ending.kind === "spawn_failed") return commandNotStarted(failed, ending.error);
    const timedOut = ending.kind === "timed_out";
    return verdict(
      "verification_failed",
      "setup_failed",
      `setup command \`${failed.command}\` ${timedOut ? "timed out" : "failed"} on the base before the agent started`,
      timedOut
        ? "raise --setup-timeout if setup is slow (see test.log)"
        : "see test.log; fix the setup command or the environment, then run again",
    );
  }
  const agent = facts.agent;
  if (agent) {
    const outcome = agent.outcome;
    switch (outcome.kind) {
      case "timed_out":
        switch (outcome.limit) {
          case "idle":
            return verdict(
              "timeout",
              "idle_timeout",
              "the agent was silent for longer than --idle-timeout and was stopped",
              "raise --idle-timeout if the agent needs long silent stretches",
            );
          case "wall":
            return verdict("timeout", "wall_timeout", "the agent ran past --timeout and was stopped", "raise --timeout or split the task");
          case "total":
            return verdict(
              "timeout",
              "total_timeout",
              "the run reached --total-timeout while the agent was working and the agent was stopped",
              "raise --total-timeout or allow fewer --attempts",
            );
          default:
            return assertNever(outcome.limit);
        }
      case "cancelled":
        return verdict("user_cancelled", "interrupted", "the agent was cancelled");
      case "failed":
        return verdict(
          "external_agent_error",
          agentDetail(outcome.detail),
          outcome.message,
          unreachableHint(outcome, facts) ?? outcome.hint,
        );
      case "finished":
        break;
      default:
        return assertNever(outcome);
    }
  }
  if (facts.egressRefused && facts.egressRefused.length > 0) {
    const hosts = [...new Set(facts.egressRefused.map((blocked) => `${blocked.host}:${blocked.port}`))];
    const shown = hosts.slice(0, 5).join(", ") + (hosts.length > 5 ? ", …" : "");
    return verdict(
      "policy_or_artifact_error",
      "egress_blocked",
      `the agent or a setup command tried to reach ${hosts.length} host(s) that were blocked (through the proxy or around it): ${shown}; --egress-blocked fail ends the run`,
      "read the task and the repository for instructions to call out (a prompt injection?); allow a host the task needs with --allow-net HOST",
    );
  }
  if (facts.artifactError) {
    return verdict(
      "policy_or_artifact_error",
      facts.artifactError.detail,
      facts.artifactError.message,
      "see events.jsonl for the failing step",
    );
  }
  if (!facts.patch) return verdict("policy_or_artifact_error", "no_patch", "no patch could be extracted");
  const first = facts.patch.violations[0];
  if (first) {
    const count = facts.patch.violations.length;
    return verdict(
      "policy_or_artifact_error",
      // Violations carry violation rules (docs/gates.md "Violations"); a warning's rule never rejects a patch.
      first.rule as ViolationRule,
      `the patch was rejected: ${first.rule}${first.path ? ` at ${first.path}` : ""} (${first.message})${count > 1 ? `, and ${count - 1} more` : ""}`,
      "the patch is saved in changes.patch for review; every violation is listed in result.json",
    );
  }
  if (facts.patch.empty) return verdict("no_changes", null, "the agent finished without changing anything");
  return decideVerification(facts);
}

/**
 * A run whose handoff died (kill -9, OOM, power) and that a later start swept: cancelled, since nobody decided it,
 * with detail runner_crashed. Nothing of it was verified; the hint names a process the sweep could not kill.
 */
function crashedVerdict(crash: CrashFacts): Verdict {
  const when =
    (crash.phase ? `during the ${crash.phase} phase` : "before its first phase") + (crash.attempt ? ` of attempt ${crash.attempt}` : "");
  const done: string[] = [];
  if (crash.killed > 0) done.push(`${crash.killed} leftover process(es) killed`);
  if (crash.removed > 0) done.push(`${crash.removed} directory(ies) removed`);
  if (crash.attempt === 2) done.push("attempt 1 is in attempts/1/");
  else if (crash.attempt && crash.attempt > 2) done.push(`attempts 1 to ${crash.attempt - 1} are in attempts/`);
  const alive = crash.stillAlive.map((s) => `${s.pid} (${s.command})`).join(", ");
  return verdict(
    "user_cancelled",
    "runner_crashed",
    `handoff was stopped ${when} (pid ${crash.ownerPid}) and did not finish; swept by a later handoff start${done.length > 0 ? `; ${done.join(", ")}` : ""}${crash.patchNotTaken ? `; ${crash.patchNotTaken}: not taken as its patch` : ""}`,
    alive
      ? `these processes of the run could not be killed: ${alive}; stop them yourself, then run the task again`
      : "nothing of this run was verified; run the task again",
  );
}

/** The shell for a setup or verify command could not be started: handoff's failure to run it, not a test result. */
function commandNotStarted(failed: CommandRecord, error: string): Verdict {
  return verdict(
    "policy_or_artifact_error",
    "command_not_started",
    `${failed.phase} command \`${failed.command.slice(0, 200)}\` could not be started: ${error}`,
    "see test.log; a command must be under 128 KiB and hold no NUL byte",
  );
}

/** The sandbox cannot start a program the commands need, found before the agent ran: nothing was judged. */
function programUnavailableVerdict(unavailable: ProgramUnavailable): Verdict {
  const where = `${unavailable.phase} command \`${unavailable.command.slice(0, 200)}\``;
  const what =
    unavailable.problem === "not_found"
      ? `\`${unavailable.program}\` (in ${where}) is not found on the PATH the sandbox sees`
      : `\`${unavailable.program}\` (in ${where}, found at ${unavailable.resolved}) cannot start in the sandbox: ${unavailable.said}`;
  return verdict(
    "environment_unavailable",
    `${unavailable.phase}_command_unavailable`,
    `${what}; the agent did not run`,
    exposeHint(unavailable.tried ?? []),
  );
}

/** A command's own program could not start (exit 126/127 in its shell's words): the environment, not the patch. */
function startFailedVerdict(record: CommandRecord, failure: { readonly program: string; readonly said: string }): Verdict {
  const phase = record.phase.includes("setup") ? "setup" : "verify";
  return verdict(
    "environment_unavailable",
    `${phase}_command_unavailable`,
    `\`${failure.program}\` could not start in ${phase} command \`${record.command.slice(0, 200)}\` (exit ${record.exitCode}: ${clip(failure.said, 300)}): the environment could not run it, which says nothing about the patch`,
    exposeHint([]),
  );
}

function exposeHint(tried: readonly string[]): string {
  return tried.length > 0
    ? `it needs ${tried.slice(0, 3).join(", ")}, hidden in the sandbox: \`--expose ${tried[0]}\` shows it read-only (or \`expose\` in .handoff.json); see docs/containment.md`
    : "install the program where the sandbox sees it, or show its directory with `--expose PATH` (read-only; see docs/containment.md); `--sandbox none` runs without the sandbox";
}

/** Tests a report listed on one side; null when no report was read there. */
const total = (side: TestEvidence["base"]) => (side ? side.passed + side.failed + side.skipped : null);
/** Transitions exist only when both sides' reports were read (`--junit` with `--baseline`). */
const compared = (tests: TestEvidence | null): tests is TestEvidence & { base: NonNullable<TestEvidence["base"]> } =>
  tests !== null && tests.base !== null && tests.patched !== null;
const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;
const shownTests = (list: TestEvidence["fixed"]) =>
  `${list.names.slice(0, 3).join("; ")}${list.count > 3 ? `; and ${list.count - 3} more` : ""}`;

/** `--no-verify`: verified because the user asked for no check, and saying so louder than anything else. */
function notVerified(noVerify: NonNullable<RunFacts["noVerify"]>): Verdict {
  const skipped = noVerify.configVerifySkipped;
  return verdict(
    "verified",
    "nothing_checked",
    `NOTHING WAS CHECKED (--no-verify): the patch is valid and applies to the base commit, but no verification command ran${skipped > 0 ? ` (the ${skipped} verify command${skipped === 1 ? "" : "s"} in .handoff.json ${skipped === 1 ? "was" : "were"} skipped)` : ""}`,
    "review changes.patch yourself before applying it; run again with --verify CMD to have handoff run your tests",
  );
}

function decideVerification(facts: RunFacts): Verdict {
  const outcome = facts.verification;
  if (!outcome) return verdict("policy_or_artifact_error", "verification_not_run", "verification did not run");
  if (outcome.kind !== "passed") return failedVerification(outcome, facts, "patched");
  if (facts.held && facts.held.kind !== "passed") return failedVerification(facts.held, facts, "held");
  const tests = facts.tests;
  const lost = compared(tests) ? tests.vanished.count + tests.newlySkipped.count : 0;
  if (tests && lost > 0 && facts.testEdits?.policy !== "allow") {
    const which = [
      ...tests.vanished.names.map((name) => `${name} (missing)`),
      ...tests.newlySkipped.names.map((name) => `${name} (skipped)`),
    ];
    return verdict(
      "verification_failed",
      "tests_vanished",
      `${plural(lost, "test")} that passed on the base ${lost === 1 ? "is" : "are"} missing or skipped after the patch: ${which.slice(0, 3).join("; ")}${lost > 3 ? `; and ${lost - 3} more` : ""}`,
      "a patch must not make passing tests disappear; to judge the task by tests the agent never sees, give them with --holdout-patch FILE; a task that really removes tests: review the removal and run again with --test-edits allow",
    );
  }
  const baseTotal = total(tests?.base ?? null) ?? 0;
  const reportGone = tests !== null && baseTotal > 0 && tests.patched === null;
  if (reportGone && facts.testEdits?.policy !== "allow") {
    return verdict(
      "verification_failed",
      "tests_vanished",
      `the base's JUnit report listed ${plural(baseTotal, "test")}; with the patch there is no report to read, so none of them can be shown to pass`,
      "see verification.tests.diagnostics in result.json; a patch must not stop the tests from reporting",
    );
  }
  const shrank = runnerSummaryFindings(facts);
  const first = shrank[0];
  if (first && facts.testEdits?.policy !== "allow") {
    return verdict(
      "verification_failed",
      first.kind === "failed_but_exit_0" ? "summary_contradicts_exit" : "summary_tests_vanished",
      `${summaryFindingText(first)}${shrank.length > 1 ? `; and ${shrank.length - 1} more (result.json verification.summaries)` : ""}`,
      "a patch must not make tests disappear, be skipped, pass with failures, or stop the test runner from reporting; to judge by tests the agent never sees: --holdout-patch FILE (--junit compares test by test); a task that really removes or skips tests: review it and run again with --test-edits allow",
    );
  }
  return verifiedVerdict(facts, lost, shrank);
}

/** Without `--junit`, the runners' own summaries are the evidence (src/verify/summary-evidence.ts); with it, JUnit's. */
function runnerSummaryFindings(facts: RunFacts): SummaryFinding[] {
  if (facts.tests !== null) return [];
  const commands = (outcome: VerificationOutcome | null) => (outcome && "commands" in outcome ? outcome.commands : null);
  return summaryFindings({
    verifyCommands: facts.verifyCommands,
    patched: commands(facts.verification),
    held: commands(facts.held),
    base: facts.baseline?.commands ?? null,
  });
}

function verifiedVerdict(facts: RunFacts, lost: number, shrank: readonly SummaryFinding[] = []): Verdict {
  const count = facts.verifyCommands.length;
  if (facts.noVerify) return notVerified(facts.noVerify);
  // Options without a verify command and without --no-verify are refused (options.ts): never a silent pass.
  if (count === 0)
    return verdict("policy_or_artifact_error", "verification_not_run", "no verification command ran, and --no-verify was not given");
  const parts = [`the patch passed all ${plural(count, "verification command")}`];
  if (facts.holdoutCount > 0) parts[0] += ` with ${plural(facts.holdoutCount, "held-out patch")} applied`;
  const fixed = transitions(facts).filter((t) => t.base === "red" && t.patched === "green");
  if (fixed.length > 0) parts.push(`it fixed ${fixed.map((t) => `\`${t.command}\``).join(", ")} (red on the base, green now)`);
  if (compared(facts.tests) && facts.tests.fixed.count > 0)
    parts.push(`${plural(facts.tests.fixed.count, "test")} went from failing to passing`);
  const edits = facts.testEdits;
  const judged = edits && edits.changed.length > 0 ? judgedText(edits, facts.held?.kind === "passed") : null;
  if (judged !== null) parts.push(judged);
  if (lost > 0)
    parts.push(
      `WARNING: ${plural(lost, "test")} that passed on the base ${lost === 1 ? "is" : "are"} missing or skipped (allowed by --test-edits allow)`,
    );
  for (const finding of shrank) parts.push(`WARNING: ${summaryFindingText(finding)} (allowed by --test-edits allow)`);
  return verdict("verified", null, parts.join("; "));
}

function transitions(facts: RunFacts): CommandTransition[] {
  if (!facts.baseline || !facts.verification || !("commands" in facts.verification)) return [];
  return commandTransitions(facts.verifyCommands, facts.baseline, facts.verification.commands);
}

/** A verification run that did not pass, as patched or held to the base: one verdict, worded from what the base did. */
function failedVerification(outcome: Exclude<VerificationOutcome, { kind: "passed" }>, facts: RunFacts, run: "patched" | "held"): Verdict {
  switch (outcome.kind) {
    case "command_failed": {
      const failed = outcome.failed;
      const ending = commandEndingOf(failed);
      switch (ending.kind) {
        case "spawn_failed":
          return commandNotStarted(failed, ending.error);
        case "program_unavailable":
          return startFailedVerdict(failed, ending);
        case "timed_out":
          return verdict(
            "verification_failed",
            "command_timed_out",
            `\`${failed.command}\` timed out${run === "held" ? " (held to the base)" : ""}`,
            "raise --verify-timeout if the command is slow (see test.log)",
          );
        case "cap_hit": {
          const cap = ending.cap === "memory" ? "memory" : "process";
          return verdict(
            "verification_failed",
            "resource_cap_hit",
            `\`${failed.command}\` ran into the ${cap} cap`,
            `raise --max-${cap === "memory" ? "memory" : "processes"} if the tests really need more (see test.log)`,
          );
        }
        case "cancelled":
        case "killed_by_signal":
        case "exited": {
          const exit = `exit ${failed.exitCode ?? failed.signal}`;
          if (run === "held") return failedHeldToBase(facts, `\`${failed.command}\` failed (${exit})`);
          return failedAgainstBase(facts, failed.command, exit);
        }
        default:
          return assertNever(ending);
      }
    }
    case "setup_failed": {
      const ending = commandEndingOf(outcome.failed);
      if (ending.kind === "spawn_failed") return commandNotStarted(outcome.failed, ending.error);
      if (ending.kind === "program_unavailable") return startFailedVerdict(outcome.failed, ending);
      if (run === "held") return failedHeldToBase(facts, `setup command \`${outcome.failed.command}\` failed`);
      if (facts.baseline?.setupFailed) {
        return verdict(
          "verification_failed",
          "environment_broken",
          `setup command \`${outcome.failed.command}\` fails with the patch, and already failed on the untouched base: the environment may be broken`,
          "fix the setup command or the environment first (see test.log)",
        );
      }
      return verdict(
        "verification_failed",
        "setup_failed",
        `setup command \`${outcome.failed.command}\` ${ending.kind === "timed_out" ? "timed out" : "failed"}`,
        ending.kind === "timed_out"
          ? "raise --setup-timeout if setup is slow (see test.log); setup runs in a fresh checkout with the patch applied"
          : "see test.log; setup runs in a fresh checkout with the patch applied",
      );
    }
    case "holdout_failed":
      return verdict(
        "verification_failed",
        "holdout_does_not_apply",
        `the held-out patch ${outcome.source} does not apply on top of the agent's patch${run === "held" ? " held to the base" : ""}: ${outcome.message}`,
        "the agent's patch changes the lines the held-out checks touch; see result.json verification.holdouts for the files they cover",
      );
    case "patch_changed": {
      const { message, hint } = treeChangesText(outcome.changes);
      return verdict("verification_failed", "verification_changed_patch", message, hint);
    }
    case "apply_failed":
      return verdict(
        "policy_or_artifact_error",
        "patch_does_not_apply",
        `the extracted patch does not apply to a fresh checkout: ${outcome.message}`,
      );
    case "round_trip_mismatch":
      return verdict("policy_or_artifact_error", "round_trip_mismatch", outcome.message);
    case "cancelled":
      return verdict("user_cancelled", "interrupted", "handoff was interrupted during verification");
    default:
      return assertNever(outcome);
  }
}

/** The exit code of a verify command on the base (the first with that text). */
function baselineExit(baseline: BaselineOutcome, command: string): number | null {
  return baseline.commands.find((record) => record.phase === "baseline" && record.command === command)?.exitCode ?? null;
}

/** Passed as patched, failed once the verification inputs it changed were put back: the patch changed its own judge. */
function failedHeldToBase(facts: RunFacts, what: string): Verdict {
  const edits = facts.testEdits!;
  return verdict(
    "verification_failed",
    "failed_held_to_base",
    `the patch passed as patched, but not held to the base's ${heldWhatText(edits.changed)}: ${what}`,
    heldHint(edits.changed),
  );
}

/**
 * What the patch did to the inputs, then the ways out that keep the protection: a held-out patch, a file the task
 * must change named with --allow-config; --test-edits allow, which switches the protection off, comes last.
 */
function heldHint(changed: readonly ChangedInput[]): string {
  const did = changed.map((input) => input.did ?? `changes ${input.path}`);
  const shown = did.length > 4 ? [...did.slice(0, 4), `${did.length - 4} more`] : did;
  const first = changed[0]?.path ?? "PATH";
  return `the patch ${shown.join("; ")}. Held to the base, verification fails. If the task really must change ${changed.length === 1 ? "this file" : "one of these files"}, name it: --allow-config ${first}; to judge by tests the agent never sees: --holdout-patch FILE; to hold more files: --protect GLOB; only after reviewing the change yourself: --test-edits allow`;
}

/** A verify command failed as patched: with `--baseline`, worded from what the same command did on the untouched base. */
function failedAgainstBase(facts: RunFacts, command: string, exit: string): Verdict {
  const baseline = facts.baseline;
  const generic = verdict("verification_failed", "command_failed", `\`${command}\` failed (${exit})`, "see test.log");
  if (!baseline) return generic;
  if (baseline.setupFailed) {
    return verdict(
      "verification_failed",
      "environment_broken",
      `\`${command}\` failed (${exit}), and the setup already failed on the untouched base: the environment may be broken`,
      "fix the setup or the environment first (see test.log)",
    );
  }
  const transition = transitions(facts).find((t) => t.command === command && t.patched === "red");
  if (!transition || transition.base === "not_run") return generic;
  if (transition.base === "green") {
    return verdict(
      "verification_failed",
      "regression",
      `the patch broke \`${command}\` (green on the base, red now: ${exit})`,
      "see test.log for what the patch broke",
    );
  }
  const tests = facts.tests;
  if (compared(tests) && tests.fixed.count > 0) {
    return verdict(
      "verification_failed",
      "still_failing",
      `\`${command}\` is still red, as on the base, though ${plural(tests.fixed.count, "test")} now pass (${shownTests(tests.fixed)})`,
      "the patch fixed part of the failures; see test.log for the rest",
    );
  }
  // A broken environment fails before any test runs, or fails them all; a wrong fix leaves the other tests passing.
  const noTestRan = tests !== null && (total(tests.base) ?? 0) === 0 && (total(tests.patched) ?? 0) === 0;
  const notFound = [126, 127].includes(baselineExit(baseline, command) ?? -1) && /^exit 12[67]$/u.test(exit);
  if (noTestRan || notFound || (compared(tests) && tests.base.passed === 0)) {
    const why = noTestRan
      ? "no test ran on either"
      : notFound
        ? "its program is not found or not executable on either"
        : "every test fails on the base";
    return verdict(
      "verification_failed",
      "environment_suspect",
      `\`${command}\` is red on the base and still red with the patch, and ${why}: the environment may be broken`,
      "run the command on the untouched base by hand (see the baseline's output in test.log) and fix the environment or --setup first",
    );
  }
  if (compared(tests)) {
    return verdict(
      "verification_failed",
      "still_failing",
      `\`${command}\` is still red, as on the base: the patch fixed none of its failing tests`,
      "the patch does not do what the tests ask; see test.log",
    );
  }
  return verdict(
    "verification_failed",
    "still_failing",
    `\`${command}\` is still red, as on the base (${exit}): the patch did not make it pass`,
    "see test.log; if the base itself should be green, the environment may be broken (with --junit, handoff tells the two apart per test)",
  );
}

/**
 * An agent that could not reach its model through the filtered network: the hosts the gate refused it, or (none
 * refused) a CLI that did not use the proxy handoff gave it. Null where the CLI's own hint stands.
 */
function unreachableHint(outcome: { readonly detail: string }, facts: RunFacts): string | null {
  if (outcome.detail !== "network_unreachable" || facts.agentNetwork !== "filtered") return null;
  // Its requests went out to its model and the provider did not answer: the backend's own hint says so, and what
  // else the gate refused it (a CLI's update checks) is beside the point.
  if (facts.agentUsedModelRoute) return null;
  const blocked = facts.agentBlocked ?? [];
  const around = (reason: string | undefined) => reason === "outside_proxy" || reason === "dns_lookup";
  const hosts = shownHosts(blocked.filter((entry) => !around(entry.reason)));
  if (hosts) {
    return `the sandbox's network is filtered and handoff's gate refused the agent ${hosts}: allow its model's host with --allow-net HOST (or give it your network with --allow-net '*')`;
  }
  const direct = shownHosts(blocked.filter((entry) => around(entry.reason)));
  // Allowing a host would not help a CLI that does not ask the proxy for it.
  if (direct)
    return `the sandbox's network is filtered and the agent went around handoff's gate (it tried ${direct} directly, refused): its CLI may not use the proxy handoff gives it (HTTPS_PROXY); give it your network with --allow-net '*'`;
  return "the sandbox's network is filtered and the agent asked handoff's gate for nothing: its CLI may not use the proxy handoff gives it (HTTPS_PROXY); give it your network with --allow-net '*'";
}

/** `a.example:443, b.example:53, …`: the first five, or null for none. */
function shownHosts(blocked: readonly { readonly host: string; readonly port: number }[]): string | null {
  const hosts = [...new Set(blocked.map((entry) => `${entry.host}:${entry.port}`))];
  if (hosts.length === 0) return null;
  return hosts.slice(0, 5).join(", ") + (hosts.length > 5 ? ", …" : "");
}
