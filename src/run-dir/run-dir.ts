import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { hostname } from "node:os";
import { basename, dirname, join } from "node:path";
import { untrustedBecause } from "./artifact-file.js";
import { ArtifactWriteError, UsageError } from "../lib/errors.js";
import type { Phase, RecordedEvent, RunnerEvent } from "../vocabulary/events.js";
import { generateRunNonce } from "../vocabulary/run-names.js";
import { processStartTime } from "../containment/survivors.js";
import type { CheckpointEnding, CheckpointJson } from "./artifacts/checkpoint.js";
import { Redactor } from "./redact.js";

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

/** The artifacts that carry the agent's and the commands' words: written through the run's Redactor (src/run-dir/redact.ts). */
const REDACTED: ReadonlySet<string> = new Set<(typeof ARTIFACTS)[number] | "feedback.md">([
  "events.jsonl",
  "backend-result.json",
  "result.json",
  "test.log",
  "feedback.md",
]);
/** Keys of an artifact kept exact: handoff's own locators, which `apply` and `show` follow (the patch's paths agree with changes.patch). */
const VERBATIM_KEYS: Readonly<Record<string, readonly string[]>> = { "result.json": ["runId", "runDir", "repo", "patch", "workspace"] };

const MAX_EVENT_LOG_BYTES = 64 * 1024 * 1024;
/** Kept for handoff's own events (phases, commands, verdict): an agent's flood cannot push them out of the log. */
const RUNNER_RESERVE_BYTES = 1024 * 1024;
/**
 * The agent's events are written a burst at a time (the lines of one chunk of its output, at most this many bytes
 * together) instead of one write per line: a flood of short events otherwise costs a system call each.
 */
const PENDING_EVENT_BYTES = 256 * 1024;
const RUNNER_EVENT_TYPES: ReadonlySet<string> = new Set<RunnerEvent["type"]>([
  "run.started",
  "sandbox.chosen",
  "phase.started",
  "phase.finished",
  "command.started",
  "source.changed",
  "attempt.started",
  "attempt.finished",
  "attempts.stopped",
  "run.finished",
]);
const APPEND_NO_FOLLOW = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** The sweep reads the crashed run's last lines through the descriptor it then appends with. */
const READ_APPEND_NO_FOLLOW = constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** A temp file is always a new file: never an existing one, never through a link (O_EXCL does not follow one). */
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
/**
 * Space taken when the run directory is made and given back to result.json at the end: a full file system (an
 * agent that filled the disk the runs directory is on) still gets the verdict written.
 */
export const RESULT_RESERVE_BYTES = 1024 * 1024;

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

/** The first write to the run directory that failed: the run then ends `artifact_write_failed`. */
export interface ArtifactWriteFailure {
  readonly artifact: string;
  readonly message: string;
}

/** What the run wrote to a file the crash sweep may read back: a file that does not match is not the run's. */
export interface RecordedArtifact {
  readonly bytes: number;
  readonly sha256: string;
}

interface TempFile {
  readonly fd: number;
  readonly path: string;
}

function errorText(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message ?? String(error);
}

/** Writes every byte it can: a short write is retried, and one that writes nothing is an error. Never throws. */
function writeAll(fd: number, bytes: Buffer, position: number | null): { written: number; error: unknown } {
  let written = 0;
  try {
    while (written < bytes.length) {
      const count = writeSync(fd, bytes, written, bytes.length - written, position === null ? null : position + written);
      if (count === 0) throw Object.assign(new Error("short write"), { code: "ENOSPC" });
      written += count;
    }
    return { written, error: null };
  } catch (error) {
    return { written, error };
  }
}

/** Writes every byte or throws. */
function writeWhole(fd: number, bytes: Buffer, position: number | null): void {
  const { error } = writeAll(fd, bytes, position);
  if (error !== null) throw error;
}

function mergeResources(into: TrackedResources, more: TrackedResources): TrackedResources {
  const cgroups = [...new Set([...(into.cgroups ?? []), ...(more.cgroups ?? [])])];
  return { ...into, ...more, ...(cgroups.length > 0 ? { cgroups } : {}) };
}

/**
 * A run's directory: files mode 0600, each whole file written atomically (a new temp file with a random name,
 * every byte, fsync, rename), events appended in whole lines (handoff's own one at a time, the agent's a burst at a
 * time, written before handoff's next own event and before its output is read further). The event log is bounded; what is left out
 * is counted in a line just before `run.finished`. A write that fails leaves nothing partial in place, never
 * throws out of an event handler, and is kept as `writeFailure` for the verdict.
 */
