import { UsageError } from "../lib/errors.js";
import type { BatchRun, NamedBatch } from "../run-dir/batch-lookup.js";
import { escapeControls } from "../vocabulary/display.js";

const WHAT_A_BATCH_IS = "a batch: one run per task of a batch file (handoff batch), with no report or patch of its own";

/** `handoff show <batch>`: what a batch is, how it ended, each of its runs (id, outcome, directory), what to do next. */
export function renderBatchListing(batch: NamedBatch): string {
  const record = batch.record;
  const state = record
    ? `${record.total} task(s), worst outcome ${record.worst} (exit ${record.exitCode}), started ${record.startedAt}`
    : "no batch.json yet: still running, or stopped before writing it";
  const width = Math.min(40, Math.max(2, ...batch.runs.map((run) => escapeControls(run.id).length)));
  const rows = batch.runs.map(
    (run) => `${escapeControls(run.id).padEnd(width)}  ${run.outcome.padEnd(25)}  ${escapeControls(run.runDir ?? "(no run)")}`,
  );
  const example = exampleRun(batch.runs);
  return [
    `${escapeControls(batch.id)} is ${WHAT_A_BATCH_IS}`,
    state,
    `${"id".padEnd(width)}  ${"outcome".padEnd(25)}  run directory`,
    ...rows,
    example ? `show or apply one run by its directory: handoff show ${example}, handoff apply ${example}` : "it has no runs",
    "",
  ].join("\n");
}

/** `handoff apply <batch>` (or another format than text or json of one): one line saying what a batch is, its runs and what to do. */
export function batchIsNotARun(batch: NamedBatch, command: "show" | "apply"): UsageError {
  const example = exampleRun(batch.runs);
  const runs = batch.runs.slice(0, 10).map((run) => `${escapeControls(run.id)} ${run.outcome}`);
  const more = batch.runs.length > 10 ? `, … (${batch.runs.length} in all)` : "";
  return new UsageError(
    "batch_not_run",
    `${escapeControls(batch.id)} is ${WHAT_A_BATCH_IS}; its runs: ${runs.join(", ") || "none"}${more}; ` +
      `${command} one by its directory${example ? `, e.g. handoff ${command} ${example}` : ""} (handoff show ${escapeControls(batch.id)} lists them)`,
  );
}

/** The directory of the run a user most likely wants next: the first that verified, else the first with a run. */
function exampleRun(runs: readonly BatchRun[]): string | null {
  const run = runs.find((candidate) => candidate.outcome === "verified" && candidate.runDir) ?? runs.find((candidate) => candidate.runDir);
  return run?.runDir ? shellWord(escapeControls(run.runDir)) : null;
}

/** A path as a shell reads it back: as it is when it has no character the shell would take apart, else single-quoted. */
function shellWord(text: string): string {
  return /^[\w./@:+,=-]+$/u.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}
