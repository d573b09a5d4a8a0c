import type { VerificationOutcome } from "../verify/verify.js";
import type { TestLog } from "../verify/shell-commands.js";
import type { ExternalAgentResult } from "../agent/backend.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import type { TestEditFacts } from "../verify/test-edits.js";
import { judgementOf } from "../verify/test-edits.js";
import type { Verdict } from "../verdict/decide.js";
import { plainText } from "../lib/plain-text.js";
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
 * The evidence of a failed attempt: its verdict, the command that failed, the end of its log (not when the run has
 * held-out patches), its violations.
 */
export function feedbackInput(failed: FailedAttempt, attempts: number, log: TestLog, heldOut: boolean): FeedbackInput {
  const { patch, verification } = failed.attempt;
  const testEdits = patch?.inputs.testEdits ?? null;
  return {
    attempt: failed.number,
    attempts,
    terminalReason: failed.verdict.terminalReason,
    detail: failed.verdict.detail,
    summary: failed.verdict.summary,
    failedCommand: failedCommand(verification?.held ?? null) ?? failedCommand(verification?.verify ?? null),
    // With held-out tests the output would show the agent the tests it must not see: only the command is named.
    logTail: verification && !heldOut ? tail(log.toBuffer(), FEEDBACK_LOG_BYTES) : "",
    outputWithheld: verification !== null && heldOut,
    violations: patch ? [...patch.extraction.violations, ...patch.inputs.violations] : [],
    changedInputs: testEdits ? testEdits.changed.map((input) => ({ path: input.path, judged: judgementOf(testEdits.policy) })) : [],
  };
}

function failedCommand(outcome: VerificationOutcome | null): FeedbackInput["failedCommand"] {
  if (outcome === null) return null;
  switch (outcome.kind) {
    case "command_failed":
    case "setup_failed":
      return { command: outcome.failed.command, exitCode: outcome.failed.exitCode, timedOut: outcome.failed.timedOut };
    default:
      return null;
  }
}

/** The last `limit` bytes of the log as plain text (colours and other terminal controls taken out), starting at a line. */
function tail(bytes: Buffer, limit: number): string {
  const text = plainText(bytes.toString("utf8"));
  const whole = Buffer.from(text);
  if (whole.length <= limit) return text;
  const cut = whole.subarray(whole.length - limit);
  const newline = cut.indexOf(0x0a);
  return `[… ${whole.length - limit} earlier bytes of the log left out]\n${(newline >= 0 ? cut.subarray(newline + 1) : cut).toString("utf8")}`;
}
