import { assertNever } from "./assert-never.js";
import type { ExternalAgentResult } from "./backend.js";
import type { PolicyFinding } from "./findings.js";
import type { CommandRecord } from "./shell-commands.js";
import type { BaselineOutcome, VerificationOutcome } from "./verify.js";

export const TERMINAL_REASONS = [
  "verified",
  "verification_failed",
  "no_changes",
  "source_repository_changed",
  "external_agent_error",
  "policy_or_artifact_error",
  "timeout",
  "user_cancelled",
] as const;
export type TerminalReason = (typeof TERMINAL_REASONS)[number];

export type RunStatus = "completed" | "failed" | "cancelled";

/** Everything the run learned, gathered as it went. `decideOutcome` turns it into exactly one verdict. */
export interface RunFacts {
  readonly cancelled: "approval_declined" | "interrupted" | null;
  /** Paths that changed in the source; empty when it held. */
  readonly sourceChanged: readonly string[];
  readonly agent: ExternalAgentResult | null;
  /** A write to the run directory failed (a full disk): the record of the run is incomplete. */
  readonly runDirWrite: { readonly artifact: string; readonly message: string } | null;
  /** handoff could not produce an artifact (clone, extraction, run directory). */
  readonly artifactError: { readonly detail: string; readonly message: string } | null;
  readonly patch: { readonly empty: boolean; readonly violations: readonly PolicyFinding[] } | null;
  readonly verification: VerificationOutcome | null;
  readonly baseline: BaselineOutcome | null;
  readonly verifyCommandCount: number;
  /** `--no-verify`: the user accepted a patch nothing checks; how many `.handoff.json` verify commands that skipped. */
  readonly noVerify: { readonly configVerifySkipped: number } | null;
  /** A setup command failed in the agent's workspace, before the agent started. */
  readonly setupFailed: CommandRecord | null;
}

export interface Verdict {
  readonly terminalReason: TerminalReason;
  readonly status: RunStatus;
  readonly detail: string | null;
  readonly summary: string;
  readonly hint: string | null;
}

export const EXIT_CODES: Readonly<Record<TerminalReason, number>> = {
  verified: 0,
  verification_failed: 1,
  no_changes: 3,
  policy_or_artifact_error: 4,
  source_repository_changed: 5,
  external_agent_error: 6,
  timeout: 124,
  user_cancelled: 130,
};

function verdict(terminalReason: TerminalReason, detail: string | null, summary: string, hint: string | null = null): Verdict {
  return { terminalReason, status: statusOf(terminalReason), detail, summary, hint };
}

export function statusOf(reason: TerminalReason): RunStatus {
  switch (reason) {
    case "verified":
    case "verification_failed":
    case "no_changes":
      return "completed";
    case "user_cancelled":
      return "cancelled";
    case "source_repository_changed":
    case "external_agent_error":
    case "policy_or_artifact_error":
    case "timeout":
      return "failed";
    default:
      return assertNever(reason);
  }
}

/**
 * The one place a run's terminal reason is decided. Order: a changed source overrides everything; then a run
 * directory that could not be written whole; then the user's cancel; then what happened to the agent; then
 * handoff's own artifacts and policy; then verification.
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
  if (facts.setupFailed?.spawnError) return commandNotStarted(facts.setupFailed);
  if (facts.setupFailed) {
    return verdict(
      "verification_failed",
      "setup_failed",
      `setup command \`${facts.setupFailed.command}\` failed in the clone before the agent started`,
      "see test.log; fix the setup command or the environment, then run again",
    );
  }
  const agent = facts.agent;
  if (agent) {
    const outcome = agent.outcome;
    switch (outcome.kind) {
      case "timed_out":
        return outcome.limit === "idle"
          ? verdict("timeout", "idle_timeout", "the agent was silent for longer than --idle-timeout and was stopped", "raise --idle-timeout if the agent needs long silent stretches")
          : verdict("timeout", "wall_timeout", "the agent ran past --timeout and was stopped", "raise --timeout or split the task");
      case "cancelled":
        return verdict("user_cancelled", "interrupted", "the agent was cancelled");
      case "failed":
        return verdict("external_agent_error", outcome.detail, outcome.message, outcome.hint);
      case "finished":
        break;
      default:
        return assertNever(outcome);
    }
  }
  if (facts.artifactError) {
    return verdict("policy_or_artifact_error", facts.artifactError.detail, facts.artifactError.message, "see events.jsonl for the failing step");
  }
  if (!facts.patch) return verdict("policy_or_artifact_error", "no_patch", "no patch could be extracted");
  const first = facts.patch.violations[0];
  if (first) {
    const count = facts.patch.violations.length;
    return verdict(
      "policy_or_artifact_error",
      first.rule,
      `the patch was rejected: ${first.rule}${first.path ? ` at ${first.path}` : ""} (${first.message})${count > 1 ? `, and ${count - 1} more` : ""}`,
      "the patch is saved in changes.patch for review; every violation is listed in result.json",
    );
  }
  if (facts.patch.empty) return verdict("no_changes", null, "the agent finished without changing anything");
  return decideVerification(facts.verification, facts.baseline, facts.verifyCommandCount, facts.noVerify);
}

/** The shell for a setup or verify command could not be started: handoff's failure to run it, not a test result. */
function commandNotStarted(failed: CommandRecord): Verdict {
  return verdict(
    "policy_or_artifact_error",
    "command_not_started",
    `${failed.phase} command \`${failed.command.slice(0, 200)}\` could not be started: ${failed.spawnError}`,
    "see test.log; a command must be under 128 KiB and hold no NUL byte",
  );
}

