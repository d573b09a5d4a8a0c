import { type LoadedRun, readRunFile } from "../run-dir/run-lookup.js";
import { escapeControls } from "../vocabulary/display.js";
import type { RunResult } from "../verdict/result.js";
import { ms, usageText } from "./format.js";
import { plainText } from "../lib/plain-text.js";

/**
 * How the report writes: a section heading, a list item (nested by `depth`), inline code, lines as they are, the run's
 * own prose (a summary, a message: report-prose.ts), and whether paths of this machine are shown (text, HTML) or left
 * out (the markdown a pull request shows).
 */
export interface ReportWriter {
  readonly heading: (text: string) => void;
  readonly item: (text: string, depth?: number) => void;
  readonly code: (text: string) => string;
  readonly block: (lines: readonly string[]) => void;
  readonly prose: (text: string) => string;
  readonly localPaths: boolean;
}

type AttemptEntry = NonNullable<RunResult["attempts"]>[number];

/** The feedback shown per attempt: its first and last lines, each cut short. */
const FEEDBACK_HEAD_LINES = 12;
const FEEDBACK_TAIL_LINES = 24;
const FEEDBACK_LINE_CHARS = 240;
/** A feedback.md larger than this (a library writer's) is named, not read. */
const FEEDBACK_MAX_BYTES = 1024 * 1024;

/**
 * The "Attempts" section of `handoff show`: each attempt in order with its verdict, patch, usage and duration, the
 * feedback handoff sent after it, why the loop stopped, the usage total, the kept session and the run continued.
 * Nothing for a run of one attempt that neither kept its session nor continued another run, and was not stopped
 * short of a second attempt.
 */
export function writeAttempts(run: LoadedRun, w: ReportWriter): void {
  const r = run.result;
  const attempts = r.attempts ?? [];
  // A first attempt that could not be followed by a second (attemptsStopped) is part of the story too.
  const several = attempts.length > 1 || Boolean(r.attemptsStopped);
  const resumedFrom = r.resumedFrom ?? null;
  if (!several && !r.session?.kept && !resumedFrom) return;
  w.heading(several ? `Attempts (${attempts.length}; the last one decided)` : "Session");
  if (resumedFrom)
    w.item(
      `continues run ${w.code(resumedFrom.runId)}${w.localPaths ? ` (${escapeControls(resumedFrom.runDir)})` : ""}, session ${resumedFrom.sessionId ?? "none"}`,
    );
  if (several) {
    for (const entry of attempts) writeAttempt(run, entry, w);
    if (r.attemptsStopped) w.item(`no further attempt: ${escapeControls(r.attemptsStopped)}`);
    if (r.agent.usage && attempts.length > 1) w.item(`usage over ${attempts.length} attempts: ${usageText(r.agent.usage)}`);
  }
  const session = r.session;
  if (session)
    w.item(
      session.kept
        ? `session kept for \`handoff resume\` until ${session.keptUntil ?? "unknown"}${session.home && w.localPaths ? ` at ${escapeControls(session.home)}` : ""}`
        : "session not kept (its private CLI home was removed with the run)",
    );
}

function writeAttempt(run: LoadedRun, entry: AttemptEntry, w: ReportWriter): void {
  const outcome = `${entry.terminalReason}${entry.detail ? ` (${entry.detail})` : ""}`;
  w.item(`attempt ${entry.attempt}: ${outcome}${entry.terminalReason === "verified" ? "" : `: ${w.prose(entry.summary)}`}`);
  const facts = [
    entry.patchSha256 ? `patch sha256 ${entry.patchSha256.slice(0, 12)}…` : "no patch saved",
    ...(entry.usage ? [`usage ${usageText(entry.usage)}`] : []),
    ms(entry.durationMs),
    ...(entry.sessionId ? [`session ${escapeControls(entry.sessionId)}`] : []),
  ];
  w.item(facts.join(", "), 1);
  if (entry.feedback) writeFeedback(run, entry, entry.feedback, w);
}

/** The feedback sent after an attempt: read only from where handoff writes it, and only if handoff wrote it. */
function writeFeedback(run: LoadedRun, entry: AttemptEntry, path: string, w: ReportWriter): void {
  const expected = `attempts/${entry.attempt}/feedback.md`;
  if (path !== expected) {
    w.item(`feedback sent: not shown (result.json names ${w.code(escapeControls(path))}, not ${w.code(expected)})`, 1);
    return;
  }
  const read = readRunFile(run, path, FEEDBACK_MAX_BYTES);
  switch (read.kind) {
    case "bytes":
      break;
    case "missing":
      w.item(`feedback sent: ${w.code(path)} is missing`, 1);
      return;
    case "untrusted":
      w.item(`feedback sent: ${w.code(path)} not shown, handoff did not write it (${read.why})`, 1);
      return;
    case "too_large":
      w.item(`feedback sent: ${w.code(path)} (${read.size} bytes, too large to show here)`, 1);
      return;
    case "unreadable":
      w.item(`feedback sent: ${w.code(path)} cannot be read (${read.message})`, 1);
      return;
  }
  const lines = plainText(read.bytes.toString("utf8"))
    .replace(/\n$/, "")
    .split("\n")
    .map((line) => escapeControls(line.length > FEEDBACK_LINE_CHARS ? `${line.slice(0, FEEDBACK_LINE_CHARS)}…` : line));
  // A long message keeps its head (what failed) and its tail (the end of the output, the violations, the rules).
  const shown =
    lines.length <= FEEDBACK_HEAD_LINES + FEEDBACK_TAIL_LINES
      ? lines
      : [
          ...lines.slice(0, FEEDBACK_HEAD_LINES),
          `[… ${lines.length - FEEDBACK_HEAD_LINES - FEEDBACK_TAIL_LINES} lines left out here]`,
          ...lines.slice(-FEEDBACK_TAIL_LINES),
        ];
  w.item(`feedback sent (${w.code(path)}, ${lines.length} lines):`, 1);
  w.block(shown);
}
