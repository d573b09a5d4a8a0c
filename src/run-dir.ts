import { closeSync, constants, fstatSync, fsyncSync, mkdirSync, openSync, readSync, readlinkSync, realpathSync, renameSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { UsageError } from "./errors.js";
import type { Phase, RecordedEvent, RunnerEvent } from "./events.js";
import { generateRunNonce } from "./run-names.js";
import { processStartTime } from "./survivors.js";

/** The artifact files every run writes, on every path. */
export const ARTIFACTS = [
  "request.json",
  "events.jsonl",
  "checkpoint.json",
  "changes.patch",
  "test.log",
  "result.json",
  "backend-result.json",
] as const;

const MAX_EVENT_LOG_BYTES = 64 * 1024 * 1024;
/** Kept for handoff's own events (phases, commands, verdict): an agent's flood cannot push them out of the log. */
const RUNNER_RESERVE_BYTES = 1024 * 1024;
const RUNNER_EVENT_TYPES: ReadonlySet<string> = new Set<RunnerEvent["type"]>([
  "run.started",
  "sandbox.chosen",
  "phase.started",
  "phase.finished",
  "command.started",
  "source.changed",
  "run.finished",
]);
const APPEND_NO_FOLLOW = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Who is running a run, in checkpoint.json. A later handoff start judges the owner dead when the pid is gone or
 * now names a process with another start time. `host` and `pidNamespace` stop it from judging a run whose owner
 * it cannot see (a runs directory shared with another machine or container).
 */
export interface RunOwner {
  readonly pid: number;
  /** Field 22 of /proc/<pid>/stat; null where there is no /proc. */
  readonly startTime: number | null;
  readonly host: string;
  readonly pidNamespace: string | null;
}

/** Directories and cgroups a run made outside its run directory: what a later start removes if the run crashed. */
export interface TrackedResources {
  readonly workspaceRoot?: string;
  readonly scratch?: string;
  readonly cliHome?: string;
  readonly cgroups?: readonly string[];
}

export function currentOwner(): RunOwner {
  let pidNamespace: string | null = null;
  try {
    pidNamespace = readlinkSync("/proc/self/ns/pid");
  } catch {
    // no /proc: the pid and host are all there is
  }
  return { pid: process.pid, startTime: processStartTime(process.pid), host: hostname(), pidNamespace };
}

function mergeResources(into: TrackedResources, more: TrackedResources): TrackedResources {
  const cgroups = [...new Set([...(into.cgroups ?? []), ...(more.cgroups ?? [])])];
  return { ...into, ...more, ...(cgroups.length > 0 ? { cgroups } : {}) };
}

/**
 * A run's directory: files mode 0600, each whole file written atomically (temp file, fsync, rename), events
 * appended one line at a time. The event log is bounded; what is left out is counted in a final line.
 */
export class RunDirectory {
  readonly path: string;
  readonly runId: string;
  /** What makes this run's names unique beyond its runs directory (src/run-names.ts); recorded in checkpoint.json. */
  readonly nonce: string;
  #seq = 0;
  #eventsFd: number;
  #eventBytes = 0;
  #eventsDropped = 0;
  #agentShareFull = false;
  readonly #owner = currentOwner();
  #tracked: TrackedResources = {};
  #checkpoint: { phase: Phase | null; extra: Record<string, unknown> } = { phase: null, extra: {} };

  private constructor(path: string, runId: string, nonce: string, lastSeq = 0) {
    this.path = path;
    this.runId = runId;
    this.nonce = nonce;
    this.#seq = lastSeq;
    // Never through a link, never blocking on a FIFO: reopen may find whatever the crashed run's agent left there.
    this.#eventsFd = openSync(join(path, "events.jsonl"), APPEND_NO_FOLLOW, 0o600);
  }

  /** Creates `<runsDir>/<runId>`; fails if it exists. */
  static create(runsDir: string, runId: string): RunDirectory {
    mkdirSync(runsDir, { recursive: true, mode: 0o700 });
    const path = join(realpathSync(runsDir), runId);
    try {
      mkdirSync(path, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") {
        throw new UsageError("run_exists", `a run directory ${path} already exists; choose another --run-id`);
      }
      throw error;
    }
    return new RunDirectory(path, runId, generateRunNonce());
  }

  /**
   * An existing run directory, to finish a run whose handoff died (the crash sweep). Events go on from the last
   * sequence number in events.jsonl; a line the crash cut short is ended first so the next one stands alone.
   */
  static reopen(path: string, runId: string): RunDirectory {
    const tail = readEventsTail(join(path, "events.jsonl"));
    // The sweep rewrites checkpoint.json itself, keeping the nonce the run recorded: this handle has none of its own.
    const dir = new RunDirectory(path, runId, "", lastSeq(tail));
    if (tail.length > 0 && !tail.endsWith("\n")) writeSync(dir.#eventsFd, "\n");
    return dir;
  }

  writeFile(name: string, content: string | Buffer): void {
    const target = join(this.path, name);
    const temp = join(this.path, `.${name}.${process.pid}.tmp`);
    const fd = openSync(temp, "w", 0o600);
    try {
      writeSync(fd, typeof content === "string" ? Buffer.from(content) : content);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, target);
  }

  writeJson(name: string, value: unknown): void {
    this.writeFile(name, `${JSON.stringify(value, null, 2)}\n`);
  }

  event(event: RunnerEvent): RecordedEvent {
    const recorded = { seq: ++this.#seq, time: new Date().toISOString(), ...event } as RecordedEvent;
    const ownEvent = RUNNER_EVENT_TYPES.has(event.type);
    // Once the agent's share is full, its events are counted and dropped without being serialised first: a flood
    // of a gigabyte would otherwise spend a third of handoff's time building lines nobody writes.
    if (!ownEvent && this.#agentShareFull) {
      this.#eventsDropped++;
      return recorded;
    }
    const line = Buffer.from(`${JSON.stringify(recorded)}\n`);
    // Bytes, not characters: escaped garbage can be several bytes per character.
    const limit = ownEvent ? MAX_EVENT_LOG_BYTES : MAX_EVENT_LOG_BYTES - RUNNER_RESERVE_BYTES;
    if (this.#eventBytes + line.length > limit && event.type !== "run.finished") {
      this.#eventsDropped++;
      if (!ownEvent) this.#agentShareFull = true;
      return recorded;
    }
    this.#eventBytes += line.length;
    writeSync(this.#eventsFd, line);
    return recorded;
  }

  /** Where the run is: its phase, its owner and what it made; `extra` marks the end (done, terminalReason, detail). */
  checkpoint(phase: Phase, extra: Record<string, unknown> = {}): void {
    this.#checkpoint = { phase, extra };
    this.#writeCheckpoint();
  }

  /** Adds directories or cgroups the run made to checkpoint.json at once, so a crash right after leaves them found. */
  track(resources: TrackedResources): void {
    this.#tracked = mergeResources(this.#tracked, resources);
    this.#writeCheckpoint();
  }

  #writeCheckpoint(): void {
    this.writeJson("checkpoint.json", {
      runId: this.runId,
      nonce: this.nonce,
      phase: this.#checkpoint.phase,
      pid: this.#owner.pid,
      owner: this.#owner,
      resources: this.#tracked,
      updatedAt: new Date().toISOString(),
      ...this.#checkpoint.extra,
    });
  }

  close(): void {
    if (this.#eventsDropped > 0) {
      const line = { seq: ++this.#seq, time: new Date().toISOString(), type: "diagnostic", message: `${this.#eventsDropped} events were left out: events.jsonl reached ${MAX_EVENT_LOG_BYTES} bytes` };
      writeSync(this.#eventsFd, `${JSON.stringify(line)}\n`);
    }
    fsyncSync(this.#eventsFd);
    closeSync(this.#eventsFd);
  }
}

const EVENTS_TAIL_BYTES = 64 * 1024;

function readEventsTail(path: string): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return "";
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return "";
    const size = stats.size;
    const length = Math.min(size, EVENTS_TAIL_BYTES);
    const bytes = Buffer.alloc(length);
    const read = readSync(fd, bytes, 0, length, size - length);
    return bytes.subarray(0, read).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

function lastSeq(tail: string): number {
  const lines = tail.split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      const seq = (JSON.parse(lines[i]!) as { seq?: unknown }).seq;
      if (typeof seq === "number" && Number.isSafeInteger(seq)) return seq;
    } catch {
      // a line cut short by the crash, or the cut-off first line of the tail
    }
  }
  return 0;
}

/** Sortable by time, unique enough for parallel runs: 20261129T203000Z-3f9a1c. */
export function generateRunId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  return `${stamp}-${Math.random().toString(16).slice(2, 8).padEnd(6, "0")}`;
}

export function isSafeRunId(id: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(id) && id !== "." && id !== "..";
}
