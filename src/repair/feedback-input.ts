import type { VerificationOutcome } from "../verify/verify.js";
import type { TestLog } from "../verify/shell-commands.js";
import type { ExternalAgentResult } from "../agent/backend.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import type { TestEditFacts } from "../verify/test-edits.js";
import { judgementOf } from "../verify/test-edits.js";
import type { Verdict } from "../verdict/decide.js";
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

/** The evidence of a failed attempt: its verdict, the command that failed, the end of its log, its violations. */
export function feedbackInput(failed: FailedAttempt, attempts: number, log: TestLog): FeedbackInput {
  const { patch, verification } = failed.attempt;
  const testEdits = patch?.inputs.testEdits ?? null;
  return {
    attempt: failed.number,
    attempts,
    terminalReason: failed.verdict.terminalReason,
    detail: failed.verdict.detail,
    summary: failed.verdict.summary,
    failedCommand: failedCommand(verification?.held ?? null) ?? failedCommand(verification?.verify ?? null),
    logTail: verification ? tail(log.toBuffer(), FEEDBACK_LOG_BYTES) : "",
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

/** The last `limit` bytes as text, starting at a line, with a note of what was left out. */
function tail(bytes: Buffer, limit: number): string {
  if (bytes.length <= limit) return bytes.toString("utf8");
  const cut = bytes.subarray(bytes.length - limit);
  const newline = cut.indexOf(0x0a);
  const text = (newline >= 0 ? cut.subarray(newline + 1) : cut).toString("utf8");
  return `[… ${bytes.length - limit} earlier bytes of the log left out]\n${text}`;
}
