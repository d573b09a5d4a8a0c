import { assertNever } from "../lib/assert-never.js";

/** How a run ends: exactly one terminal reason, its status and its exit code (the decider is src/verdict/decide.ts). */
export const TERMINAL_REASONS = [
  "verified",
  "verification_failed",
  "no_changes",
  "source_repository_changed",
  "external_agent_error",
  "policy_or_artifact_error",
  "environment_unavailable",
  "timeout",
  "user_cancelled",
] as const;
export type TerminalReason = (typeof TERMINAL_REASONS)[number];

export type RunStatus = "completed" | "failed" | "cancelled";

export const EXIT_CODES: Readonly<Record<TerminalReason, number>> = {
  verified: 0,
  verification_failed: 1,
  no_changes: 3,
  policy_or_artifact_error: 4,
  source_repository_changed: 5,
  external_agent_error: 6,
  environment_unavailable: 7,
  timeout: 124,
  user_cancelled: 130,
};

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
    case "environment_unavailable":
    case "timeout":
      return "failed";
    default:
      return assertNever(reason);
  }
}
