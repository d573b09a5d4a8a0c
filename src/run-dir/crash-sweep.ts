import { type Dirent, type Stats, closeSync, lstatSync, openSync, readdirSync, readlinkSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { basename, isAbsolute, join, normalize } from "node:path";
import { type CrashedRun, crashedRunResult } from "./crash-result.js";
import { RunDirectory, currentOwner, isSafeRunId } from "./run-dir.js";
import { parseArtifactJson, readArtifact, readArtifactJson, readArtifactWithStats } from "./artifact-file.js";
import { SettledRuns } from "./settled-runs.js";
import { RunResult } from "../verdict/result.js";
import { type ParsedPatch, parsePatch } from "../patch/patch.js";
import { CheckpointJson, OwnerJson } from "./artifacts/checkpoint.js";
import { RequestJson } from "./artifacts/request.js";
import { BackendResultJson } from "./artifacts/backend-result.js";
import { runNames } from "../vocabulary/run-names.js";
import { removeCgroupDirs, requestCgroupKill } from "../containment/cgroup.js";
import {
  type Survivor,
  findCgroupMembers,
  findSurvivors,
  killSurvivors,
  processStartTime,
  uniqueSurvivors,
} from "../containment/survivors.js";
import { removeTree } from "../clone/workspace.js";
import { lexists } from "../lib/paths.js";
import { CANDIDATES_RECORD, CandidatesRecord, candidatesResult, finishCandidatesRun } from "../many/candidates-result.js";

/**
 * A handoff killed mid-run (kill -9, OOM, power) leaves its run directory without result.json, its workspace on
 * disk and perhaps its agent running. The next handoff start finds such runs by their checkpoint.json (not done,
 * owner dead), kills what the run left running, removes what it made, and ends the run with the verdict decideOutcome
 * gives a crashed run (crash-result.ts). A run killed after its result.json was written (its clean-up still
 * pending) keeps its verdict: only its leftovers are dealt with. See docs/crash-safety.md.
 */

export interface SweptRun {
  readonly runId: string;
  readonly runDir: string;
  readonly phase: string | null;
  readonly ownerPid: number;
  readonly killed: readonly Survivor[];
  readonly stillAlive: readonly Survivor[];
  readonly removed: readonly string[];
  /** The run had written its result.json: kept as it was, only the run's leftovers were dealt with. */
  readonly resultKept: boolean;
}

const MAX_CHECKPOINT_BYTES = 64 * 1024;
const MAX_SIDE_FILE_BYTES = 1024 * 1024;
const MAX_RESULT_BYTES = 16 * 1024 * 1024;
const STALE_LOCK_MS = 60_000;
const KILL_ROUNDS = 5;
const LOCK_NAME = ".sweep.lock";

type Owner = OwnerJson;
type Checkpoint = CheckpointJson;

function readCheckpoint(runDir: string): Checkpoint | null {
  return readCheckpointWithStats(runDir).checkpoint;
}

/** checkpoint.json and the stats of the file read, for settled-runs.ts. */
function readCheckpointWithStats(runDir: string): { checkpoint: Checkpoint | null; stats: Stats | null } {
  const { read, stats } = readArtifactWithStats(join(runDir, "checkpoint.json"), MAX_CHECKPOINT_BYTES);
  return { checkpoint: parseArtifactJson(read, CheckpointJson), stats };
}

/** Done, and its clean-up done too (or a checkpoint written before clean-up was recorded): nothing to do. */
function finishedAndClean(checkpoint: Checkpoint): boolean {
  return checkpoint.done === true && checkpoint.cleanup !== "pending";
}

export function ownerOf(checkpoint: Checkpoint): Owner | null {
  if (checkpoint.owner) return checkpoint.owner;
  return checkpoint.pid ? { pid: checkpoint.pid, startTime: null } : null;
}

function ourPidNamespace(): string | null {
  try {
    return readlinkSync("/proc/self/ns/pid");
  } catch {
    return null;
  }
}

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

export type OwnerState = "alive" | "dead" | "not_visible";

/** Dead when its pid is gone (or a zombie) or names a process with another start time. */
export function ownerState(owner: Owner): OwnerState {
  const namespace = ourPidNamespace();
  if (owner.host !== undefined && owner.host !== hostname()) return "not_visible";
  if (owner.pidNamespace && namespace && owner.pidNamespace !== namespace) return "not_visible";
  if (!namespace) return pidExists(owner.pid) ? "alive" : "dead"; // no /proc: existence is all there is
  const startTime = processStartTime(owner.pid);
  if (startTime === null) return "dead";
  return owner.startTime === null || owner.startTime === startTime ? "alive" : "dead";
}

/** `.sweep.lock`, made with O_EXCL; one older than a minute belongs to a sweeper that died and is taken over. */
function takeLock(runDir: string): boolean {
  const path = join(runDir, LOCK_NAME);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, `${JSON.stringify(currentOwner())}\n`);
      closeSync(fd);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") return false;
    }
    try {
      if (Date.now() - lstatSync(path).mtimeMs < STALE_LOCK_MS && !lockHolderDead(path)) return false;
      unlinkSync(path);
    } catch {
      // removed by its sweeper just now: try again
    }
  }
  return false;
}

