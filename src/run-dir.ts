import { closeSync, fsyncSync, mkdirSync, openSync, realpathSync, renameSync, writeSync } from "node:fs";
import { join } from "node:path";
import { UsageError } from "./errors.js";
import type { Phase, RecordedEvent, RunnerEvent } from "./events.js";

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

/**
 * A run's directory: files mode 0600, each whole file written atomically (temp file, fsync, rename), events
 * appended one line at a time. The event log is bounded; what is left out is counted in a final line.
 */
export class RunDirectory {
  readonly path: string;
  readonly runId: string;
  #seq = 0;
  #eventsFd: number;
  #eventBytes = 0;
  #eventsDropped = 0;

  private constructor(path: string, runId: string) {
    this.path = path;
    this.runId = runId;
    this.#eventsFd = openSync(join(path, "events.jsonl"), "a", 0o600);
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
    return new RunDirectory(path, runId);
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
    const line = `${JSON.stringify(recorded)}\n`;
    if (this.#eventBytes + line.length > MAX_EVENT_LOG_BYTES && event.type !== "run.finished") {
      this.#eventsDropped++;
      return recorded;
    }
    this.#eventBytes += line.length;
    writeSync(this.#eventsFd, line);
    return recorded;
  }

  checkpoint(phase: Phase, extra: Record<string, unknown> = {}): void {
    this.writeJson("checkpoint.json", { runId: this.runId, phase, pid: process.pid, updatedAt: new Date().toISOString(), ...extra });
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

/** Sortable by time, unique enough for parallel runs: 20261129T203000Z-3f9a1c. */
export function generateRunId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  return `${stamp}-${Math.random().toString(16).slice(2, 8).padEnd(6, "0")}`;
}

export function isSafeRunId(id: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(id) && id !== "." && id !== "..";
}
