import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { openChildStdio } from "./stdio-pipes.js";
import { which } from "./which.js";
import { isGone, listPids, readStat } from "./proc-stat.js";

/**
 * The one module that starts processes: the agent, setup and verification commands, and git.
 * Every long-lived child gets its own process group; on timeout, cancel, or even a normal exit the whole group
 * gets SIGTERM, a short grace, then SIGKILL, so nothing the child started is left behind in its group.
 */

export interface SpawnRequest {
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd: string;
  /** The complete environment: nothing from handoff's own environment is added. */
  readonly env: Readonly<Record<string, string>>;
  /** The child's stdin (a file it can read to the end, or reopen as /dev/stdin). Without it stdin is /dev/null. */
  readonly stdin?: string | Buffer;
  /** Wall-clock limit. */
  readonly timeoutMs?: number;
  /** Limit on silence: no byte on stdout or stderr for this long. */
  readonly idleTimeoutMs?: number;
  readonly signal?: AbortSignal;
  readonly onStdout?: (chunk: Buffer) => void;
  readonly onStderr?: (chunk: Buffer) => void;
  /** Time between SIGTERM and SIGKILL. */
  readonly graceMs?: number;
}

/** What runProcess saw; processEnding (process-ending.ts) reads it as exactly one ending, for every ladder. */
export interface ProcessOutcome {
  readonly exitCode: number | null;
  readonly signal: string | null;
  /** The process could not be started at all (ENOENT, EACCES…). */
  readonly spawnError: { readonly code: string; readonly message: string } | null;
  readonly timedOut: "wall" | "idle" | null;
  readonly cancelled: boolean;
  readonly durationMs: number;
  /** Members of the process group were still alive after the child exited and had to be killed. */
  readonly killedLeftovers: boolean;
}

const liveGroups = new Set<number>();

/** Kills every process group handoff still has running. Used on handoff's own exit. */
export function killAllProcessGroups(): void {
  for (const pgid of liveGroups) signalGroup(pgid, "SIGKILL");
  liveGroups.clear();
}

function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

function groupExists(pgid: number): boolean {
  return signalGroup(pgid, 0);
}

/**
 * Whether a member of the group is still running. kill(-pgid, 0) also succeeds for members that exited and only
 * wait to be reaped, and an init that reaps orphans lazily (or never, in a container) would make every stop wait
 * out the grace period and the SIGKILL loop. Linux only: without /proc an existing group counts as running.
 */
