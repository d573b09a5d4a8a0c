import { type Dirent, lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { CANDIDATES_RECORD, CandidatesRecord } from "../many/candidates-result.js";
import { BatchRecord } from "../many/batch-record.js";
import { RunResult } from "../verdict/result.js";
import { EXIT_CODES } from "../vocabulary/terminal-reasons.js";
import { CheckpointJson } from "./artifacts/checkpoint.js";
import { readArtifact, readArtifactJson } from "./artifact-file.js";
import { ownerOf, ownerState } from "./crash-sweep.js";
import { MAX_RESULT_BYTES, readRequest } from "./run-lookup.js";

/**
 * The runs directory as `handoff list` shows it, and the one answer to "which run is the latest" (`show` and `apply`
 * without an id). Everything is read as `show` reads it (readArtifact: never through a link, never a file of another
 * user, never more than a bound), and only what is shown: the directories are ordered by a stat each, and the
 * files of a run are read only until `limit` runs are found.
 */

/** What a directory in the runs directory is: one run, a best-of-N candidates run, or a batch of runs. */
export type RunKind = "run" | "candidates" | "batch";

/** How far a run got: finished (its verdict), still running, crashed (its handoff is gone), or what cannot be told. */
export type RunState =
  | { readonly state: "finished"; readonly verdict: string; readonly exitCode: number; readonly summary: string }
  | { readonly state: "running"; readonly phase: string | null }
  | { readonly state: "crashed"; readonly phase: string | null }
  | { readonly state: "unknown"; readonly why: string };

export interface RunIndexEntry {
  readonly kind: RunKind;
  readonly id: string;
  readonly dir: string;
  /** ISO time the run started; for a run without a record of it, when its first file was written. */
  readonly startedAt: string;
  /** The source repository (a batch: its tasks' repositories); empty when no file of the run says. */
  readonly repos: readonly string[];
  /** The backend (a candidates run: each candidate's, once; a batch: none). */
  readonly backends: readonly string[];
  readonly status: RunState;
}

export interface RunListing {
  /** Only the runs of this repository (a real path, as result.json's repo.path records it); null: every repository. */
  readonly repo: string | null;
  readonly limit: number;
}

/** The newest runs first, at most `limit`, of `repo` only unless it is null. An absent runs directory has none. */
export function listRuns(runsDir: string, listing: RunListing): RunIndexEntry[] {
  const entries: RunIndexEntry[] = [];
  if (listing.limit <= 0) return entries;
  for (const entry of newestFirst(runsDir, listing.repo)) {
    entries.push(entry);
    if (entries.length >= listing.limit) break;
  }
  return entries;
}

/**
 * The latest finished run of `repo` (a run or a candidates run with its result.json; not a batch's task runs):
 * its directory, or null when there is none.
 */
export function latestFinishedRun(runsDir: string, repo: string): RunIndexEntry | null {
  for (const entry of newestFirst(runsDir, repo)) if (entry.kind !== "batch" && entry.status.state === "finished") return entry;
  return null;
}

interface Slot {
  readonly name: string;
  readonly dir: string;
  readonly kind: RunKind;
  /** When its first file was written (ms): the order of the listing. */
  readonly startedMs: number;
}

function* newestFirst(runsDir: string, repo: string | null): Generator<RunIndexEntry> {
  let names: Dirent[];
  try {
    names = readdirSync(runsDir, { withFileTypes: true });
  } catch {
    return;
  }
  const slots: Slot[] = [];
  // A link is never followed (Dirent.isDirectory is false for one); dot names are handoff's own (.sweep.lock, temp files).
  for (const name of names) if (name.isDirectory() && !name.name.startsWith(".")) slots.push(slotOf(runsDir, name.name));
  slots.sort((a, b) => b.startedMs - a.startedMs || (a.name < b.name ? 1 : -1));
  for (const slot of slots) {
    const entry = describe(slot, repo);
    if (entry !== null) yield entry;
  }
}

function lstatMs(path: string): number | null {
  try {
    return lstatSync(path).mtimeMs;
  } catch {
    return null;
  }
}

/** The kind of a directory and its start, from stats alone: request.json and candidates.json are written once, first. */
function slotOf(runsDir: string, name: string): Slot {
  const dir = join(runsDir, name);
  const request = lstatMs(join(dir, "request.json"));
  if (request !== null) return { name, dir, kind: "run", startedMs: request };
  const candidates = lstatMs(join(dir, CANDIDATES_RECORD));
  if (candidates !== null) return { name, dir, kind: "candidates", startedMs: candidates };
  let startedMs = 0;
  try {
    const stats = lstatSync(dir);
    startedMs = stats.birthtimeMs > 0 ? stats.birthtimeMs : stats.mtimeMs;
  } catch {
    // Removed while listed: it sorts last, and describe finds nothing in it.
  }
  if (lstatMs(join(dir, "batch.json")) !== null || lstatMs(join(dir, "runs")) !== null) return { name, dir, kind: "batch", startedMs };
  return { name, dir, kind: "run", startedMs };
}

/** One directory as listed, or null when it is not of `repo`. */
function describe(slot: Slot, repo: string | null): RunIndexEntry | null {
  switch (slot.kind) {
    case "run":
    case "candidates":
      return describeRun(slot, repo);
    case "batch":
      return describeBatch(slot, repo);
  }
}

const RepoOnly = z.looseObject({ repo: z.looseObject({ path: z.string() }) });
const MAX_CHECKPOINT_BYTES = 64 * 1024;
const MAX_BATCH_BYTES = 16 * 1024 * 1024;

function describeRun(slot: Slot, repo: string | null): RunIndexEntry | null {
  const base = { kind: slot.kind, id: slot.name, dir: slot.dir, startedAt: new Date(slot.startedMs).toISOString() };
  const read = readArtifact(join(slot.dir, "result.json"), MAX_RESULT_BYTES);
  if (read.kind === "bytes") {
    let json: unknown;
    try {
      json = JSON.parse(read.bytes.toString("utf8"));
    } catch {
      return unfinished(slot, repo, base, "result.json is not valid JSON");
    }
    // The repository first: a run of another repository is skipped without the whole schema's parse.
    const located = RepoOnly.safeParse(json);
    if (repo !== null && located.success && located.data.repo.path !== repo) return null;
    const parsed = RunResult.safeParse(json);
    if (!parsed.success) return unfinished(slot, repo, base, "result.json does not match schema version 1");
    const result = parsed.data;
    const backends = result.candidates ? [...new Set(result.candidates.map((candidate) => candidate.backend))] : [result.backend.name];
    return {
      ...base,
      startedAt: result.timings.startedAt,
      repos: [result.repo.path],
      backends,
      status: { state: "finished", verdict: result.terminalReason, exitCode: EXIT_CODES[result.terminalReason], summary: result.summary },
    };
  }
  if (read.kind === "missing") return unfinished(slot, repo, base, null);
  return unfinished(
    slot,
    repo,
    base,
    read.kind === "untrusted" ? `result.json is ${read.why}` : `result.json cannot be read (${read.kind})`,
  );
}

/**
 * A run without a result.json it can show: running or crashed, told by its owner (checkpoint.json, candidates.json);
 * its repository and backend from its request.json (a candidates run: its first candidate's). `why` says what is
 * wrong with a result.json that is there.
 */
function unfinished(
  slot: Slot,
  repo: string | null,
  base: Pick<RunIndexEntry, "kind" | "id" | "dir" | "startedAt">,
  why: string | null,
): RunIndexEntry | null {
  const requestDir = slot.kind === "candidates" ? join(slot.dir, "candidates", "1") : slot.dir;
  const request = readRequest(requestDir);
  if (repo !== null && request?.repo.path !== repo) return null;
  const status = why !== null ? ({ state: "unknown", why } as const) : liveness(slot);
  const backends = slot.kind === "candidates" ? [] : request ? [request.backend.name] : [];
  return { ...base, repos: request ? [request.repo.path] : [], backends, status };
}

/** Running while the handoff that owns it is alive; crashed when it is gone (the next handoff start sweeps it). */
function liveness(slot: Slot): RunState {
  if (slot.kind === "candidates") {
    const record = readArtifactJson(join(slot.dir, CANDIDATES_RECORD), CandidatesRecord, MAX_CHECKPOINT_BYTES);
    if (record === null) return { state: "unknown", why: "no readable candidates.json" };
    return ownerSays(ownerState(record.owner), null);
  }
  const checkpoint = readArtifactJson(join(slot.dir, "checkpoint.json"), CheckpointJson, MAX_CHECKPOINT_BYTES);
  const owner = checkpoint === null ? null : ownerOf(checkpoint);
  if (checkpoint === null || owner === null) return { state: "unknown", why: "no readable checkpoint.json" };
  return ownerSays(ownerState(owner), checkpoint.phase ?? null);
}

function ownerSays(owner: ReturnType<typeof ownerState>, phase: string | null): RunState {
  switch (owner) {
    case "alive":
      return { state: "running", phase };
    case "dead":
      return { state: "crashed", phase };
    case "not_visible":
      return { state: "unknown", why: "its handoff runs on another host or in another pid namespace" };
  }
}

function describeBatch(slot: Slot, repo: string | null): RunIndexEntry | null {
  const base = { kind: slot.kind, id: slot.name, dir: slot.dir, startedAt: new Date(slot.startedMs).toISOString(), backends: [] };
  const record = readArtifactJson(join(slot.dir, "batch.json"), BatchRecord, MAX_BATCH_BYTES);
  if (record === null) {
    // batch.json is written when every task has ended: without it, the batch runs (or was killed before writing it).
    const repos = batchRunRepos(slot.dir);
    if (repo !== null && !repos.includes(repo)) return null;
    return { ...base, repos, status: { state: "unknown", why: "no batch.json yet: running, or stopped before writing it" } };
  }
  const repos = [...new Set(record.tasks.flatMap((task) => (task.repo === null ? [] : [task.repo])))];
  if (repo !== null && !repos.includes(repo)) return null;
  const counts = Object.entries(record.counts)
    .filter(([, count]) => count > 0)
    .map(([outcome, count]) => `${count} ${outcome}`)
    .join(", ");
  return {
    ...base,
    startedAt: record.startedAt,
    repos,
    status: { state: "finished", verdict: record.worst, exitCode: record.exitCode, summary: `${record.total} task(s): ${counts}` },
  };
}

/** The repositories of an unfinished batch's task runs so far (their request.json). */
function batchRunRepos(batchDir: string): string[] {
  let names: Dirent[];
  try {
    if (!lstatSync(join(batchDir, "runs")).isDirectory()) return [];
    names = readdirSync(join(batchDir, "runs"), { withFileTypes: true });
  } catch {
    return [];
  }
  const repos = new Set<string>();
  // The first tasks say enough: a batch's tasks mostly share one repository, and a list must not read a whole batch.
  for (const name of names.slice(0, 32)) {
    if (!name.isDirectory() || name.name.startsWith(".")) continue;
    const request = readRequest(join(batchDir, "runs", name.name));
    if (request) repos.add(request.repo.path);
  }
  return [...repos];
}