/** The lock records its sweeper as checkpoint.json records a run's owner: a dead sweeper's lock is taken over at once. */
function lockHolderDead(path: string): boolean {
  const holder = readArtifactJson(path, OwnerJson, 4096);
  return holder !== null && ownerState(holder) === "dead";
}

function releaseLock(runDir: string): void {
  try {
    unlinkSync(join(runDir, LOCK_NAME));
  } catch {
    // already gone
  }
}

type TrackedPath = "workspaceRoot" | "scratch" | "cliHome";

/**
 * A recorded path the sweep may remove: absolute, normalized, and named exactly as handoff names that directory
 * for this run id and the nonce the run recorded (`<runId>-<nonce>`, src/vocabulary/run-names.ts). A checkpoint is the
 * agent's to tamper with (same user, no sandbox): this keeps a doctored one from pointing the sweep at a home
 * directory. A checkpoint without a nonce (a handoff from before them) had mkdtemp's names: `<runId>-…`.
 */
function namedForRun(path: string, kind: TrackedPath, runId: string, nonce: string | null): boolean {
  if (!isAbsolute(path) || normalize(path) !== path) return false;
  if (nonce === null) return basename(path).startsWith(`${runId}-`);
  const names = runNames(runId, nonce);
  return basename(path) === { workspaceRoot: names.workspace, scratch: names.scratch, cliHome: names.cliHome }[kind];
}

/** Only cgroups under /sys/fs/cgroup named as handoff names this run's cgroup: `handoff-<runId>-<nonce>`. */
function cgroupOfRun(path: string, runId: string, nonce: string | null): boolean {
  const name = nonce === null ? `handoff-${runId}` : runNames(runId, nonce).cgroup;
  return isAbsolute(path) && normalize(path) === path && path.startsWith("/sys/fs/cgroup/") && basename(path) === name;
}

/** A run's cgroup and the child cgroup of each of its process trees, children first (the order rmdir needs). */
function cgroupTree(cgroup: string): string[] {
  try {
    const children = readdirSync(cgroup, { withFileTypes: true }).filter((entry) => entry.isDirectory());
    return [...children.map((entry) => join(cgroup, entry.name)), cgroup];
  } catch {
    return [cgroup];
  }
}

/**
 * Finds and kills the run's processes, again and again while new ones show up (a survivor may fork meanwhile): by
 * the run's own marker (its nonce; none without one), by a hold on its recorded directories, by its recorded cgroups.
 */
async function killRunProcesses(nonce: string | null, roots: readonly string[], cgroups: readonly string[]) {
  const killed = new Map<string, Survivor>();
  let stillAlive: Survivor[] = [];
  for (let round = 0; round < KILL_ROUNDS; round++) {
    for (const cgroup of cgroups) requestCgroupKill(cgroup);
    const unique = uniqueSurvivors([...findSurvivors({ nonce, roots }), ...cgroups.flatMap(cgroupTree).flatMap(findCgroupMembers)]);
    if (unique.length === 0) break;
    const outcome = await killSurvivors(unique);
    for (const s of outcome.killed) killed.set(`${s.pid}:${s.startTime}`, s);
    stillAlive = outcome.stillAlive;
  }
  return { killed: [...killed.values()], stillAlive };
}

async function removeRunPaths(paths: readonly string[], cgroups: readonly string[]): Promise<string[]> {
  const removed: string[] = [];
  for (const path of paths) {
    if (!lexists(path)) continue;
    try {
      removeTree(path); // rm never follows a link: a link the agent planted is removed, not its target
    } catch {
      // reported by its absence from `removed`
    }
    if (!lexists(path)) removed.push(path);
  }
  return [...removed, ...(await removeCgroupDirs(cgroups.flatMap(cgroupTree)))];
}

