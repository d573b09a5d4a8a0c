import { closeSync, lstatSync, openSync, readdirSync, readlinkSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { basename, isAbsolute, join, normalize } from "node:path";
import { z } from "zod";
import { CRASH_DETAIL, type CrashedRun, buildCrashedRunResult } from "./crash-result.js";
import { RunDirectory, isSafeRunId } from "./run-dir.js";
import { isRunNonce, runNames } from "./run-names.js";
import { readFileSafely } from "./safe-read.js";
import { removeCgroupDirs, requestCgroupKill } from "./cgroup.js";
import { type Survivor, findCgroupMembers, findSurvivors, killSurvivors, processStartTime, uniqueSurvivors } from "./survivors.js";
import { removeTree } from "./workspace.js";

/**
 * A handoff killed mid-run (kill -9, OOM, power) leaves its run directory without result.json, its workspace on
 * disk and perhaps its agent running. The next handoff start finds such runs by their checkpoint.json (not done,
 * owner dead), kills what the run left running, removes what it made, and ends the run as user_cancelled with
 * detail runner_crashed. See docs/crash-safety.md.
 */

export interface SweptRun {
  readonly runId: string;
  readonly runDir: string;
  readonly phase: string | null;
  readonly ownerPid: number;
  readonly killed: readonly Survivor[];
  readonly stillAlive: readonly Survivor[];
  readonly removed: readonly string[];
}

const MAX_CHECKPOINT_BYTES = 64 * 1024;
const MAX_SIDE_FILE_BYTES = 1024 * 1024;
const STALE_LOCK_MS = 60_000;
const KILL_ROUNDS = 5;
const LOCK_NAME = ".sweep.lock";

const Owner = z.looseObject({
  pid: z.number().int().positive(),
  startTime: z.number().nullable(),
  host: z.string().optional(),
  pidNamespace: z.string().nullable().optional(),
});
type Owner = z.infer<typeof Owner>;

const Checkpoint = z.looseObject({
  /** Absent in checkpoints of a handoff from before nonces: then nothing is matched by marker. */
  nonce: z.string().refine(isRunNonce).optional(),
  phase: z.string().nullable().optional(),
  pid: z.number().int().positive().optional(),
  owner: Owner.optional(),
  resources: z
    .looseObject({
      workspaceRoot: z.string().optional(),
      scratch: z.string().optional(),
      cliHome: z.string().optional(),
      cgroups: z.array(z.string()).max(64).optional(),
    })
    .optional(),
  updatedAt: z.string().optional(),
  done: z.boolean().optional(),
});
type Checkpoint = z.infer<typeof Checkpoint>;

const Request = z.looseObject({
  repo: z.looseObject({ path: z.string(), baseCommit: z.string() }).optional(),
  backend: z.looseObject({ name: z.string() }).optional(),
});

const BackendResult = z.looseObject({
  executable: z.string().nullable().optional(),
  version: z.string().nullable().optional(),
  sessionId: z.string().nullable().optional(),
  exitCode: z.number().nullable().optional(),
  signal: z.string().nullable().optional(),
  finalMessage: z.string().nullable().optional(),
});

function readJson<T>(path: string, schema: z.ZodType<T>, maxBytes: number): T | null {
  const read = readFileSafely(path, maxBytes);
  if (read.kind !== "bytes") return null;
  try {
    const parsed = schema.safeParse(JSON.parse(read.bytes.toString("utf8")));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

function readCheckpoint(runDir: string): Checkpoint | null {
  return readJson(join(runDir, "checkpoint.json"), Checkpoint, MAX_CHECKPOINT_BYTES);
}

function ownerOf(checkpoint: Checkpoint): Owner | null {
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

type OwnerState = "alive" | "dead" | "not_visible";

/** Dead when its pid is gone (or a zombie) or names a process with another start time. */
function ownerState(owner: Owner): OwnerState {
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
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") return false;
    }
    try {
      if (Date.now() - lstatSync(path).mtimeMs < STALE_LOCK_MS) return false;
      unlinkSync(path);
    } catch {
      // removed by its sweeper just now: try again
    }
  }
  return false;
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
 * for this run id and the nonce the run recorded (`<runId>-<nonce>`, src/run-names.ts). A checkpoint is the
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

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
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
    if (!exists(path)) continue;
    try {
      removeTree(path); // rm never follows a link: a link the agent planted is removed, not its target
    } catch {
      // reported by its absence from `removed`
    }
    if (!exists(path)) removed.push(path);
  }
  return [...removed, ...(await removeCgroupDirs(cgroups.flatMap(cgroupTree)))];
}

/** The dead owner's half-written `.<name>.<pid>.tmp` files. */
function removeTempFiles(runDir: string, pid: number): void {
  const suffix = `.${pid}.tmp`;
  let names: string[];
  try {
    names = readdirSync(runDir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(".") || !name.endsWith(suffix)) continue;
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

async function sweepRun(runDir: string, runId: string, checkpoint: Checkpoint, owner: Owner): Promise<SweptRun> {
  const request = readJson(join(runDir, "request.json"), Request, MAX_SIDE_FILE_BYTES);
  const { nonce, paths, cgroups } = recordedLeftovers(checkpoint, runId);
  const { killed, stillAlive } = await killRunProcesses(nonce, paths, cgroups);
  const removed = await removeRunPaths(paths, cgroups);
  removeTempFiles(runDir, owner.pid);

  const phase = checkpoint.phase ?? null;
  const backendResultPath = join(runDir, "backend-result.json");
  const backendName = request?.backend?.name ?? "unknown";
  const patch = readFileSafely(join(runDir, "changes.patch"), 256 * 1024 * 1024);
  const startedAt = mtimeOf(join(runDir, "request.json")) ?? new Date();
  const lastSeen = [mtimeOf(join(runDir, "events.jsonl")), checkpoint.updatedAt ? new Date(checkpoint.updatedAt) : null]
    .filter((date): date is Date => date !== null && !Number.isNaN(date.getTime()))
    .reduce((latest, date) => (date > latest ? date : latest), startedAt);
  const crashed: CrashedRun = {
    runId,
    runDir,
    phase,
    ownerPid: owner.pid,
    repo: { path: request?.repo?.path ?? "", baseCommit: request?.repo?.baseCommit ?? "" },
    backendName,
    agent: readAgentRecord(backendResultPath),
    patch: patch.kind === "bytes" ? patch.bytes : Buffer.alloc(0),
    startedAt,
    lastSeenAt: lastSeen,
    killed,
    stillAlive,
    removed,
  };
  const result = buildCrashedRunResult(crashed);

  const dir = RunDirectory.reopen(runDir, runId);
  try {
    dir.writeJson("result.json", result);
    if (!exists(backendResultPath)) dir.writeJson("backend-result.json", { backend: backendName, ran: false });
    dir.event({ type: "diagnostic", message: `${result.summary} (by pid ${process.pid})` });
    dir.event({ type: "run.finished", terminalReason: result.terminalReason, detail: result.detail });
    dir.writeJson("checkpoint.json", {
      ...checkpoint,
      phase,
      done: true,
      terminalReason: result.terminalReason,
      detail: CRASH_DETAIL,
      sweptAt: new Date().toISOString(),
      sweptBy: process.pid,
    });
  } finally {
    dir.close();
  }
  return { runId, runDir, phase, ownerPid: owner.pid, killed, stillAlive, removed };
}

/** The agent's record, when the agent phase finished before the crash (not `{ ran: false }`). */
function readAgentRecord(path: string): CrashedRun["agent"] {
  const record = readJson(path, BackendResult, MAX_SIDE_FILE_BYTES);
  if (!record || record.ran === false) return null;
  return {
    executable: record.executable ?? null,
    version: record.version ?? null,
    sessionId: record.sessionId ?? null,
    exitCode: record.exitCode ?? null,
    signal: record.signal ?? null,
    finalMessage: record.finalMessage ?? null,
  };
}

/**
 * Sweeps every run under `runsDir` whose handoff died: runs that are done, whose owner lives (or cannot be seen
 * from here), or whose checkpoint is unreadable are left as they are. Reads one small checkpoint.json per run, so a
 * runs directory of thousands of finished runs costs a directory listing and that many small reads. Never throws.
 */
export async function sweepCrashedRuns(runsDir: string): Promise<SweptRun[]> {
  let entries;
  try {
    entries = readdirSync(runsDir, { withFileTypes: true });
  } catch {
    return [];
  }
  const swept: SweptRun[] = [];
  for (const entry of entries) {
    if (!entry.isDirectory() || !isSafeRunId(entry.name)) continue;
    const runDir = join(runsDir, entry.name);
    const checkpoint = readCheckpoint(runDir);
    if (!checkpoint || checkpoint.done) continue;
    const owner = ownerOf(checkpoint);
    if (!owner || ownerState(owner) !== "dead") continue;
    if (!takeLock(runDir)) continue;
    try {
      // Another sweeper may have finished it between the first read and the lock.
      const locked = readCheckpoint(runDir);
      if (!locked || locked.done) continue;
      swept.push(await sweepRun(runDir, entry.name, locked, ownerOf(locked) ?? owner));
    } catch {
      // a run directory the sweep cannot finish is left for the next start; this one goes on
    } finally {
      releaseLock(runDir);
    }
  }
  return swept;
}
