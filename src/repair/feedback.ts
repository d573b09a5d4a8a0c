import { fenceFor } from "../lib/markdown-fence.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import type { TerminalReason } from "../vocabulary/terminal-reasons.js";

/** What handoff saw in a failed attempt: the evidence its feedback message is written from. */
export interface FeedbackInput {
  /** The attempt that failed, and how many the run allows. */
  readonly attempt: number;
  readonly attempts: number;
  readonly terminalReason: TerminalReason;
  readonly detail: string | null;
  readonly summary: string;
  /** The command that failed in handoff's own checkout (a verify, setup or held-to-base command), or null. */
  readonly failedCommand: { readonly command: string; readonly exitCode: number | null; readonly timedOut: boolean } | null;
  /**
   * The failed command's output as plain text, at most FEEDBACK_LOG_BYTES: from where it names the failure (the
   * failing tests), else its end; `extent` says which part ("" when all of it). Without a failed command, the end of
   * the attempt's test.log.
   */
  readonly output: { readonly text: string; readonly extent: string };
  /** The run verifies with held-out patches (`--holdout-patch`): the output is not sent, so the hidden tests stay hidden. */
  readonly outputWithheld: boolean;
  /** The patch rules the attempt's patch broke, with their paths. */
  readonly violations: readonly PolicyFinding[];
  /** Verification inputs (tests, the verify script's files) the patch changed, and how handoff judged each. */
  readonly changedInputs: readonly { readonly path: string; readonly judged: string }[];
}

/**
 * Writes the message a repair attempt sends the agent's session. A library user's writer gets handoff's own message
 * too, to send as it is, extend or replace.
 */
export type FeedbackWriter = (input: FeedbackInput, handoffMessage: string) => string | Promise<string>;

/** How much of a failed attempt's output goes back to the agent. */
export const FEEDBACK_LOG_BYTES = 6 * 1024;

/** The phrase every feedback message of handoff's starts with (the scripted model's tests wait for it). */
export const FEEDBACK_OPENING = "did not pass handoff's checks";

/** handoff's feedback: what failed, the evidence, and what the agent must not do to get past it. */
export function handoffFeedback(input: FeedbackInput): string {
  const lines = [
    `Your change (attempt ${input.attempt} of ${input.attempts}) ${FEEDBACK_OPENING}: ${input.terminalReason}${input.detail ? ` (${input.detail})` : ""}.`,
    input.summary,
    "",
  ];
  if (input.failedCommand) {
    const how = input.failedCommand.timedOut ? "timed out" : `exited ${input.failedCommand.exitCode ?? "on a signal"}`;
    lines.push(`handoff ran \`${input.failedCommand.command}\` on your patch, in a fresh checkout of its own: it ${how}.`);
  }
  if (input.output.text.trim() !== "")
    lines.push(`Its output${input.output.extent ? ` (${input.output.extent})` : ""}:`, fenced(input.output.text), "");
  if (input.outputWithheld) lines.push("Its output is not shown: this run verifies with tests you do not see.", "");
  if (input.violations.length > 0) {
    lines.push("Your patch breaks these rules; handoff rejects it until none of them holds:");
    for (const finding of input.violations.slice(0, 50))
      lines.push(`- ${finding.path || "(workspace)"}: ${finding.rule}: ${finding.message}`);
    if (input.violations.length > 50) lines.push(`- …and ${input.violations.length - 50} more`);
    lines.push("");
  }
  if (input.changedInputs.length > 0) {
    lines.push("Your patch changes verification inputs; handoff does not take your version of them:");
    for (const changed of input.changedInputs.slice(0, 50)) lines.push(`- ${changed.path}: ${changed.judged.replaceAll("_", " ")}`);
    lines.push("");
  }
  lines.push(
    "Your earlier changes are still in this working directory. Change the code so that the check passes, then stop; handoff extracts and verifies the new state itself.",
    "Do not edit, delete or weaken the tests or the verification commands' files: handoff verifies with its own copy of them.",
    "Do not touch anything outside this working directory, and do not commit or change git metadata.",
  );
  return `${lines.join("\n")}\n`;
}

/** The text in a code fence it cannot close early. */
function fenced(text: string): string {
  const fence = fenceFor(text);
  return `${fence}\n${text.replace(/\n$/, "")}\n${fence}`;
}