/** The dead owner's half-written `.<name>.<pid>.<random>.tmp` files (and its unused result.json reserve). */
function removeTempFiles(runDir: string, pid: number): void {
  const temp = new RegExp(`^\\..+\\.${pid}(\\.[0-9a-f]{16})?\\.tmp$`);
  let names: string[];
  try {
    names = readdirSync(runDir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!temp.test(name)) continue;
    try {
      unlinkSync(join(runDir, name));
    } catch {
      // best effort
    }
  }
}

function mtimeOf(path: string): Date | null {
  try {
    return lstatSync(path).mtime;
  } catch {
    return null;
  }
}

/**
 * What the sweep may act on for a run: only what the run recorded, and only under names built from its own nonce.
 * A run id is unique only inside one runs directory, and another run with this id (another runs directory, the
 * same workspaces directory) may be live. Each directory was recorded before it was made, so a crash in between
 * leaves nothing unrecorded.
 */
function recordedLeftovers(checkpoint: Checkpoint, runId: string): { nonce: string | null; paths: string[]; cgroups: string[] } {
  const tracked = checkpoint.resources ?? {};
  const nonce = checkpoint.nonce ?? null;
  const kinds: TrackedPath[] = ["workspaceRoot", "scratch", "cliHome"];
  const paths = kinds.flatMap((kind) => {
    const path = tracked[kind];
    return typeof path === "string" && namedForRun(path, kind, runId, nonce) ? [path] : [];
  });
  return { nonce, paths, cgroups: (tracked.cgroups ?? []).filter((cgroup) => cgroupOfRun(cgroup, runId, nonce)) };
}

/** Kills what is left of the run's processes and removes what it recorded (but `kept`) and its owner's temp files. */
async function clearLeftovers(
  runDir: string,
  runId: string,
  checkpoint: Checkpoint,
  owner: Owner,
  kept: readonly (string | undefined)[] = [],
) {
  const recorded = recordedLeftovers(checkpoint, runId);
  const paths = recorded.paths.filter((path) => !kept.includes(path));
  const { killed, stillAlive } = await killRunProcesses(recorded.nonce, paths, recorded.cgroups);
  const removed = await removeRunPaths(paths, recorded.cgroups);
  removeTempFiles(runDir, owner.pid);
  return { paths, killed, stillAlive, removed };
}

/** checkpoint.json of a swept run: done, with the verdict its result.json holds, and which sweeper ended it when. */
function writeSweptCheckpoint(
  dir: RunDirectory,
  checkpoint: Checkpoint,
  result: Pick<RunResult, "terminalReason" | "detail">,
  extra: Pick<Checkpoint, "cleanup"> = {},
): void {
  const swept: CheckpointJson = {
    ...checkpoint,
    phase: checkpoint.phase ?? null,
    done: true,
    terminalReason: result.terminalReason,
    detail: result.detail,
    ...extra,
    sweptAt: new Date().toISOString(),
    sweptBy: process.pid,
  };
  dir.writeJson("checkpoint.json", swept);
}

async function sweepRun(runDir: string, runId: string, checkpoint: Checkpoint, owner: Owner): Promise<SweptRun> {
  const request = readArtifactJson(join(runDir, "request.json"), RequestJson, MAX_SIDE_FILE_BYTES);
  const { killed, stillAlive, removed } = await clearLeftovers(runDir, runId, checkpoint, owner);

  const phase = checkpoint.phase ?? null;
  const backendResultPath = join(runDir, "backend-result.json");
  const backendName = request?.backend?.name ?? "unknown";
  const patch = recordedPatch(runDir, checkpoint);
  const startedAt = mtimeOf(join(runDir, "request.json")) ?? new Date();
  const lastSeen = [mtimeOf(join(runDir, "events.jsonl")), checkpoint.updatedAt ? new Date(checkpoint.updatedAt) : null]
    .filter((date): date is Date => date !== null && !Number.isNaN(date.getTime()))
    .reduce((latest, date) => (date > latest ? date : latest), startedAt);
  const crashed: CrashedRun = {
    runId,
    runDir,
    phase,
    attempt: checkpoint.attempt ?? null,
    ownerPid: owner.pid,
    repo: { path: request?.repo?.path ?? "", baseCommit: request?.repo?.baseCommit ?? "" },
    backendName,
    agent: readAgentRecord(backendResultPath),
    patch: patch.taken,
    patchNotTaken: patch.notTaken,
    startedAt,
    lastSeenAt: lastSeen,
    killed,
    stillAlive,
    removed,
  };
  const result = crashedRunResult(crashed);

  const dir = RunDirectory.reopen(runDir, runId);
  try {
    dir.writeJson("result.json", result);
    const notRun: BackendResultJson = { backend: backendName, ran: false };
    if (!lexists(backendResultPath)) dir.writeJson("backend-result.json", notRun);
    dir.event({ type: "diagnostic", message: `${result.summary} (by pid ${process.pid})` });
    dir.event({ type: "run.finished", terminalReason: result.terminalReason, detail: result.detail });
    writeSweptCheckpoint(dir, checkpoint, result);
  } finally {
    dir.close();
  }
  return { runId, runDir, phase, ownerPid: owner.pid, killed, stillAlive, removed, resultKept: false };
}

