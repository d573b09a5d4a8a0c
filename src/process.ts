import { execa } from "execa";
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
  /** Written to stdin, which is then closed. Without it stdin is closed from the start. */
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
  const start = () =>
    execa(request.file, [...request.args], {
    cwd: request.cwd,
    env: { ...request.env },
    extendEnv: false,
    stdin: request.stdin === undefined ? "ignore" : "pipe",
    stdout: "pipe",
    stderr: "pipe",
    buffer: false,
    reject: false,
    detached: true, // its own process group, so the whole tree can be signalled
    cleanup: false, // we kill the group ourselves; execa's cleanup would only reach the leader
    stripFinalNewline: false,
    });
  let subprocess: ReturnType<typeof start>;
  try {
    subprocess = start();
  } catch (error) {
    // execa refuses some arguments before spawning (a NUL byte): the same outcome as a spawn the kernel refused.
    return notStarted(describeSpawnError(error), started);
  }
  const pgid = subprocess.pid;
  // A spawn the kernel refused synchronously (E2BIG past 128 KiB an argument, ENOENT…) has no pid, and no exit
  // event may ever come: only execa's promise reports it. Waiting for an event would wait for ever.
  if (pgid === undefined) return notStarted(describeSpawnError((await subprocess).cause), started);
  liveGroups.add(pgid);

  let timedOut: "wall" | "idle" | null = null;
  let cancelled = false;
  let stopping: Promise<boolean> | null = null;
  const stop = (why: "wall" | "idle" | "cancel") => {
    if (stopping || pgid === undefined) return;
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

  subprocess.stdout?.on("data", (chunk: Buffer) => {
    armIdle();
    request.onStdout?.(chunk);
  });
  subprocess.stderr?.on("data", (chunk: Buffer) => {
    armIdle();
    request.onStderr?.(chunk);
  });
  if (subprocess.stdin) {
    subprocess.stdin.on("error", () => {}); // a child that exits without reading its stdin is not our failure
    subprocess.stdin.end(request.stdin);
  }

  // The leader's exit, not the end of its pipes: a grandchild may hold stdout open for ever.
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    subprocess.once("exit", (code, signal) => resolve({ code, signal }));
    subprocess.once("error", () => resolve({ code: null, signal: null }));
  });
  const { code, signal } = await exited;
  clearTimeout(idleTimer);
  clearTimeout(wallTimer);
  request.signal?.removeEventListener("abort", onAbort);

  let killedLeftovers = false;
  if (pgid !== undefined) {
    if (stopping) await stopping;
    else killedLeftovers = await terminateGroup(pgid, Math.min(graceMs, 500));
    liveGroups.delete(pgid);
  }
  // Whoever still holds the pipes (a process that left the group) must not keep handoff waiting.
  const settled = await Promise.race([subprocess, sleep(graceMs).then(() => null)]);
  if (settled === null) {
    subprocess.stdout?.destroy();
    subprocess.stderr?.destroy();
  }
  const result = settled ?? (await subprocess);
  const spawnError =
    pgid === undefined || (result.failed && result.exitCode === undefined && result.signal === undefined && code === null && signal === null)
      ? describeSpawnError(result.cause)
      : null;

  return {
    exitCode: code,
    signal,
    spawnError,
    timedOut,
    cancelled,
    durationMs: Date.now() - started,
    killedLeftovers,
  };
}

function notStarted(spawnError: { code: string; message: string }, started: number): ProcessOutcome {
  return { exitCode: null, signal: null, spawnError, timedOut: null, cancelled: false, durationMs: Date.now() - started, killedLeftovers: false };
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

/** A short, trusted-shape command whose output handoff reads whole (git). Bytes in, bytes out. */
export async function captureProcess(request: CaptureRequest): Promise<CaptureResult> {
  const maxBuffer = request.maxBuffer ?? 256 * 1024 * 1024;
  const timeout = request.timeoutMs ?? 600_000;
  const result = await execa(request.file, [...request.args], {
    timeout,
    forceKillAfterDelay: 2000,
    cwd: request.cwd,
    env: { ...request.env },
    extendEnv: false,
    input: request.input,
    stdin: request.input === undefined ? "ignore" : "pipe",
    encoding: "buffer",
    maxBuffer: { stdout: maxBuffer, stderr: 1024 * 1024 },
    reject: false,
    stripFinalNewline: false,
    ...(request.signal ? { cancelSignal: request.signal } : {}),
  });
  const stdout = Buffer.from(result.stdout ?? new Uint8Array());
  const stderr = Buffer.from(result.stderr ?? new Uint8Array()).toString("utf8");
  const note = result.isMaxBuffer ? `\n(output exceeded ${maxBuffer} bytes)` : result.timedOut ? `\n(killed after ${timeout} ms)` : "";
  return {
    exitCode: result.exitCode ?? null,
    stdout,
    stderr: `${stderr}${note}`,
    truncated: result.isMaxBuffer,
    timedOut: result.timedOut,
  };
}
