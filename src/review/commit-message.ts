import { escapeControls } from "../vocabulary/display.js";
import type { RunResult } from "../verdict/result.js";

/** What the commit of a verified run says about it: the trailers, and the task and backend for the default message. */
export interface CommitFacts {
  readonly result: RunResult;
  /** The task text from request.json; null when the run directory has none handoff can read. */
  readonly task: string | null;
  /** The model handed to the backend; null when the backend chose its default. */
  readonly model: string | null;
  /** Of a candidates run: its id and the candidate committed (`Handoff-Run` names the run a reviewer can show). */
  readonly candidateOf?: CandidateOf;
}

export interface CandidateOf {
  readonly runId: string;
  readonly k: number;
}

const SUBJECT_CHARS = 72;
const BODY_COMMANDS = 5;
const COMMAND_CHARS = 100;

/** The trailer keys every commit of a run carries, in this order: `git interpret-trailers --parse` reads them back. */
export const TRAILER_KEYS = ["Handoff-Run", "Handoff-Verdict", "Handoff-Backend", "Handoff-Model"] as const;

/**
 * The commit message: `message` (from --message) or a subject from the task and a short body, then one blank line
 * and the trailers, as `git interpret-trailers` writes them (`Key: value`, one a line, the last paragraph).
 */
export function commitMessage(facts: CommitFacts, message: string | undefined): string {
  const text = message === undefined ? defaultMessage(facts) : message.replace(/\s+$/u, "");
  return `${text}\n\n${trailers(facts).join("\n")}\n`;
}

function trailers({ result, model, candidateOf }: CommitFacts): string[] {
  const verdict = unchecked(result) ? `${result.terminalReason} (--no-verify: nothing checked)` : result.terminalReason;
  const values = [candidateOf?.runId ?? result.runId, verdict, result.backend.name, model ?? "default"];
  const lines = TRAILER_KEYS.map((key, index) => `${key}: ${oneLine(values[index]!)}`);
  return candidateOf ? [...lines, `Handoff-Candidate: ${candidateOf.k}`] : lines;
}

/** The task's first line, escaped and at most 72 characters: the commit's subject and the pull request's title. */
export function commitSubject({ result, task, candidateOf }: Pick<CommitFacts, "result" | "task" | "candidateOf">): string {
  const firstLine = task
    ?.split("\n")
    .map((line) => line.trim())
    .find((line) => line !== "");
  return firstLine ? bounded(oneLine(firstLine), SUBJECT_CHARS) : `handoff run ${oneLine(candidateOf?.runId ?? result.runId)}`;
}

function defaultMessage({ result, task, candidateOf }: CommitFacts): string {
  const subject = commitSubject({ result, task, candidateOf });
  const commands = result.verification.commands
    .slice(0, BODY_COMMANDS)
    .map((command) => `  ${bounded(oneLine(command.command), COMMAND_CHARS)}`);
  const more =
    result.verification.commands.length > BODY_COMMANDS ? [`  … and ${result.verification.commands.length - BODY_COMMANDS} more`] : [];
  const body = unchecked(result)
    ? [`handoff took this patch from ${oneLine(result.backend.name)} with --no-verify: nothing checked it.`]
    : commands.length > 0
      ? [`handoff verified this patch from ${oneLine(result.backend.name)}; these commands passed:`, ...commands, ...more]
      : [`handoff verified this patch from ${oneLine(result.backend.name)}.`];
  return [subject, "", ...body].join("\n");
}

function unchecked(result: RunResult): boolean {
  return result.verification.skipped === "no_verify";
}

/** A value on one line: control characters (newlines too) escaped as \xNN, so nothing can add a trailer of its own. */
function oneLine(text: string): string {
  return escapeControls(text.trim());
}

function bounded(text: string, chars: number): string {
  return text.length <= chars ? text : `${text.slice(0, chars - 1)}…`;
}