/**
 * changes.patch as the run recorded it in checkpoint.json before writing it: a file of another size or hash (cut
 * short by a full disk, or put there after the run) is not taken as the run's patch, and neither is a link.
 */
function recordedPatch(runDir: string, checkpoint: Checkpoint): { taken: ParsedPatch | null; notTaken: string | null } {
  const read = readArtifact(join(runDir, "changes.patch"), 256 * 1024 * 1024);
  switch (read.kind) {
    case "missing":
      return { taken: null, notTaken: null };
    case "untrusted":
      return { taken: null, notTaken: `changes.patch is ${read.why}` };
    case "too_large":
      return { taken: null, notTaken: `changes.patch is ${read.size} bytes, more than the sweep reads` };
    case "unreadable":
      return { taken: null, notTaken: `changes.patch could not be read (${read.message})` };
    case "bytes":
      break;
  }
  if (read.bytes.length === 0) return { taken: null, notTaken: null };
  const recorded = checkpoint.artifacts?.["changes.patch"];
  const patch = parsePatch(read.bytes);
  if (recorded && recorded.bytes === read.bytes.length && recorded.sha256 === patch.sha256) return { taken: patch, notTaken: null };
  return {
    taken: null,
    notTaken: `changes.patch (${read.bytes.length} bytes) is not the patch the run recorded${recorded ? ` (${recorded.bytes} bytes)` : ""}`,
  };
}

/** result.json of the run, if the run wrote one that reads back whole: then its verdict stands. */
function readOwnResult(runDir: string, runId: string): RunResult | null {
  const result = readArtifactJson(join(runDir, "result.json"), RunResult, MAX_RESULT_BYTES);
  return result && result.runId === runId ? result : null;
}

/**
 * A candidates run (src/many/candidates.ts) whose handoff died before its result.json: its candidates are swept as
 * any crashed run (in `<run>/candidates/`), then its result.json is written from the candidates that have a verdict,
 * by the same winner rule. Returns the candidates swept; nothing for a directory that is no such run, one whose
 * handoff lives, or one no candidate of which has a verdict (none had started).
 */
async function sweepCandidatesRun(runDir: string, runId: string): Promise<SweptRun[]> {
  const record = readArtifactJson(join(runDir, CANDIDATES_RECORD), CandidatesRecord, MAX_SIDE_FILE_BYTES);
  if (!record || lexists(join(runDir, "result.json")) || ownerState(record.owner) !== "dead" || !takeLock(runDir)) return [];
  try {
    if (lexists(join(runDir, "result.json"))) return [];
    const candidatesDir = join(runDir, "candidates");
    const swept = await sweepCrashedRuns(candidatesDir);
    const results = Array.from({ length: record.total }, (_, index) => {
      const k = index + 1;
      const result = readOwnResult(join(candidatesDir, String(k)), String(k));
      return result ? { k, result } : null;
    }).filter((entry) => entry !== null);
    if (results.length === 0) return swept;
    const dir = RunDirectory.reopen(runDir, runId);
    try {
      finishCandidatesRun(dir, candidatesResult({ runId, path: runDir }, new Date(record.startedAt), results, []), results);
    } finally {
      dir.close();
    }
    return swept;
  } finally {
    releaseLock(runDir);
  }
}

/**
 * A run whose handoff died after writing result.json, before its directories were gone (a kill in the last
 * moments, or a removal that failed): its leftovers are killed and removed as for a crashed run, but only what the
 * run recorded (a kept workspace is not), and its result.json and verdict stay as they are.
 */
