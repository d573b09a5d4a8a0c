import { readFileSync, readdirSync, readlinkSync, realpathSync } from "node:fs";
import { basename, dirname, join, resolve, sep } from "node:path";
import { isInside } from "../lib/paths.js";
import { escapeControls } from "../vocabulary/display.js";
import { type ProcStat, isGone, listPids, readStat } from "../process/proc-stat.js";
import { RUN_MARKER_VARIABLE } from "../vocabulary/run-names.js";

/**
 * Processes a run left behind, found without a sandbox by scanning /proc (Linux only; elsewhere nothing is found).
 * A survivor carries the run's marker (`HANDOFF_RUN_NONCE=<nonce>`, src/vocabulary/run-names.ts) in its environment, or holds a
 * path under one of the run's directories (cwd, root or an open file). A process that dropped the marker and let go of
 * the workspace cannot be told apart from any other process of the user: that needs the sandbox.
 */

export type SurvivorReason = "marker" | "holds_workspace" | "in_cgroup";

export interface Survivor {
  readonly pid: number;
  /** Field 22 of /proc/<pid>/stat (clock ticks after boot): with the pid, it names one process, never a reused pid. */
  readonly startTime: number;
  /** The command line, control characters escaped, at most 120 characters. */
  readonly command: string;
  readonly reason: SurvivorReason;
}

export interface SurvivorQuery {
  /** The run's nonce: a process whose environment has the exact entry `HANDOFF_RUN_NONCE=<nonce>` is a survivor. Null: no marker to look for. */
  readonly nonce: string | null;
  /** Directories of the run: a process with its cwd, root or an open file under one of them is a survivor. */
  readonly roots: readonly string[];
  /** Never reported (handoff's own pid and its ancestors are always excluded). */
  readonly excludePids?: readonly number[];
}

export interface KillOutcome {
  /** Gone now: killed, already exited, or a zombie waiting to be reaped. */
  readonly killed: Survivor[];
  readonly stillAlive: Survivor[];
}

const MAX_FDS_PER_PROCESS = 4096;
const MAX_COMMAND_CHARS = 120;

/** The start time of `pid` (field 22 of its stat), or null when it is gone, a zombie, or /proc is not there. */
export function processStartTime(pid: number): number | null {
  const stat = readStat(pid);
  return stat && !isGone(stat) ? stat.startTime : null;
}

/** This process and every ancestor up to init: a scan must never report the handoff that runs it. */
function selfAndAncestors(): Set<number> {
  const pids = new Set<number>([process.pid]);
  let pid = process.ppid;
  for (let depth = 0; depth < 1024 && pid > 0 && !pids.has(pid); depth++) {
    pids.add(pid);
    const stat = readStat(pid);
    if (!stat) break;
    pid = stat.ppid;
  }
  return pids;
}

function hasMarker(pid: number, marker: Buffer): boolean {
  let environ: Buffer;
  try {
    environ = readFileSync(`/proc/${pid}/environ`);
  } catch {
    return false;
  }
  // Entries are NUL-terminated; an exact entry, so a marker never matches a longer value that starts the same.
  const entries = Buffer.concat([Buffer.from([0]), environ, Buffer.from([0])]);
  return entries.includes(marker);
}

function readLink(path: string): string | null {
  try {
    return readlinkSync(path);
  } catch {
    return null;
  }
}

function isUnder(target: string, roots: readonly string[]): boolean {
  // A deleted file reads as "<path> (deleted)": still under its root, which is what counts.
  return roots.some((root) => isInside(target, root));
}

function holdsRoot(pid: number, roots: readonly string[]): boolean {
  for (const link of ["cwd", "root"]) {
    const target = readLink(`/proc/${pid}/${link}`);
    if (target !== null && isUnder(target, roots)) return true;
  }
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds.slice(0, MAX_FDS_PER_PROCESS)) {
    const target = readLink(`/proc/${pid}/fd/${fd}`);
    if (target !== null && isUnder(target, roots)) return true;
  }
  return false;
}

