import type { ExternalAgentResult } from "../agent/backend.js";
import type { ParsedPatch } from "../patch/patch.js";
import { escapeControls } from "../vocabulary/display.js";
import type { RunResult } from "../verdict/result.js";
import type { Survivor } from "../containment/survivors.js";
import { NO_FACTS, decideOutcome } from "../verdict/decide.js";
import { buildRunResult } from "../verdict/build-result.js";

/** What the crash sweep knows about a run whose handoff died: enough for an honest result.json, nothing guessed. */
export interface CrashedRun {
  readonly runId: string;
  readonly runDir: string;
  /** The phase checkpoint.json named, or null when the run died before its first phase. */
  readonly phase: string | null;
  /** With `--attempts`: the attempt the run was in (earlier ones are in attempts/<k>/), else null. */
  readonly attempt?: number | null;
  readonly ownerPid: number;
  readonly repo: { readonly path: string; readonly baseCommit: string };
  readonly backendName: string;
  /** backend-result.json of an agent phase that finished before the crash, if any. */
  readonly agent: Pick<ExternalAgentResult, "executable" | "version" | "sessionId" | "exitCode" | "signal" | "finalMessage"> | null;
  /** changes.patch as the dead run left it: only when extraction had finished and the file is the one it recorded. */
  readonly patch: ParsedPatch | null;
  /** Why a non-empty changes.patch was not taken as the run's patch (not the recorded one, a link), or null. */
  readonly patchNotTaken?: string | null;
  readonly startedAt: Date;
  /** The last time the run was seen writing (events.jsonl, checkpoint.json). */
  readonly lastSeenAt: Date;
  readonly killed: readonly Survivor[];
  readonly stillAlive: readonly Survivor[];
  readonly removed: readonly string[];
}

/** The final check of the source never ran: not a claim that it held. */
const SOURCE_NOT_CHECKED = "(not checked: handoff stopped before its final check)";

/**
 * result.json for a run swept after its handoff died: the verdict is decideOutcome's (user_cancelled, detail
 * runner_crashed) from the one fact such a run has, and the file is built by buildRunResult like any run's.
 */
export function crashedRunResult(run: CrashedRun): RunResult {
  const verdict = decideOutcome({
    ...NO_FACTS,
    crashed: {
      phase: run.phase,
      attempt: run.attempt ?? null,
      ownerPid: run.ownerPid,
      killed: run.killed.length,
      removed: run.removed.length,
      stillAlive: run.stillAlive,
      patchNotTaken: run.patchNotTaken ?? null,
    },
  });
  return buildRunResult({
    runId: run.runId,
    runDir: run.runDir,
    verdict,
    source: { topLevel: run.repo.path, baseCommit: run.repo.baseCommit },
    backendName: run.backendName,
    agent: run.agent,
    // The files as the patch names them (quoted as git quoted them): the run's own list died with it. Never verified.
    extraction: run.patch
      ? {
          patch: run.patch.bytes,
          sha256: run.patch.sha256,
          files: run.patch.files.map((file) => ({
            path: escapeControls(file.path),
            change: file.change,
            additions: file.additions,
            deletions: file.deletions,
          })),
          violations: [],
          warnings: [],
        }
      : null,
    extraWarnings: [],
    setupRecords: [],
    verification: null,
    held: null,
    baseline: null,
    verify: [],
    testEdits: null,
    inputViolations: [],
    holdouts: [],
    tests: null,
    verificationSkipped: null,
    sourceChanged: [SOURCE_NOT_CHECKED],
    startedAt: run.startedAt,
    endedAt: run.lastSeenAt,
    phases: {},
    workspace: null,
    containment: null,
    sweep: { killed: run.killed, stillAlive: run.stillAlive, removed: run.removed },
  });
}
