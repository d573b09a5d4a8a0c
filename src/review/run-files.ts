import { RequestJson } from "../run-dir/artifacts/request.js";
import { type LoadedRun, readRunJson } from "../run-dir/run-lookup.js";

/**
 * Where a run's own files (test.log, backend-result.json, request.json) are, relative to its directory: the run
 * directory itself, or for a candidates run the winner's `candidates/<k>/` (the run has none of its own); null for
 * a candidates run without a winner.
 */
export function ownFilesPrefix(run: LoadedRun): string | null {
  const r = run.result;
  if (!r.candidates) return "";
  return r.winner === null || r.winner === undefined ? null : `candidates/${r.winner}/`;
}

/** The last lines of `text`, each cut at `lineChars`: what a report shows of a long output. */
export function tailLines(text: string, maxLines: number, lineChars: number): { lines: string[]; omitted: number } {
  const all = text.replace(/\n+$/, "").split("\n");
  const lines = all.slice(-maxLines).map((line) => (line.length > lineChars ? `${line.slice(0, lineChars)}…` : line));
  return { lines, omitted: all.length - lines.length };
}

const REQUEST_MAX_BYTES = 16 * 1024 * 1024;

/** The run's request.json (the task, the backend asked for): of the winner for a candidates run; null when unreadable. */
export function runRequest(run: LoadedRun): RequestJson | null {
  const prefix = ownFilesPrefix(run);
  return prefix === null ? null : readRunJson(run, `${prefix}request.json`, RequestJson, REQUEST_MAX_BYTES);
}