/** `--no-verify`: verified because the user asked for no check, and saying so louder than anything else. */
function notVerified(noVerify: NonNullable<RunFacts["noVerify"]>): Verdict {
  const skipped = noVerify.configVerifySkipped;
  return verdict(
    "verified",
    "not_verified",
    `NOTHING WAS CHECKED (--no-verify): the patch is valid and applies to the base commit, but no verification command ran${skipped > 0 ? ` (the ${skipped} verify command${skipped === 1 ? "" : "s"} in .handoff.json ${skipped === 1 ? "was" : "were"} skipped)` : ""}`,
    "review changes.patch yourself before applying it; run again with --verify CMD to have handoff run your tests",
  );
}

function decideVerification(outcome: VerificationOutcome | null, baseline: BaselineOutcome | null, verifyCount: number, noVerify: RunFacts["noVerify"]): Verdict {
  if (!outcome) return verdict("policy_or_artifact_error", "verification_not_run", "verification did not run");
  const baseRed = baseline !== null && !baseline.passed;
  switch (outcome.kind) {
    case "passed":
      if (noVerify) return notVerified(noVerify);
      // Options without a verify command and without --no-verify are refused (options.ts): never a silent pass.
      if (verifyCount === 0) return verdict("policy_or_artifact_error", "verification_not_run", "no verification command ran, and --no-verify was not given");
      return verdict("verified", null, `the patch passed all ${verifyCount} verification command${verifyCount === 1 ? "" : "s"}`);
    case "command_failed": {
      const failed = outcome.failed;
      if (failed.spawnError) return commandNotStarted(failed);
      if (baseRed) {
        return verdict("verification_failed", "baseline_failed", `\`${failed.command}\` fails with the patch, and already failed on the untouched base commit`, "the environment or the base is broken; fix that first (see test.log)");
      }
      if (failed.timedOut) return verdict("verification_failed", "command_timed_out", `\`${failed.command}\` timed out`, "raise --verify-timeout if the command is slow (see test.log)");
      if (failed.limitHit) {
        const cap = failed.limitHit === "memory" ? "memory" : "process";
        return verdict("verification_failed", "resource_cap_hit", `\`${failed.command}\` ran into the ${cap} cap`, `raise --max-${cap === "memory" ? "memory" : "processes"} if the tests really need more (see test.log)`);
      }
      return verdict("verification_failed", "command_failed", `\`${failed.command}\` failed (exit ${failed.exitCode ?? failed.signal})`, "see test.log");
    }
    case "setup_failed":
      if (outcome.failed.spawnError) return commandNotStarted(outcome.failed);
      return verdict("verification_failed", "setup_failed", `setup command \`${outcome.failed.command}\` failed`, "see test.log; setup runs in a fresh checkout with the patch applied");
    case "patch_changed":
      return verdict("verification_failed", "verification_changed_patch", "the verification commands changed tracked files: the tested tree is not the patch", "make verification read-only (no formatters or generators in --verify)");
    case "apply_failed":
      return verdict("policy_or_artifact_error", "patch_does_not_apply", `the extracted patch does not apply to a fresh checkout: ${outcome.message}`);
    case "round_trip_mismatch":
      return verdict("policy_or_artifact_error", "round_trip_mismatch", outcome.message);
    case "cancelled":
      return verdict("user_cancelled", "interrupted", "handoff was interrupted during verification");
    default:
      return assertNever(outcome);
  }
}
