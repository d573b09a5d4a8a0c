import { createHash } from "node:crypto";
import type { ExternalAgentResult } from "../agent/backend.js";
import { escapeControls } from "../patch/rules/path-names.js";
import type { RunResult } from "../verdict/result.js";
import type { Survivor } from "../containment/survivors.js";
import { statusOf } from "../verdict/decide.js";

/** What the crash sweep knows about a run whose handoff died: enough for an honest result.json, nothing guessed. */
export interface CrashedRun {
  readonly runId: string;
  readonly runDir: string;
  /** The phase checkpoint.json named, or null when the run died before its first phase. */
  readonly phase: string | null;
  readonly ownerPid: number;
  readonly repo: { readonly path: string; readonly baseCommit: string };
  readonly backendName: string;
  /** backend-result.json of an agent phase that finished before the crash, if any. */
  readonly agent: Pick<ExternalAgentResult, "executable" | "version" | "sessionId" | "exitCode" | "signal" | "finalMessage"> | null;
  /** changes.patch as the dead run left it: non-empty only when extraction had finished and the file is the one it recorded. */
  readonly patch: Buffer;
  /** Why a non-empty changes.patch was not taken as the run's patch (not the recorded one, a link), or null. */
  readonly patchNotTaken?: string | null;
  readonly startedAt: Date;
  /** The last time the run was seen writing (events.jsonl, checkpoint.json). */
  readonly lastSeenAt: Date;
  readonly killed: readonly Survivor[];
  readonly stillAlive: readonly Survivor[];
  readonly removed: readonly string[];
}

export const CRASH_DETAIL = "runner_crashed";

type PatchFileSummary = { path: string; change: "added" | "modified" | "deleted"; additions: number; deletions: number };

/**
 * Per-file counts read from a `git diff --no-renames` patch. Paths come from the `diff --git a/P b/P` header (the
 * same path twice without renames), as git printed them: quoted when they hold special characters.
 */
export function summarizePatch(patch: Buffer): PatchFileSummary[] {
  const files: PatchFileSummary[] = [];
  let current: PatchFileSummary | null = null;
  let inHunk = false;
  for (const line of patch.toString("utf8").split("\n")) {
    if (line.startsWith("diff --git ")) {
      const pair = line.slice("diff --git ".length);
      const half = pair.slice(0, (pair.length - 1) / 2);
      const path = half.replace(/^"a\//, '"').replace(/^a\//, "");
      current = { path: escapeControls(path), change: "modified", additions: 0, deletions: 0 };
      files.push(current);
      inHunk = false;
    } else if (!current) {
      continue;
    } else if (!inHunk && line.startsWith("new file mode")) {
      current.change = "added";
    } else if (!inHunk && line.startsWith("deleted file mode")) {
      current.change = "deleted";
    } else if (line.startsWith("@@")) {
      inHunk = true;
    } else if (inHunk && line.startsWith("+")) {
      current.additions++;
    } else if (inHunk && line.startsWith("-")) {
      current.deletions++;
    }
  }
  return files;
}

function survivorNote(run: CrashedRun): string {
  const parts: string[] = [];
  if (run.killed.length > 0) parts.push(`${run.killed.length} leftover process(es) killed`);
  if (run.removed.length > 0) parts.push(`${run.removed.length} directory(ies) removed`);
  return parts.length > 0 ? `; ${parts.join(", ")}` : "";
}

/** result.json for a run swept after its handoff died: user_cancelled, detail runner_crashed. */
export function buildCrashedRunResult(run: CrashedRun): RunResult {
  const when = run.phase ? `during the ${run.phase} phase` : "before its first phase";
  const alive = run.stillAlive.map((s) => `${s.pid} (${s.command})`).join(", ");
  const hint = alive
    ? `these processes of the run could not be killed: ${alive}; stop them yourself, then run the task again`
    : "nothing of this run was verified; run the task again";
  return {
    schemaVersion: 1,
    runId: run.runId,
    runDir: run.runDir,
    status: statusOf("user_cancelled"),
    terminalReason: "user_cancelled",
    detail: CRASH_DETAIL,
    summary: `handoff was stopped ${when} (pid ${run.ownerPid}) and did not finish; swept by a later handoff start${survivorNote(run)}${run.patchNotTaken ? `; ${run.patchNotTaken}: not taken as its patch` : ""}`,
    hint,
    repo: { path: run.repo.path, baseCommit: run.repo.baseCommit },
    backend: {
      name: run.backendName,
      executable: run.agent?.executable ?? null,
      version: run.agent?.version ?? null,
      sessionId: run.agent?.sessionId ?? null,
      exitCode: run.agent?.exitCode ?? null,
      signal: run.agent?.signal ?? null,
    },
    patch: run.patch.length === 0 ? null : { sha256: createHash("sha256").update(run.patch).digest("hex"), files: summarizePatch(run.patch) },
    policy: { violations: [], warnings: [] },
    verification: { ran: false, passed: null, commands: [], baseline: null },
    agent: { finalMessage: run.agent?.finalMessage ?? null, usage: null, claim: null },
    // The final check of the source never ran: not a claim that it held.
    sourceInvariant: { matched: false, changed: ["(not checked: handoff stopped before its final check)"] },
    timings: {
      startedAt: run.startedAt.toISOString(),
      durationMs: Math.max(0, run.lastSeenAt.getTime() - run.startedAt.getTime()),
      phases: {},
    },
    workspace: null,
    sweep: {
      killed: run.killed.map(({ pid, command, reason }) => ({ pid, command, reason })),
      stillAlive: run.stillAlive.map(({ pid, command, reason }) => ({ pid, command, reason })),
      removed: [...run.removed],
    },
  };
}