async function cleanUpFinishedRun(
  runDir: string,
  runId: string,
  checkpoint: Checkpoint,
  owner: Owner,
  result: RunResult,
): Promise<SweptRun> {
  const tracked = checkpoint.resources ?? {};
  // A result.json naming a kept workspace: the checkpoint may not have caught up with --keep-workspace yet.
  const kept = result.workspace ? [tracked.workspaceRoot, tracked.cliHome] : [];
  const { paths, killed, stillAlive, removed } = await clearLeftovers(runDir, runId, checkpoint, owner, kept);
  const phase = checkpoint.phase ?? null;
  const dir = RunDirectory.reopen(runDir, runId);
  try {
    if (dir.lastEventType !== "run.finished") {
      dir.event({
        type: "diagnostic",
        message: `handoff (pid ${owner.pid}) stopped after writing result.json; its leftovers were removed by pid ${process.pid}`,
      });
      dir.event({ type: "run.finished", terminalReason: result.terminalReason, detail: result.detail });
    }
    writeSweptCheckpoint(dir, checkpoint, result, { cleanup: stillAlive.length === 0 && !paths.some(lexists) ? "done" : "pending" });
  } finally {
    dir.close();
  }
  return { runId, runDir, phase, ownerPid: owner.pid, killed, stillAlive, removed, resultKept: true };
}

/** The agent's record, when the agent phase finished before the crash (not `{ ran: false }`). */
function readAgentRecord(path: string): CrashedRun["agent"] {
  const record: BackendResultJson | null = readArtifactJson(path, BackendResultJson, MAX_SIDE_FILE_BYTES);
  if (!record || !("outcome" in record)) return null;
  const { executable, version, sessionId, exitCode, signal, finalMessage } = record;
  return { executable, version, sessionId, exitCode, signal, finalMessage };
}

/**
 * Sweeps every run under `runsDir` whose handoff died: runs that are done, whose owner lives (or cannot be seen
 * from here), or whose checkpoint is unreadable are left as they are. A run found finished and cleaned up is
 * remembered with its checkpoint's stamp (settled-runs.ts): at the next start it costs a stat, not a read, until its
 * checkpoint.json changes. Never throws.
 */
export async function sweepCrashedRuns(runsDir: string): Promise<SweptRun[]> {
  const settled = SettledRuns.open(runsDir, "crash");
  try {
    return await sweepRunsIn(runsDir, settled);
  } finally {
    settled.save();
  }
}

/** The sweep of one runs directory (a batch's runs/ has no settled list: it is read whole, as it always was). */
async function sweepRunsIn(runsDir: string, settled: SettledRuns | null): Promise<SweptRun[]> {
  let entries: Dirent[];
  try {
    entries = readdirSync(runsDir, { withFileTypes: true });
  } catch {
    return [];
  }
  const swept: SweptRun[] = [];
  for (const entry of entries) {
    if (!entry.isDirectory() || !isSafeRunId(entry.name)) continue;
    const runDir = join(runsDir, entry.name);
    if (settled?.unchanged(entry.name, join(runDir, "checkpoint.json"))) continue;
    const { checkpoint, stats } = readCheckpointWithStats(runDir);
    if (!checkpoint) {
      swept.push(...(await sweepCandidatesRun(runDir, entry.name)));
      // A batch directory (src/many/batch.ts): its tasks' runs are in runs/, each a run like any other.
      if (lstatSync(join(runDir, "runs"), { throwIfNoEntry: false })?.isDirectory())
        swept.push(...(await sweepRunsIn(join(runDir, "runs"), null)));
      continue;
    }
    if (finishedAndClean(checkpoint)) {
      if (stats) settled?.settle(entry.name, stats);
      continue;
    }
    const owner = ownerOf(checkpoint);
    if (!owner || ownerState(owner) !== "dead") continue;
    if (!takeLock(runDir)) continue;
    try {
      // Another sweeper may have finished it between the first read and the lock.
      const locked = readCheckpoint(runDir);
      if (!locked || finishedAndClean(locked)) continue;
      const lockedOwner = ownerOf(locked) ?? owner;
      // A run that wrote its result.json is never judged again, whatever its checkpoint says.
      const result = readOwnResult(runDir, entry.name);
      if (result) swept.push(await cleanUpFinishedRun(runDir, entry.name, locked, lockedOwner, result));
      else if (!locked.done) swept.push(await sweepRun(runDir, entry.name, locked, lockedOwner));
    } catch {
      // a run directory the sweep cannot finish is left for the next start; this one goes on
    } finally {
      releaseLock(runDir);
    }
  }
  return swept;
}
