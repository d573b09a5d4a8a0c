import { AGENT_FAILURE_DETAILS } from "../agent/cli-failures.js";
import type { ViolationRule } from "../patch/rules/findings.js";
import type { Phase } from "../vocabulary/events.js";

/**
 * Every `detail` a verdict can carry: docs/gates.md "Detail values" lists exactly these (test/detail-values.test.ts).
 * A new value is a member here and a row there.
 */

/** How the agent ended, as the ladder (src/agent/agent-ending.ts) and the CLI backends' streams name it. */
export const AGENT_DETAILS = [
  ...AGENT_FAILURE_DETAILS,
  "killed_by_signal",
  "agent_not_started",
  "cannot_resume",
  "backend_crashed",
] as const;
/** The agent exited non-zero and its stream left the verdict to the exit code (null: Node gave no exit status). */
export type ExitCodeDetail = `exit_code_${number | null}`;
export type AgentDetail = (typeof AGENT_DETAILS)[number] | ExitCodeDetail;

export function exitCodeDetail(code: number | null): ExitCodeDetail {
  return `exit_code_${code}`;
}

/** The phases a throw can end (the cleanup phase comes after the verdict and never changes it). */
export type FailablePhase = Exclude<Phase, "cleanup">;
/** A record, not a list, so a new phase cannot be left out. */
const FAILABLE: Record<FailablePhase, true> = {
  approval: true,
  snapshot: true,
  clone: true,
  environment: true,
  "setup-programs": true,
  "verify-programs": true,
  setup: true,
  workspace: true,
  "resume-patch": true,
  agent: true,
  extract: true,
  baseline: true,
  verify: true,
  held: true,
  recheck: true,
  finish: true,
};
export const FAILABLE_PHASES = Object.keys(FAILABLE) as FailablePhase[];
/** handoff itself failed in that phase (a git call failed, a write failed): src/run/run-recorder.ts. */
export type PhaseFailedDetail = `${FailablePhase}_failed`;

export function phaseFailedDetail(phase: FailablePhase): PhaseFailedDetail {
  return `${phase}_failed`;
}

/** The details decideOutcome (src/verdict/decide.ts) words itself, apart from the agent's, a rule's and a phase's. */
export const RUN_DETAILS = [
  "source_modified",
  "runner_crashed",
  "artifact_write_failed",
  "approval_declined",
  "interrupted",
  "idle_timeout",
  "wall_timeout",
  "total_timeout",
  "setup_failed",
  "setup_command_unavailable",
  "verify_command_unavailable",
  "command_not_started",
  "no_patch",
  "verification_not_run",
  "nothing_checked",
  "command_failed",
  "command_timed_out",
  "resource_cap_hit",
  "failed_held_to_base",
  "tests_vanished",
  "summary_contradicts_exit",
  "summary_tests_vanished",
  "holdout_does_not_apply",
  "regression",
  "still_failing",
  "environment_suspect",
  "environment_broken",
  "verification_changed_patch",
  "patch_does_not_apply",
  "round_trip_mismatch",
  "egress_blocked",
] as const;
export type RunDetail = (typeof RUN_DETAILS)[number];

/**
 * A library backend's own `outcome.detail` that is none of handoff's (docs/gates.md "any other string"), passed
 * through as the backend said it. Branded, so only `agentDetail` makes one: handoff's own code names known values.
 */
export type BackendOwnDetail = string & { readonly __backendOwnDetail: true };

export type VerdictDetail = RunDetail | AgentDetail | PhaseFailedDetail | ViolationRule | BackendOwnDetail;

/** A backend's `outcome.detail` (a string in the library's API) as a verdict's detail: the one place a string becomes one. */
export function agentDetail(detail: string): AgentDetail | BackendOwnDetail {
  return detail as AgentDetail | BackendOwnDetail;
}

/** Whether a recorded detail (result.json reads back a string, for runs of older versions) is `detail`. */
export function hasDetail(recorded: string | null, detail: VerdictDetail): boolean {
  return recorded === detail;
}