export class RunDirectory {
  readonly path: string;
  readonly runId: string;
  /** What makes this run's names unique beyond its runs directory (src/vocabulary/run-names.ts); recorded in checkpoint.json. */
  readonly nonce: string;
  #seq = 0;
  #eventsFd: number;
  #eventBytes = 0;
  #eventsDropped = 0;
  #eventsLost = 0;
  #agentShareFull = false;
  /** The agent's event lines not written yet: written together once the burst they came in is handled. */
  #pending: string[] = [];
  #pendingBytes = 0;
  #flushQueued = false;
  readonly #owner = currentOwner();
  #tracked: TrackedResources = {};
  #recorded: Record<string, RecordedArtifact> = {};
  #checkpoint: { phase: Phase | null; extra: CheckpointEnding } = { phase: null, extra: {} };
  #attempt: number | null = null;
  #failure: ArtifactWriteFailure | null = null;
  #reserve: TempFile | null = null;
  readonly #redactor: Redactor;
  /** For a reopened directory: the type of the last whole event the crashed run wrote, or null. */
  lastEventType: string | null = null;

  private constructor(path: string, runId: string, nonce: string, eventsFd: number, redactor: Redactor, lastSeq = 0) {
    this.path = path;
    this.#redactor = redactor;
    this.runId = runId;
    this.nonce = nonce;
    this.#seq = lastSeq;
    this.#eventsFd = eventsFd;
  }

  /**
   * Creates `<runsDir>/<runId>`; fails if it exists. A directory that cannot hold the reserve is removed again.
   * `redactor` knows the run's `--env` values; without one, only what the secret scanner recognises is redacted.
   */
  static create(runsDir: string, runId: string, redactor = new Redactor()): RunDirectory {
    mkdirSync(runsDir, { recursive: true, mode: 0o700 });
    const path = join(realpathSync(runsDir), runId);
    try {
      mkdirSync(path, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") {
        throw new UsageError("run_exists", ({ name }) => `a run directory ${path} already exists; choose another ${name("runId")}`);
      }
      throw error;
    }
    let dir: RunDirectory | null = null;
    try {
      // A fresh directory: nothing can be planted at events.jsonl yet.
      dir = new RunDirectory(path, runId, generateRunNonce(), openSync(join(path, "events.jsonl"), APPEND_NO_FOLLOW, 0o600), redactor);
      dir.#reserve = dir.#makeReserve();
      return dir;
    } catch (error) {
      if (dir) closeSync(dir.#eventsFd);
      rmSync(path, { recursive: true, force: true });
      throw new UsageError(
        "runs_dir_unwritable",
        `cannot write the run directory ${path}: ${errorText(error instanceof ArtifactWriteError ? error.reason : error)}`,
      );
    }
  }

  /**
   * An existing run directory, to finish a run whose handoff died (the crash sweep). Events go on from the last
   * sequence number in events.jsonl; a line the crash cut short is ended first so the next one stands alone. An
   * events.jsonl that is not a regular file of this user with one name (planted by an agent) is replaced. The
   * sweep does not know the crashed run's `--env` values (what that run wrote is redacted already): only what the
   * secret scanner recognises is redacted in what it adds.
   */
  static reopen(path: string, runId: string): RunDirectory {
    const eventsPath = join(path, "events.jsonl");
    let fd = openTrustedForAppend(eventsPath);
    if (fd === null) {
      rmSync(eventsPath, { force: true });
      fd = openSync(eventsPath, READ_APPEND_NO_FOLLOW | constants.O_EXCL, 0o600);
    }
    const tail = readEventsTail(fd);
    const last = lastEvent(tail);
    // The sweep rewrites checkpoint.json itself, keeping the nonce the run recorded: this handle has none of its own.
    const dir = new RunDirectory(path, runId, "", fd, new Redactor(), last?.seq ?? 0);
    dir.lastEventType = last?.type ?? null;
    if (tail.length > 0 && !tail.endsWith("\n")) dir.#append(Buffer.from("\n"));
    return dir;
  }

  /** The first write to the run directory that failed, or null. The agent's pending event lines are written first. */
  get writeFailure(): ArtifactWriteFailure | null {
    this.#flushEvents();
    return this.#failure;
  }

  #failed(artifact: string, error: unknown): ArtifactWriteError {
    if (error instanceof ArtifactWriteError) return error;
    const reason = errorText(error);
    this.#failure ??= { artifact, message: reason };
    return new ArtifactWriteError(artifact, reason);
  }

