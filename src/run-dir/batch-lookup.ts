import { lstatSync } from "node:fs";
import { join } from "node:path";
import { BatchRecord } from "../many/batch-record.js";
import { CANDIDATES_RECORD } from "../many/candidates-result.js";
import { lexists } from "../lib/paths.js";
import { readArtifactJson } from "./artifact-file.js";
import { listRuns } from "./run-index.js";
import { placesNamed } from "./run-lookup.js";

/** One run of a batch as `show` and `apply` list it: its task id, how it ended (or how far it got), its directory. */
export interface BatchRun {
  readonly id: string;
  readonly outcome: string;
  /** null for a task that has no run (a bad line, a task not started). */
  readonly runDir: string | null;
}

/** A batch directory named where a run was expected: its id, its record (null while it runs) and its runs. */
export interface NamedBatch {
  readonly id: string;
  readonly dir: string;
  readonly record: BatchRecord | null;
  readonly runs: readonly BatchRun[];
}

const MAX_BATCH_BYTES = 16 * 1024 * 1024;
const MAX_LISTED_RUNS = 10_000;

/**
 * The batch `ref` names (by id in the runs directory, or by path), or null when it names none: a directory with
 * batch.json or runs/ and no run's own files (request.json, candidates.json, result.json), as `handoff list` tells.
 */
export function findBatch(ref: string, runsDir: string): NamedBatch | null {
  const dir = placesNamed(ref, runsDir).find(isBatchDir);
  if (dir === undefined) return null;
  const record = readArtifactJson(join(dir, "batch.json"), BatchRecord, MAX_BATCH_BYTES);
  const runs: BatchRun[] = record
    ? record.tasks.map((task) => ({ id: task.id, outcome: task.outcome, runDir: task.runDir }))
    : listRuns(join(dir, "runs"), { repo: null, limit: MAX_LISTED_RUNS }).map((entry) => ({
        id: entry.id,
        outcome: entry.status.state === "finished" ? entry.status.verdict : entry.status.state,
        runDir: entry.dir,
      }));
  return { id: record?.batchId ?? ref, dir, record, runs };
}

function isBatchDir(dir: string): boolean {
  try {
    if (!lstatSync(dir).isDirectory()) return false;
  } catch {
    return false;
  }
  if (["request.json", CANDIDATES_RECORD, "result.json"].some((name) => lexists(join(dir, name)))) return false;
  return lexists(join(dir, "batch.json")) || lexists(join(dir, "runs"));
}
