import type { VerificationOutcome } from "../verify/verify.js";
import type { TestLog } from "../verify/shell-commands.js";
import type { ExternalAgentResult } from "../agent/backend.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import type { TestEditFacts } from "../verify/test-edits.js";
import { judgementOf } from "../verify/test-edits.js";
import type { Verdict } from "../verdict/decide.js";
import type { CommandRecord } from "../verify/shell-commands.js";
import { type ExcerptLimits, excerptExtent, failureExcerpt, tailExcerpt } from "../lib/failure-excerpt.js";
import { commandOutput } from "../review/command-output.js";
import { FEEDBACK_LOG_BYTES, type FeedbackInput } from "./feedback.js";

/** What a failed attempt left, as the pipeline keeps it. */
export interface FailedAttempt {
  readonly number: number;
  readonly verdict: Verdict;
  readonly attempt: {
    readonly agent: ExternalAgentResult | null;
    readonly patch: {
      readonly extraction: { readonly violations: readonly PolicyFinding[] };
      readonly inputs: { readonly violations: readonly PolicyFinding[]; readonly testEdits: TestEditFacts };
    } | null;
    readonly verification: { readonly verify: VerificationOutcome | null; readonly held: VerificationOutcome | null } | null;
  };
}

/**
 * The evidence of a failed attempt: its verdict, the command that failed, the part of its output that names the
 * failure (not when the run has held-out patches), its violations.
 */
export function feedbackInput(failed: FailedAttempt, attempts: number, log: TestLog, heldOut: boolean): FeedbackInput {
  const { patch, verification } = failed.attempt;
  const testEdits = patch?.inputs.testEdits ?? null;
  const failure = failedRecord(verification?.held ?? null) ?? failedRecord(verification?.verify ?? null);
  return {
    attempt: failed.number,
    attempts,
    terminalReason: failed.verdict.terminalReason,
    detail: failed.verdict.detail,
    summary: failed.verdict.summary,
    failedCommand: failure ? { command: failure.command, exitCode: failure.exitCode, timedOut: failure.timedOut } : null,
    // With held-out tests the output would show the agent the tests it must not see: only the command is named.
    output: verification && !heldOut ? outputShown(log.toBuffer(), failure) : { text: "", extent: "" },
    outputWithheld: verification !== null && heldOut,
    violations: patch ? [...patch.extraction.violations, ...patch.inputs.violations] : [],
    changedInputs: testEdits ? testEdits.changed.map((input) => ({ path: input.path, judged: judgementOf(testEdits.policy) })) : [],
  };
}

function failedRecord(outcome: VerificationOutcome | null): CommandRecord | null {
  if (outcome === null) return null;
  switch (outcome.kind) {
    case "command_failed":
    case "setup_failed":
      return outcome.failed;
    default:
      return null;
  }
}

const FEEDBACK_EXCERPT: ExcerptLimits = { lines: 150, lineChars: 300, bytes: FEEDBACK_LOG_BYTES };

/**
 * What the agent is shown: the failed command's output from where it names the failure (failureExcerpt, as the
 * reports choose it), or without a failed command the end of the attempt's log.
 */
function outputShown(log: Buffer, failed: CommandRecord | null): FeedbackInput["output"] {
  const own = failed ? commandOutput(log, failed) : null;
  const shown = own ? failureExcerpt(own.toString("utf8"), FEEDBACK_EXCERPT) : tailExcerpt(log.toString("utf8"), FEEDBACK_EXCERPT);
  return { text: shown.lines.length > 0 ? `${shown.lines.join("\n")}\n` : "", extent: excerptExtent(shown) };
}
