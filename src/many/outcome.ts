import { assertNever } from "../lib/assert-never.js";
import { EXIT_CODES, TERMINAL_REASONS, type TerminalReason } from "../vocabulary/terminal-reasons.js";

/**
 * How one task of a batch ended: a run's terminal reason, or one of the three ways a task ends without a verdict of
 * its own: `invalid_task` (its line failed validation, or the run refused it as bad input before anything was
 * created), `not_started` (the batch was interrupted first), `internal_error` (handoff or a worker failed on it).
 */
export const TASK_OUTCOMES = [...TERMINAL_REASONS, "invalid_task", "not_started", "internal_error"] as const;
export type TaskOutcome = (typeof TASK_OUTCOMES)[number];

/** The exit code each outcome stands for: a run's own code, 2 for bad input, 130 for not started, 70 for a bug. */
export function outcomeExitCode(outcome: TaskOutcome): number {
  switch (outcome) {
    case "invalid_task":
      return 2;
    case "not_started":
      return 130;
    case "internal_error":
      return 70;
    default:
      return EXIT_CODES[outcome as TerminalReason];
  }
}

/**
 * Most severe first: what a batch's exit code is when not every task verified (docs/many-tasks.md). A changed source
 * crossed the safety boundary; an interrupted batch did not do what was asked; handoff's own failure and bad input
 * come before what an agent did; a verification that ran and failed before a task with nothing to show.
 */
export const SEVERITY: readonly TaskOutcome[] = [
  "source_repository_changed",
  "user_cancelled",
  "not_started",
  "internal_error",
  "invalid_task",
  "environment_unavailable",
  "policy_or_artifact_error",
  "external_agent_error",
  "timeout",
  "verification_failed",
  "no_changes",
  "verified",
];

/** The most severe of the outcomes (verified for none). */
export function worstOutcome(outcomes: Iterable<TaskOutcome>): TaskOutcome {
  let worst: TaskOutcome = "verified";
  for (const outcome of outcomes) if (SEVERITY.indexOf(outcome) < SEVERITY.indexOf(worst)) worst = outcome;
  return worst;
}

/** 0 only when every task verified; otherwise the code of the most severe outcome. */
export function batchExitCode(outcomes: Iterable<TaskOutcome>): number {
  return outcomeExitCode(worstOutcome(outcomes));
}

/** How a JUnit test case shows an outcome: passed, failed (the agent's work did not pass), error, or skipped. */
export function junitKind(outcome: TaskOutcome): "passed" | "failure" | "error" | "skipped" {
  switch (outcome) {
    case "verified":
      return "passed";
    case "verification_failed":
    case "no_changes":
      return "failure";
    case "source_repository_changed":
    case "external_agent_error":
    case "policy_or_artifact_error":
    case "environment_unavailable":
    case "timeout":
    case "invalid_task":
    case "internal_error":
      return "error";
    case "user_cancelled":
    case "not_started":
      return "skipped";
    default:
      return assertNever(outcome);
  }
}
