import { mkdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import type { RunDirectory } from "../run-dir/run-dir.js";
import { runNames } from "../vocabulary/run-names.js";

/**
 * The agent CLI's private home over one run, and the one owner of that directory: made by the first turn (or, for
 * `handoff resume`, the earlier run's kept home moved in), the same for every later turn (the session's state lives
 * there), then removed with the run, kept for `handoff resume` (`--keep-session`), or given back to the run it came
 * from when the session could not continue. The backend links the user's login in only while a turn runs.
 */
export class SessionHome {
  readonly #dir: RunDirectory;
  readonly #homesDir: string;
  /** The earlier run's kept home (`handoff resume`), moved in by the first turn. */
  readonly #movedIn: string | null;
  #path: string | null = null;
  #kept = false;

  constructor(dir: RunDirectory, homesDir: string, movedIn: string | null) {
    this.#dir = dir;
    this.#homesDir = homesDir;
    this.#movedIn = movedIn;
  }

  /**
   * The home's path, made (or moved in) by the first call; recorded in the checkpoint before it exists. The move is
   * the claim: `handoff gc` removes a kept home only by renaming it away first, so whichever renames it first has it.
   * A kept home gone by then (gc, or another resume, took it first) is `{ gone }` when the session needs it, and a
   * new empty home when it does not (the command backend keeps no session).
   */
  open(sessionNeeded = true): string | { readonly gone: string } {
    if (this.#path !== null) return this.#path;
    const path = join(this.#homesDir, runNames(this.#dir.runId, this.#dir.nonce).cliHome);
    this.#dir.track({ cliHome: path });
    mkdirSync(this.#homesDir, { recursive: true, mode: 0o700 });
    let moved = false;
    if (this.#movedIn) {
      try {
        renameSync(this.#movedIn, path);
        moved = true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
        if (sessionNeeded) return { gone: this.#movedIn };
      }
    }
    if (!moved) mkdirSync(path, { mode: 0o700 });
    this.#path = path;
    return path;
  }

  /** A moved-in home goes back where it was kept (when its place is still free): a turn that never ran used nothing up. */
  giveBack(): void {
    if (this.#movedIn === null || this.#path === null) return;
    try {
      renameSync(this.#path, this.#movedIn);
      this.#path = null;
    } catch {
      // its place was taken: the home stays this run's, removed with it
    }
  }

  /** `--keep-session`: the home outlives the run, released from its tracking so that no sweep removes it. False when there is none. */
  keep(): boolean {
    if (this.#path === null) return false;
    this.#dir.release(["cliHome"]);
    this.#kept = true;
    return true;
  }

  get path(): string | null {
    return this.#path;
  }

  /** The home the run must remove at its end: none when kept, given back or never made. */
  get toRemove(): string | null {
    return this.#kept ? null : this.#path;
  }
}
