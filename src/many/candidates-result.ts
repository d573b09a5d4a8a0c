import { join } from "node:path";
import { z } from "zod";
import { readArtifact } from "../run-dir/artifact-file.js";
import { OwnerJson } from "../run-dir/artifacts/checkpoint.js";
import type { RunDirectory } from "../run-dir/run-dir.js";
import { EXIT_CODES } from "../vocabulary/terminal-reasons.js";
import { NO_FACTS, decideOutcome } from "../verdict/decide.js";
import type { CandidateEntry, RunResult } from "../verdict/result.js";
import { agreementGroups, chooseWinner } from "./winner.js";

// The parent result.json of a candidates run, from its candidates' results: written by the candidates run
// (candidates.ts) and, for one whose handoff died, by the crash sweep (src/run-dir/crash-sweep.ts), by the same rule.

/** A candidate's run, in short, for the list in result.json. */
export function candidateEntry(k: number, result: RunResult): CandidateEntry {
  return {
    k,
    backend: result.backend.name,
    runId: result.runId,
    runDir: result.runDir,
    terminalReason: result.terminalReason,
    exitCode: EXIT_CODES[result.terminalReason],
    warnings: result.policy.warnings.length,
    patchBytes: result.patch?.bytes ?? 0,
    patchSha256: result.patch?.sha256 ?? null,
    durationMs: result.timings.durationMs,
    finishedAt: new Date(Date.parse(result.timings.startedAt) + result.timings.durationMs).toISOString(),
    costUsd: result.agent.usage?.costUsd ?? null,
    agreesWith: [],
  };
}

/**
 * The run's result.json from its candidates' results (at least one; each with its k): the winner's verdict under the
 * run's own id and directory, with `candidates`, `winner` and `agreement`. A candidate that saw the source change
 * gives the run its verdict; a change only the snapshots around all candidates saw is decided by decideOutcome like
 * any other.
 */
export function candidatesResult(
  dir: { readonly runId: string; readonly path: string },
  startedAt: Date,
  results: readonly { readonly k: number; readonly result: RunResult }[],
  changedBetween: readonly string[],
): RunResult {
  const resultOf = (k: number) => results.find((entry) => entry.k === k)!.result;
  const agreement = agreementGroups(results.map(({ k, result }) => candidateEntry(k, result)));
  const candidates = results.map(({ k, result }) => {
    const group = agreement.find((ks) => ks.includes(k)) ?? [];
    return { ...candidateEntry(k, result), agreesWith: group.filter((other) => other !== k) };
  });
  const changed = candidates.find((candidate) => candidate.terminalReason === "source_repository_changed");
  const best = chooseWinner(candidates)!;
  let base: RunResult;
  let winner: number | null = null;
  if (changed) base = resultOf(changed.k);
  else if (changedBetween.length > 0) {
    const verdict = decideOutcome({ ...NO_FACTS, sourceChanged: changedBetween });
    base = { ...resultOf(best.k), ...verdict, sourceInvariant: { matched: false, changed: [...changedBetween] } };
  } else {
    base = resultOf(best.k);
    winner = best.k;
  }
  const timings = { ...base.timings, startedAt: startedAt.toISOString(), durationMs: Date.now() - startedAt.getTime() };
  return { ...base, runId: dir.runId, runDir: dir.path, timings, candidates, winner, agreement };
}

/**
 * Ends a candidates run's directory, the same way for the run and for the sweep: changes.patch (the winner's, as its
 * own run directory holds it; empty without a winner), the run.finished event, then result.json into the space reserved
 * for it, last. Returns the result as written.
 */
export function finishCandidatesRun(
  dir: RunDirectory,
  result: RunResult,
  results: readonly { readonly k: number; readonly result: RunResult }[],
): RunResult {
  const winner = results.find((entry) => entry.k === result.winner)?.result;
  const patch = winner ? readArtifact(join(winner.runDir, "changes.patch"), 1024 * 1024 * 1024) : null;
  dir.writeFile("changes.patch", patch?.kind === "bytes" ? patch.bytes : Buffer.alloc(0));
  dir.event({ type: "run.finished", terminalReason: result.terminalReason, detail: result.detail });
  const written = dir.redacted("result.json", result);
  dir.writeReserved("result.json", `${JSON.stringify(written, null, 2)}\n`);
  return written;
}

/** `candidates.json` in a candidates run's directory: its owner (as checkpoint.json records a run's), its size and start. */
export const CANDIDATES_RECORD = "candidates.json";
export const CandidatesRecord = z.looseObject({ owner: OwnerJson, total: z.number().int().positive(), startedAt: z.string() });
