import { z } from "zod";
import { renderReport } from "../review/report.js";
import { type LoadedRun, loadPatch } from "../run-dir/run-lookup.js";
import type { RunResult } from "../verdict/result.js";
import { EXIT_CODES, TERMINAL_REASONS } from "../vocabulary/terminal-reasons.js";

/** The most of a patch a tool answer carries inline; a larger one is named by its path in the run directory. */
export const MAX_INLINE_PATCH_BYTES = 100 * 1024;

/** What `delegate` answers: handoff's verdict on the run, its patch, and where the run directory is. */
export const RunOutcome = z.object({
  runId: z.string(),
  terminalReason: z.enum(TERMINAL_REASONS).describe("verified only when handoff's own verification passed on the extracted patch"),
  verified: z.boolean(),
  exitCode: z.number().int().describe("what `handoff run` would have exited with"),
  detail: z.string().nullable(),
  summary: z.string(),
  hint: z.string().nullable(),
  runDir: z.string().describe("the complete run directory; `handoff show RUN_ID` reads it"),
  report: z.string().describe("the report a reviewer reads (`handoff show`)"),
  patch: z
    .object({
      files: z.array(
        z.object({ path: z.string(), change: z.enum(["added", "modified", "deleted"]), additions: z.number(), deletions: z.number() }),
      ),
      additions: z.number(),
      deletions: z.number(),
      /** The patch itself, unless it is larger than MAX_INLINE_PATCH_BYTES (then null: read `path`). */
      diff: z.string().nullable(),
      path: z.string(),
    })
    .nullable()
    .describe("the changes handoff extracted from the clone (null when the agent changed nothing usable)"),
});
export type RunOutcome = z.infer<typeof RunOutcome>;

/** A finished run as `delegate` answers it. */
export function outcomeOf(result: RunResult): RunOutcome {
  // The runner's own result: nothing has read result.json back, and nothing needs to.
  const run: LoadedRun = { dir: result.runDir, result };
  const patch = result.patch;
  const files = (patch?.files ?? []).map(({ path, change, additions, deletions }) => ({ path, change, additions, deletions }));
  return {
    runId: result.runId,
    terminalReason: result.terminalReason,
    verified: result.terminalReason === "verified",
    exitCode: EXIT_CODES[result.terminalReason],
    detail: result.detail,
    summary: result.summary,
    hint: result.hint,
    runDir: result.runDir,
    report: renderReport(run, "text"),
    patch: patch
      ? {
          files,
          additions: files.reduce((sum, file) => sum + file.additions, 0),
          deletions: files.reduce((sum, file) => sum + file.deletions, 0),
          diff: inlineDiff(run),
          path: `${result.runDir}/changes.patch`,
        }
      : null,
  };
}

function inlineDiff(run: LoadedRun): string | null {
  const bytes = loadPatch(run);
  return bytes.length <= MAX_INLINE_PATCH_BYTES ? bytes.toString("utf8") : null;
}
