/**
 * `handoff resume`: what a new run takes from the finished run whose session it continues. The new run starts from a
 * fresh clone of the same base with the earlier patch applied, moves the kept CLI home into its own place, and
 * resumes the recorded session with the user's instruction as its first turn.
 */
export interface ContinueFrom {
  /** The earlier run's id and directory, for `resumedFrom` in result.json. */
  readonly runId: string;
  readonly runDir: string;
  /** The session the earlier run's last attempt reported; null when none arrived (a CLI backend cannot resume then). */
  readonly sessionId: string | null;
  /** The earlier run's working tree (removed by now; claude, pi and omp key their sessions by it). */
  readonly cwd: string;
  /** The earlier run's kept private CLI home, moved into this run's; null for a backend that keeps no session state. */
  readonly home: string | null;
  /** The earlier run's patch (its changes.patch, checked against the sha256 its result.json names). */
  readonly patch: Buffer;
  /** The earlier run's base commit: the source's HEAD must still be at it (the patch was made against it). */
  readonly baseCommit: string;
  /** The sha256 of each held-out patch the earlier run verified with: the same files must be given again. */
  readonly holdouts: readonly string[];
}
