import { ArtifactWriteError } from "../lib/errors.js";
import type { RunDirectory } from "../run-dir/run-dir.js";
import type { RunFacts } from "../verdict/decide.js";
import type { RecordedEvent, RunnerEvent } from "../vocabulary/events.js";
import { type FailablePhase, phaseFailedDetail } from "../verdict/detail.js";

/**
 * A hook on a run's recorded events. `wants`, when given, names the event types the hook has a use for: it is still
 * called with any event, but one the event log leaves out (an agent's flood past its share) reaches it only when
 * wanted, and is otherwise counted and dropped without being redacted first.
 */
export type EventHook = ((event: RecordedEvent) => void) & { readonly wants?: (type: RecordedEvent["type"]) => boolean };

/**
 * How a run is recorded as it goes: its events (to events.jsonl and the caller's hook), its phases (checkpoint,
 * events, timing) and its writes that may fail. A phase that throws becomes an artifact error, never a lost run.
 */
export class RunRecorder {
  readonly dir: RunDirectory;
  readonly #onEvent: EventHook | undefined;
  readonly #signal: AbortSignal | undefined;
  /** Milliseconds spent in each phase (result.json's `timings.phases`). */
  readonly phases: Record<string, number> = {};
  /** The first phase that threw. */
  artifactError: RunFacts["artifactError"] = null;

  constructor(dir: RunDirectory, onEvent: EventHook | undefined, signal: AbortSignal | undefined) {
    this.dir = dir;
    this.#onEvent = onEvent;
    this.#signal = signal;
  }

  emit(event: RunnerEvent): void {
    const hook = this.#onEvent;
    if (hook && (hook.wants?.(event.type) ?? true)) {
      hook(this.dir.event(event));
      return;
    }
    // Nobody reads it unless the log keeps it: one the log leaves out is not even redacted.
    const recorded = this.dir.eventIfKept(event);
    if (hook && recorded) hook(recorded);
  }

  get cancelled(): boolean {
    return this.#signal?.aborted ?? false;
  }

  /** Nothing more is started once the run is cancelled or a write to its run directory failed (a full disk). */
  get halted(): boolean {
    return this.cancelled || this.dir.writeFailure !== null;
  }

  /** A write to the run directory that may fail: the failure is kept by the run directory and ends the run. */
  tryWrite(write: () => void): boolean {
    try {
      write();
      return true;
    } catch (error) {
      if (error instanceof ArtifactWriteError) return false;
      throw error;
    }
  }

  /**
   * Runs one phase: checkpoint, events, timing. A throw becomes an artifact error, never a lost run. A checkpoint
   * that cannot be written halts the run after this phase (a phase that makes something calls `track`, which throws).
   * `since`: when the phase's work began, where it was started early beside an earlier phase and is judged only now
   * (its time then overlaps that phase's: docs/gates.md).
   */
  async phase<T>(phase: FailablePhase, body: () => Promise<T>, since?: number): Promise<T | undefined> {
    this.dir.checkpoint(phase);
    this.emit({ type: "phase.started", phase });
    const started = since ?? Date.now();
    try {
      const value = await body();
      this.#finishPhase(phase, started, null);
      return value;
    } catch (error) {
      this.#finishPhase(phase, started, (error as Error).message);
      this.artifactError ??= { detail: phaseFailedDetail(phase), message: `${phase} failed: ${(error as Error).message}` };
      return undefined;
    }
  }

  /** `failure`: what the phase threw, or null when it returned. */
  #finishPhase(phase: FailablePhase, started: number, failure: string | null): void {
    const durationMs = Date.now() - started;
    this.phases[phase] = (this.phases[phase] ?? 0) + durationMs;
    this.emit({ type: "phase.finished", phase, durationMs, ok: failure === null, ...(failure ? { note: failure } : {}) });
  }
}