  /** A new file `.<name>.<pid>.<random>.tmp`, made with O_EXCL and O_NOFOLLOW: a planted link or file is never used. */
  #createTemp(name: string): TempFile {
    const parent = this.#parentOf(name);
    for (let attempt = 0; ; attempt++) {
      const path = join(parent, `.${basename(name)}.${process.pid}.${randomBytes(8).toString("hex")}.tmp`);
      try {
        return { fd: openSync(path, CREATE_NEW, 0o600), path };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST" || attempt >= 4) throw error;
      }
    }
  }

  /**
   * The directory `name` goes in: the run directory, or a folder of it (`attempts/2/changes.patch`), made 0700 and
   * checked to be a directory at each step, so a planted link is never followed.
   */
  #parentOf(name: string): string {
    let parent = this.path;
    for (const part of dirname(name) === "." ? [] : dirname(name).split("/")) {
      if (part === "" || part === "." || part === "..") throw new Error(`bad artifact name ${name}`);
      parent = join(parent, part);
      try {
        mkdirSync(parent, { mode: 0o700 });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      if (!lstatSync(parent).isDirectory()) throw new Error(`${parent} is not a directory`);
    }
    return parent;
  }

  /** Renames the temp file over `name`, then checks that what now stands there is the file just written. */
  #renameInto(temp: TempFile, name: string): void {
    const target = join(this.path, name);
    renameSync(temp.path, target);
    const placed = lstatSync(target);
    const written = fstatSync(temp.fd);
    if (placed.ino !== written.ino || placed.dev !== written.dev) {
      rmSync(target, { force: true });
      throw new Error("the temporary file was replaced before it was renamed into place");
    }
  }

  #makeReserve(): TempFile {
    const temp = this.#createTemp("result.json");
    try {
      writeWhole(temp.fd, Buffer.alloc(RESULT_RESERVE_BYTES), 0);
      fsyncSync(temp.fd);
      return temp;
    } catch (error) {
      closeSync(temp.fd);
      rmSync(temp.path, { force: true });
      throw this.#failed("result.json", error);
    }
  }

  /**
   * A JSON value as `name` holds it: with the strings redacted when `name` carries the agent's words, its locator keys
   * kept exact. The runner takes result.json from here, so what `run` returns and prints is what the file says.
   */
  redacted<T>(name: string, value: T): T {
    return REDACTED.has(basename(name)) ? this.#redactor.json(value, VERBATIM_KEYS[basename(name)]) : value;
  }

  /** Writes `name` whole or not at all (redacted when it carries the agent's words; changes.patch never is). */
  writeFile(name: string, content: string | Buffer): void {
    const bytes = typeof content === "string" ? Buffer.from(content) : content;
    this.#writeWhole(name, REDACTED.has(basename(name)) ? this.#redactor.bytes(bytes) : bytes);
  }

  /** On any failure the temp file goes, the old file stays, and the error is thrown. */
  #writeWhole(name: string, bytes: Buffer): void {
    let temp: TempFile;
    try {
      temp = this.#createTemp(name);
    } catch (error) {
      throw this.#failed(name, error);
    }
    try {
      writeWhole(temp.fd, bytes, 0);
      fsyncSync(temp.fd);
      this.#renameInto(temp, name);
    } catch (error) {
      rmSync(temp.path, { force: true });
      throw this.#failed(name, error);
    } finally {
      closeSync(temp.fd);
    }
  }

  writeJson(name: string, value: unknown): void {
    this.#writeWhole(name, Buffer.from(`${JSON.stringify(this.redacted(name, value), null, 2)}\n`));
  }

  /**
   * Writes `name` (result.json) over the space reserved when the directory was made, so it needs no new space
   * up to RESULT_RESERVE_BYTES. The reserve stays for another try if this one fails; without one, a plain write.
   * The content is written as given: the runner takes result.json from `redacted` first.
   */
  writeReserved(name: string, content: string): void {
    const reserve = this.#reserve;
    if (!reserve) {
      this.#writeWhole(name, Buffer.from(content));
      return;
    }
    const bytes = Buffer.from(content);
    try {
      writeWhole(reserve.fd, bytes, 0);
      ftruncateSync(reserve.fd, bytes.length);
      fsyncSync(reserve.fd);
      this.#renameInto(reserve, name);
    } catch (error) {
      throw this.#failed(name, error);
    }
    this.#reserve = null;
    closeSync(reserve.fd);
  }

  /**
   * A file the crash sweep may read back (changes.patch, with the sha256 extraction gave it): its size and sha256
   * go into checkpoint.json first, then the file is written. The sweep takes only a file that matches, never one
   * cut short or put there later.
   */
  writeRecordedFile(name: string, content: { readonly bytes: Buffer; readonly sha256: string }): void {
    this.#recorded = { ...this.#recorded, [name]: { bytes: content.bytes.length, sha256: content.sha256 } };
    this.#writeCheckpoint();
    this.#writeWhole(name, content.bytes);
  }

  /** Appends the event to the log (or counts it as left out) and returns it as the log holds it, redacted. */
  event(event: RunnerEvent): RecordedEvent {
    return this.#event(event, true) as RecordedEvent;
  }

  /**
   * As `event`, for a caller that has no use for an event the log leaves out: such an event is only counted (its
   * sequence number taken), never redacted, and null is returned. Past the agent's share of the log, a flood of a
   * gigabyte would otherwise spend a third of handoff's time redacting events nobody reads.
   */
  eventIfKept(event: RunnerEvent): RecordedEvent | null {
    return this.#event(event, false);
  }

  #event(event: RunnerEvent, returnLeftOut: boolean): RecordedEvent | null {
    // The count of left-out events goes just before run.finished, so that run.finished stays the last line.
    if (event.type === "run.finished") this.#writeLeftOutNote();
    const ownEvent = RUNNER_EVENT_TYPES.has(event.type);
    // Once the agent's share is full, its events are counted and dropped without being serialised first: a flood
    // of a gigabyte would otherwise spend a third of handoff's time building lines nobody writes.
    if (!ownEvent && this.#agentShareFull) {
      const seq = ++this.#seq;
      this.#eventsDropped++;
      // Redacted also when it is left out, for a caller that passes it on (the progress lines).
      return returnLeftOut ? this.#redactor.json({ seq, time: new Date().toISOString(), ...event } as RecordedEvent) : null;
    }
    const recorded = this.#redactor.json({ seq: ++this.#seq, time: new Date().toISOString(), ...event } as RecordedEvent);
    const line = `${JSON.stringify(recorded)}\n`;
    // Bytes, not characters: escaped garbage can be several bytes per character.
    const bytes = Buffer.byteLength(line);
    const limit = ownEvent ? MAX_EVENT_LOG_BYTES : MAX_EVENT_LOG_BYTES - RUNNER_RESERVE_BYTES;
    if (this.#eventBytes + this.#pendingBytes + bytes > limit && event.type !== "run.finished") {
      this.#eventsDropped++;
      if (!ownEvent) this.#agentShareFull = true;
      return returnLeftOut ? recorded : null;
    }
    if (ownEvent) {
      this.#flushEvents();
      this.#appendLine(line, bytes);
      return recorded;
    }
    this.#pending.push(line);
    this.#pendingBytes += bytes;
    if (this.#pendingBytes >= PENDING_EVENT_BYTES) this.#flushEvents();
    else if (!this.#flushQueued) {
      this.#flushQueued = true;
      queueMicrotask(() => {
        this.#flushQueued = false;
        this.#flushEvents();
      });
    }
    return recorded;
  }

  /**
   * Writes the agent's pending lines in one write. If that fails, what it wrote is cut back off and each line is
   * tried on its own, as if they had been written one by one. Never throws.
   */
  #flushEvents(): void {
    if (this.#pending.length === 0) return;
    const lines = this.#pending;
    const total = this.#pendingBytes;
    this.#pending = [];
    this.#pendingBytes = 0;
    if (lines.length > 1) {
      const { written, error } = writeAll(this.#eventsFd, Buffer.from(lines.join("")), null);
      if (error === null) {
        this.#eventBytes += total;
        return;
      }
      this.#failed("events.jsonl", error);
      if (!this.#cutBack(written)) {
        this.#eventsLost += lines.length; // a partial batch stays: its lines are not counted as written
        return;
      }
    }
    for (const line of lines) this.#appendLine(line, Buffer.byteLength(line));
  }

  #appendLine(line: string, bytes: number): void {
    if (this.#append(Buffer.from(line))) this.#eventBytes += bytes;
    else this.#eventsLost++;
  }

  /** One whole line or nothing: a write that fails part-way is cut back off, so no half line is left. Never throws. */
  #append(line: Buffer): boolean {
    const { written, error } = writeAll(this.#eventsFd, line, null);
    if (error === null) return true;
    this.#failed("events.jsonl", error);
    this.#cutBack(written);
    return false;
  }

  /** Cuts the last `written` bytes back off the log; false when it could not. */
  #cutBack(written: number): boolean {
    if (written === 0) return true;
    try {
      ftruncateSync(this.#eventsFd, fstatSync(this.#eventsFd).size - written);
      return true;
    } catch {
      return false; // the failure is on record; a reader skips a line that does not parse
    }
  }

  #writeLeftOutNote(): void {
    this.#flushEvents();
    const parts: string[] = [];
    if (this.#eventsDropped > 0)
      parts.push(`${this.#eventsDropped} events were left out: events.jsonl reached ${MAX_EVENT_LOG_BYTES} bytes`);
    if (this.#eventsLost > 0) parts.push(`${this.#eventsLost} events could not be written (${this.#failure?.message ?? "write failed"})`);
    if (parts.length === 0) return;
    this.#eventsDropped = 0;
    this.#eventsLost = 0;
    const line = { seq: ++this.#seq, time: new Date().toISOString(), type: "diagnostic", message: parts.join("; ") };
    this.#append(Buffer.from(`${JSON.stringify(line)}\n`));
  }

  /**
   * Where the run is: its phase, its owner and what it made; `extra` marks the end (done, terminalReason, detail,
   * cleanup). Returns false when it could not be written (the failure is kept as `writeFailure`).
   */
  /** With `--attempts`: the attempt the run is in from now on, in every later checkpoint. */
  enterAttempt(attempt: number): void {
    this.#attempt = attempt;
  }

  checkpoint(phase: Phase, extra: CheckpointEnding = {}): boolean {
    this.#checkpoint = { phase, extra };
    try {
      this.#writeCheckpoint();
      return true;
    } catch {
      return false;
    }
  }

  /** Adds directories or cgroups the run made to checkpoint.json at once, so a crash right after leaves them found. Throws if it cannot. */
  track(resources: TrackedResources): void {
    this.#tracked = mergeResources(this.#tracked, resources);
    this.#writeCheckpoint();
  }

  /** Resources the run keeps on purpose (--keep-workspace): no longer the sweep's to remove, from the next checkpoint on. */
  release(keys: readonly (keyof TrackedResources)[]): void {
    const tracked: Record<string, unknown> = { ...this.#tracked };
    for (const key of keys) delete tracked[key];
    this.#tracked = tracked as TrackedResources;
  }

  #writeCheckpoint(): void {
    const checkpoint: CheckpointJson = {
      runId: this.runId,
      nonce: this.nonce,
      phase: this.#checkpoint.phase,
      ...(this.#attempt === null ? {} : { attempt: this.#attempt }),
      pid: this.#owner.pid,
      owner: this.#owner,
      resources: this.#tracked,
      ...(Object.keys(this.#recorded).length > 0 ? { artifacts: this.#recorded } : {}),
      updatedAt: new Date().toISOString(),
      ...this.#checkpoint.extra,
    };
    this.writeJson("checkpoint.json", checkpoint);
  }

  close(): void {
    this.#writeLeftOutNote();
    try {
      fsyncSync(this.#eventsFd);
    } catch (error) {
      this.#failed("events.jsonl", error);
    }
    closeSync(this.#eventsFd);
    if (this.#reserve) {
      closeSync(this.#reserve.fd);
      rmSync(this.#reserve.path, { force: true });
      this.#reserve = null;
    }
  }
}

/** The crashed run's events.jsonl, if it is a regular file of this user with one name; else null. */
function openTrustedForAppend(path: string): number | null {
  let fd: number;
  try {
    fd = openSync(path, READ_APPEND_NO_FOLLOW, 0o600);
  } catch {
    return null;
  }
  if (untrustedBecause(fstatSync(fd)) === null) return fd;
  closeSync(fd);
  return null;
}

const EVENTS_TAIL_BYTES = 64 * 1024;

function readEventsTail(fd: number): string {
  const size = fstatSync(fd).size;
  const length = Math.min(size, EVENTS_TAIL_BYTES);
  const bytes = Buffer.alloc(length);
  const read = readSync(fd, bytes, 0, length, size - length);
  return bytes.subarray(0, read).toString("utf8");
}

/** The last line of the tail that parses as an event: its seq and type. */
function lastEvent(tail: string): { seq: number; type: string | null } | null {
  const lines = tail.split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      const event = JSON.parse(lines[i]!) as { seq?: unknown; type?: unknown };
      if (typeof event.seq === "number" && Number.isSafeInteger(event.seq))
        return { seq: event.seq, type: typeof event.type === "string" ? event.type : null };
    } catch {
      // a line cut short by the crash, or the cut-off first line of the tail
    }
  }
  return null;
}

/** A run id: one path segment, never `.` or `..` (its first character is a letter or digit), at most 128 characters. */
export const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Sortable by time, unique enough for parallel runs: 20261129T203000Z-3f9a1c. */
export function generateRunId(now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  return `${stamp}-${Math.random().toString(16).slice(2, 8).padEnd(6, "0")}`;
}

export function isSafeRunId(id: string): boolean {
  return RUN_ID_PATTERN.test(id);
}