function commandOf(pid: number): string {
  let raw = "";
  try {
    raw = readFileSync(`/proc/${pid}/cmdline`)
      .subarray(0, 4 * MAX_COMMAND_CHARS)
      .toString("utf8");
  } catch {
    // gone, or not ours to read
  }
  const command = escapeControls(raw.replace(/\0+$/, "").replaceAll("\0", " "));
  return command.length > MAX_COMMAND_CHARS ? `${command.slice(0, MAX_COMMAND_CHARS - 1)}…` : command || `[pid ${pid}]`;
}

/**
 * The root as /proc shows paths (real, absolute). Only its parent is resolved: a root the agent replaced by a
 * symlink must not widen the search to wherever the link points.
 */
function procPathOf(root: string): string {
  const absolute = resolve(root);
  try {
    return join(realpathSync(dirname(absolute)), basename(absolute));
  } catch {
    return absolute;
  }
}

function survivorOf(pid: number, stat: ProcStat, reason: SurvivorReason): Survivor {
  return { pid, startTime: stat.startTime, command: commandOf(pid), reason };
}

/** Every running process that carries `HANDOFF_RUN_NONCE=<nonce>` or holds a path under one of `roots`. */
export function findSurvivors(query: SurvivorQuery): Survivor[] {
  const excluded = selfAndAncestors();
  for (const pid of query.excludePids ?? []) excluded.add(pid);
  const marker = query.nonce ? Buffer.from(`\0${RUN_MARKER_VARIABLE}=${query.nonce}\0`) : null;
  const roots = [...new Set(query.roots.map(procPathOf))].filter((root) => root !== sep);
  const found: Survivor[] = [];
  for (const pid of listPids() ?? []) {
    if (excluded.has(pid)) continue;
    const stat = readStat(pid);
    if (!stat || isGone(stat)) continue;
    if (marker && hasMarker(pid, marker)) found.push(survivorOf(pid, stat, "marker"));
    else if (roots.length > 0 && holdsRoot(pid, roots)) found.push(survivorOf(pid, stat, "holds_workspace"));
  }
  return found;
}

/** Every running member of a cgroup (v2 `cgroup.procs`), or none when it is gone or unreadable. */
export function findCgroupMembers(cgroup: string): Survivor[] {
  let text: string;
  try {
    text = readFileSync(join(cgroup, "cgroup.procs"), "utf8").slice(0, 1024 * 1024);
  } catch {
    return [];
  }
  const excluded = selfAndAncestors();
  const found: Survivor[] = [];
  for (const line of text.split("\n")) {
    const pid = Number(line);
    if (!Number.isSafeInteger(pid) || pid <= 0 || excluded.has(pid)) continue;
    const stat = readStat(pid);
    if (stat && !isGone(stat)) found.push(survivorOf(pid, stat, "in_cgroup"));
  }
  return found;
}

/** One entry per process (pid and start time); the first reason found for it stays. */
export function uniqueSurvivors(found: readonly Survivor[]): Survivor[] {
  const unique = new Map<string, Survivor>();
  for (const survivor of found) {
    const key = `${survivor.pid}:${survivor.startTime}`;
    if (!unique.has(key)) unique.set(key, survivor);
  }
  return [...unique.values()];
}

function stillRunning(survivor: Survivor): boolean {
  const stat = readStat(survivor.pid);
  return stat !== null && !isGone(stat) && stat.startTime === survivor.startTime;
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/**
 * SIGKILL to each survivor that is still the process that was found (same start time), then up to `waitMs` for
 * them to go. A reused pid is never signalled; the window between the check and the signal is as small as
 * user space allows without pidfds.
 */
export async function killSurvivors(survivors: readonly Survivor[], waitMs = 2000): Promise<KillOutcome> {
  for (const survivor of survivors) {
    if (!stillRunning(survivor)) continue;
    try {
      process.kill(survivor.pid, "SIGKILL");
    } catch {
      // gone since the check, or not ours to signal (then it shows in stillAlive)
    }
  }
  const deadline = Date.now() + waitMs;
  while (survivors.some(stillRunning) && Date.now() < deadline) await sleep(20);
  return { killed: survivors.filter((s) => !stillRunning(s)), stillAlive: survivors.filter(stillRunning) };
}
