import { join } from "node:path";
import { ApplyRefusedError, UntrustedArtifactError, UsageError } from "../lib/errors.js";
import { type LoadedRun, loadRun } from "../run-dir/run-lookup.js";
import { escapeControls } from "../vocabulary/display.js";

/** `apply` of a candidates run: the winner, or candidate k (`--candidate k`), loaded from `<run>/candidates/<k>/`. */
export function chosenCandidate(run: LoadedRun, k: number | undefined): { run: LoadedRun; k: number | null } {
  const candidates = run.result.candidates;
  if (!candidates) {
    if (k !== undefined)
      throw new UsageError(
        "not_a_candidates_run",
        `--candidate applies to a candidates run; run ${escapeControls(run.result.runId)} has none`,
      );
    return { run, k: null };
  }
  const chosen = k ?? run.result.winner ?? null;
  if (chosen === null)
    throw new ApplyRefusedError(
      "no_winner",
      `candidates run ${escapeControls(run.result.runId)} has no winner (${run.result.terminalReason}); nothing is applied (--candidate k applies one by choice)`,
    );
  if (!candidates.some((candidate) => candidate.k === chosen))
    throw new UsageError(
      "bad_candidate",
      `run ${escapeControls(run.result.runId)} has candidates 1 to ${candidates.length}, not ${chosen}`,
    );
  const loaded = loadTrustedRun(join(run.dir, "candidates", String(chosen)), undefined);
  return { run: { ...loaded, candidate: { k: chosen, of: run.result.runId } }, k: chosen };
}

/** For `apply`, a result.json that is a link or another user's file is a refusal (exit 1), not a usage error. */
export function loadTrustedRun(ref: string, runsDir: string | undefined) {
  try {
    return loadRun(ref, runsDir);
  } catch (error) {
    if (error instanceof UntrustedArtifactError) throw new ApplyRefusedError("untrusted_artifact", error.message);
    throw error;
  }
}
