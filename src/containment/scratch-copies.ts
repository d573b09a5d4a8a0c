import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { captureProcess, runSystemCommandSync } from "../process/process.js";

const SYSTEM_ENV = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" };

/**
 * Writable copies of the directories a toolchain manager writes in ordinary use (pyenv's shims), one fresh copy per
 * jail, thrown away with the run's scratch space. Each copy is the system's `cp -a` (docs/threat-model.md F5). The next
 * copy of each directory is made ahead, in the background, so a jail's start takes a ready one instead of waiting on
 * `cp` (a sandbox is built synchronously); where none is ready yet, it is made there and then, as before.
 */
export class ScratchCopies {
  readonly #scratch: string;
  /** Per directory, the copy being made ahead: `copy` set once `cp` has finished with it. */
  readonly #ahead = new Map<string, { copy: string | null }>();
  readonly #pending = new Set<Promise<void>>();
  #closed = false;

  constructor(dirs: readonly string[], scratch: string) {
    this.#scratch = scratch;
    for (const dir of dirs) this.#makeAhead(dir);
  }

  /** A copy of `dir` no jail has had, or null when `cp` failed (the directory is then bound read-only). */
  take(dir: string): string | null {
    const ready = this.#ahead.get(dir)?.copy ?? null;
    // A copy still being made is left to finish unused; the next one is started now.
    this.#ahead.delete(dir);
    const copy = ready ?? this.#copyNow(dir);
    this.#makeAhead(dir);
    return copy;
  }

  /** Waits for the copies being made ahead. */
  async settle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending);
  }

  /** Makes no more copies and waits for those still being made: the scratch space can then be removed. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.settle();
  }

  #copyNow(dir: string): string | null {
    const copy = mkdtempSync(join(this.#scratch, "toolchain-"));
    return runSystemCommandSync("cp", ["-a", "--", `${dir}/.`, copy]) ? copy : null;
  }

  #makeAhead(dir: string): void {
    if (this.#closed) return;
    let copy: string;
    try {
      copy = mkdtempSync(join(this.#scratch, "toolchain-"));
    } catch {
      return; // made when a jail takes it, where a failure is what it was before
    }
    const slot: { copy: string | null } = { copy: null };
    this.#ahead.set(dir, slot);
    const made = captureProcess({
      file: "cp",
      args: ["-a", "--", `${dir}/.`, copy],
      cwd: this.#scratch,
      env: SYSTEM_ENV,
      timeoutMs: 30_000,
    })
      .then(
        (ran) => ran.exitCode === 0,
        () => false,
      )
      .then((copied) => {
        if (this.#ahead.get(dir) !== slot) return; // taken while being made: a fresh one was made for that jail
        if (copied) slot.copy = copy;
        else this.#ahead.delete(dir);
      })
      .finally(() => this.#pending.delete(made));
    this.#pending.add(made);
  }
}