function groupRunning(pgid: number): boolean {
  if (!groupExists(pgid)) return false;
  const pids = listPids();
  if (pids === null) return true;
  return pids.some((pid) => {
    const stat = readStat(pid);
    return stat !== null && stat.pgrp === pgid && !isGone(stat);
  });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** SIGTERM to the group, up to `graceMs` for it to go, then SIGKILL. Resolves once the group is gone. */
async function terminateGroup(pgid: number, graceMs: number): Promise<boolean> {
  if (!groupExists(pgid)) return false;
  // SIGKILL goes to the group whatever it looks like: harmless to zombies, final for a thread group whose
  // leader thread exited (it shows as a zombie while its other threads run).
  if (!groupRunning(pgid)) {
    signalGroup(pgid, "SIGKILL");
    return false;
  }
  signalGroup(pgid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && groupRunning(pgid)) await sleep(25);
  signalGroup(pgid, "SIGKILL");
  for (let i = 0; i < 200 && groupRunning(pgid); i++) await sleep(10);
  return true;
}

export async function runProcess(request: SpawnRequest): Promise<ProcessOutcome> {
  const started = Date.now();
  const graceMs = request.graceMs ?? 2000;
  if (request.signal?.aborted) {
    return { exitCode: null, signal: null, spawnError: null, timedOut: null, cancelled: true, durationMs: 0, killedLeftovers: false };
  }
  // Real pipes where FIFOs can be made (so /dev/stderr opens inside the child), else Node's own socketpairs.
  const fifos = openChildStdio(request.stdin, makeFifos);
  let child: ChildProcess;
  try {
    child = spawn(request.file, [...request.args], {
      cwd: request.cwd,
      env: { ...request.env },
      stdio: fifos ? [...fifos.childFds] : [request.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      detached: true, // its own process group, so the whole tree can be signalled
    });
  } catch (error) {
    // A spawn refused synchronously (E2BIG past 128 KiB an argument, a NUL byte) never emits an event: it ends here.
    for (const stream of [fifos?.stdout, fifos?.stderr]) stream?.destroy();
    return notStarted(describeSpawnError(error), started);
  } finally {
    fifos?.closeChildEnds();
  }
  const stdout: Readable = fifos?.stdout ?? child.stdout!;
  const stderr: Readable = fifos?.stderr ?? child.stderr!;
  // With FIFOs the input is already in the child's stdin file; Node's pipe needs it written.
  const stdin: Writable | null = fifos ? null : child.stdin;
  child.on("error", () => {}); // handled below, through the pid and the exit; never an uncaught event
  const pgid = child.pid;
  if (pgid === undefined) {
    // ENOENT, EACCES: reported by an 'error' event on the next tick, with no exit to follow.
    const error = await new Promise<unknown>((resolve) => child.once("error", resolve));
    for (const stream of [stdout, stderr, stdin]) stream?.destroy();
    return notStarted(describeSpawnError(error), started);
  }
  liveGroups.add(pgid);

  let timedOut: "wall" | "idle" | null = null;
  let cancelled = false;
  let stopping: Promise<boolean> | null = null;
  const stop = (why: "wall" | "idle" | "cancel") => {
    if (stopping) return;
    if (why === "cancel") cancelled = true;
    else timedOut = why;
    stopping = terminateGroup(pgid, graceMs);
  };

  let idleTimer: NodeJS.Timeout | undefined;
  const armIdle = () => {
    if (request.idleTimeoutMs === undefined) return;
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => stop("idle"), request.idleTimeoutMs);
  };
  armIdle();
  const wallTimer = request.timeoutMs === undefined ? undefined : setTimeout(() => stop("wall"), request.timeoutMs);
  const onAbort = () => stop("cancel");
  request.signal?.addEventListener("abort", onAbort, { once: true });

  const ended = (stream: Readable) =>
    new Promise<void>((resolve) => {
      stream.once("close", resolve);
      stream.once("error", () => resolve());
    });
  const outputEnded = Promise.all([ended(stdout), ended(stderr)]);
  stdout.on("data", (chunk: Buffer) => {
    armIdle();
    request.onStdout?.(chunk);
  });
  stderr.on("data", (chunk: Buffer) => {
    armIdle();
    request.onStderr?.(chunk);
  });
  if (stdin) {
    stdin.on("error", () => {}); // a child that exits without reading its stdin is not our failure
    stdin.end(request.stdin);
  }

  // The leader's exit, not the end of its pipes: a grandchild may hold stdout open for ever.
  const { code, signal } = await new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", () => resolve({ code: null, signal: null }));
  });
  clearTimeout(idleTimer);
  clearTimeout(wallTimer);
  request.signal?.removeEventListener("abort", onAbort);

  let killedLeftovers = false;
  if (stopping) await stopping;
  else killedLeftovers = await terminateGroup(pgid, Math.min(graceMs, 500));
  liveGroups.delete(pgid);
  // Whoever still holds the pipes (a process that left the group) must not keep handoff waiting.
  let graceTimer: NodeJS.Timeout | undefined;
  const drained = await Promise.race([
    outputEnded.then(() => true),
    new Promise<false>((resolve) => (graceTimer = setTimeout(() => resolve(false), graceMs))),
  ]);
  clearTimeout(graceTimer);
  if (!drained) {
    stdout.destroy();
    stderr.destroy();
  }
  stdin?.destroy();

  return {
    exitCode: code,
    signal,
    spawnError: null,
    timedOut,
    cancelled,
    durationMs: Date.now() - started,
    killedLeftovers,
  };
}

/** `mkfifo` from the system's own directories (never the agent's PATH), found once. */
let mkfifoPath: string | null | undefined;
function makeFifos(paths: readonly string[]): boolean {
  mkfifoPath ??= which("mkfifo", "/usr/bin:/bin");
  if (!mkfifoPath) return false;
  try {
    execFileSync(mkfifoPath, ["-m", "600", "--", ...paths], { stdio: "ignore", env: {}, timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

function notStarted(spawnError: { code: string; message: string }, started: number): ProcessOutcome {
  return {
    exitCode: null,
    signal: null,
    spawnError,
    timedOut: null,
    cancelled: false,
    durationMs: Date.now() - started,
    killedLeftovers: false,
  };
}

function describeSpawnError(cause: unknown): { code: string; message: string } {
  const error = cause as NodeJS.ErrnoException | undefined;
  // execa's own check for a NUL byte throws a TypeError without a code; Node's (in the environment) has one.
  const code = error?.code ?? (/null bytes/.test(error?.message ?? "") ? "ERR_INVALID_ARG_VALUE" : "spawn_failed");
  return { code, message: error?.message ?? "the process could not be started" };
}

export interface CaptureRequest {
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly input?: string | Buffer;
  /** Output beyond this many bytes fails the call instead of filling memory. */
  readonly maxBuffer?: number;
  /** A call that blocks (git opening a FIFO the agent planted, say) is killed after this long. */
  readonly timeoutMs?: number;
  /** Kills the call when aborted (its exit code is then null). */
  readonly signal?: AbortSignal;
}

export interface CaptureResult {
  readonly exitCode: number | null;
  readonly stdout: Buffer;
  readonly stderr: string;
  readonly truncated: boolean;
  readonly timedOut: boolean;
}

/** What a captured call's stderr may hold; beyond it the call fails like a stdout over its limit. */
const CAPTURE_STDERR_MAX = 1024 * 1024;
/** Between the SIGTERM of a call that timed out, was cancelled or overflowed, and its SIGKILL. */
const CAPTURE_KILL_GRACE_MS = 2000;
/** Captured calls still running: handoff's exit takes them down with it (SIGTERM), as it always has. */
const liveCaptures = new Set<ChildProcess>();
let captureExitHook = false;

/** One stream's bytes up to `limit`: the rest is dropped and `over` says so. */
class CapturedBytes {
  readonly #chunks: Buffer[] = [];
  #size = 0;
  readonly #limit: number;
  over = false;
  constructor(limit: number) {
    this.#limit = limit;
  }
  /** False once the limit is passed. */
  add(chunk: Buffer): boolean {
    if (this.over) return false;
    if (this.#size + chunk.length > this.#limit) {
      this.#chunks.push(chunk.subarray(0, this.#limit - this.#size));
      this.#size = this.#limit;
      this.over = true;
      return false;
    }
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    return true;
  }
  get bytes(): Buffer {
    return Buffer.concat(this.#chunks);
  }
}

/**
 * A short, trusted-shape command whose output handoff reads whole (git). Bytes in, bytes out. Plain node:child_process
 * (execa's semantics, kept: a timeout, a cancel or an output over its limit sends SIGTERM, SIGKILL 2 s later; an output
 * over its limit is cut there and its pipes closed; a process that could not start is exit code null with no output):
 * execa cost a run ~40 ms before its first phase, in loading it and on each of its dozen git calls.
 */
export async function captureProcess(request: CaptureRequest): Promise<CaptureResult> {
  const maxBuffer = request.maxBuffer ?? 256 * 1024 * 1024;
  const timeout = request.timeoutMs ?? 600_000;
  const ended = await capture(request, maxBuffer, timeout);
  const note = ended.overLimit ? `\n(output exceeded ${maxBuffer} bytes)` : ended.timedOut ? `\n(killed after ${timeout} ms)` : "";
  return {
    exitCode: ended.exitCode,
    stdout: ended.stdout,
    stderr: `${ended.stderr.toString("utf8")}${note}`,
    truncated: ended.overLimit,
    timedOut: ended.timedOut,
  };
}

interface CaptureEnding {
  readonly exitCode: number | null;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  readonly overLimit: boolean;
  readonly timedOut: boolean;
}

const NOT_RUN: CaptureEnding = { exitCode: null, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), overLimit: false, timedOut: false };

function capture(request: CaptureRequest, maxBuffer: number, timeout: number): Promise<CaptureEnding> {
  // A NUL byte in an argument is a bug of the caller, thrown as execa threw it.
  const withNul = request.args.find((arg) => arg.includes("\0"));
  if (withNul !== undefined) throw new TypeError(`Arguments cannot contain null bytes ("\\0"): ${withNul}`);
  if (request.signal?.aborted) return Promise.resolve(NOT_RUN);
  let child: ChildProcess;
  try {
    child = spawn(request.file, [...request.args], {
      cwd: request.cwd,
      env: { ...request.env },
      stdio: [request.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
  } catch {
    // Refused synchronously (E2BIG, a NUL byte in the environment or the path): not started.
    return Promise.resolve(NOT_RUN);
  }
  if (!captureExitHook) {
    captureExitHook = true;
    process.once("exit", () => {
      for (const running of liveCaptures) running.kill("SIGTERM");
    });
  }
  return new Promise<CaptureEnding>((resolve) => {
    const stdout = new CapturedBytes(maxBuffer);
    const stderr = new CapturedBytes(CAPTURE_STDERR_MAX);
    let timedOut = false;
    let overLimit = false;
    let killTimer: NodeJS.Timeout | undefined;
    const stop = () => {
      if (killTimer) return;
      child.kill("SIGTERM");
      killTimer = setTimeout(() => child.kill("SIGKILL"), CAPTURE_KILL_GRACE_MS);
    };
    // The rest of that output is not read: its pipe closes, the process is stopped.
    const overflow = (stream: Readable) => {
      overLimit = true;
      stream.destroy();
      stop();
    };
    const wallTimer = setTimeout(() => {
      timedOut = true;
      stop();
    }, timeout);
    const onAbort = () => stop();
    request.signal?.addEventListener("abort", onAbort, { once: true });
    liveCaptures.add(child);
    let settled = false;
    const settle = (ending: CaptureEnding) => {
      if (settled) return;
      settled = true;
      clearTimeout(wallTimer);
      clearTimeout(killTimer);
      request.signal?.removeEventListener("abort", onAbort);
      liveCaptures.delete(child);
      resolve(ending);
    };
    child.stdout!.on("data", (chunk: Buffer) => {
      if (!stdout.add(chunk)) overflow(child.stdout!);
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      if (!stderr.add(chunk)) overflow(child.stderr!);
    });
    for (const stream of [child.stdout!, child.stderr!]) stream.on("error", () => {});
    if (child.stdin) {
      child.stdin.on("error", () => {}); // a process that exits without reading its input is not a failure here
      child.stdin.end(request.input);
    }
    // ENOENT, EACCES, a missing cwd: an 'error' event and no process.
    child.on("error", () => {
      if (child.pid === undefined) settle(NOT_RUN);
    });
    child.on("close", (code) => settle({ exitCode: code, stdout: stdout.bytes, stderr: stderr.bytes, overLimit, timedOut }));
  });
}

/**
 * A command's stdout, run to its end synchronously for the few callers that cannot wait on a promise (the
 * environment's stamps, read inside a synchronous check); stderr ignored. Null when it could not start, did not exit
 * 0, or wrote more than `maxBuffer` bytes.
 */
export function captureProcessSync(request: {
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  readonly env: Readonly<Record<string, string>>;
  readonly maxBuffer: number;
}): Buffer | null {
  const ran = spawnSync(request.file, [...request.args], {
    cwd: request.cwd,
    env: request.env,
    maxBuffer: request.maxBuffer,
    stdio: ["ignore", "pipe", "ignore"],
  });
  return ran.error || ran.status !== 0 ? null : ran.stdout;
}

/**
 * A short system command run to its end synchronously, for the few callers that cannot wait on a promise (a
 * removal that must detach a mount first). Output ignored; true when it exited 0.
 */
export function runSystemCommandSync(file: string, args: readonly string[], timeoutMs = 30_000): boolean {
  try {
    execFileSync(file, [...args], { stdio: "ignore", env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" }, timeout: timeoutMs });
    return true;
  } catch {
    return false;
  }
}
