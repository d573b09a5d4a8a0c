import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { findTopLevel, inspectSource, listDirtyPaths } from "../clone/source-repo.js";
import { UsageError } from "../lib/errors.js";
import { applyRun } from "../review/apply.js";
import { chosenCandidate, loadTrustedRun } from "../review/chosen-run.js";
import { renderReport } from "../review/report.js";
import { latestFinishedRun, listRuns } from "../run-dir/run-index.js";
import { isSafeRunId } from "../run-dir/run-dir.js";
import type { LoadedRun } from "../run-dir/run-lookup.js";
import { type McpServerSettings, allowedRepo, isAllowedRepo } from "./server-settings.js";
import { answering } from "./tool-errors.js";

const RunId = z
  .string()
  .refine(isSafeRunId, "a run id: letters, digits, '.', '_' or '-'")
  .optional()
  .describe("the run's id (default: the repository's latest finished run)");
const Repo = z.string().min(1).optional().describe("the repository (default: the server's)");

/** Registers `list_runs`, `show_run` and `apply_run`: the server's runs, read and applied as `handoff list/show/apply` do. */
export function registerRunTools(server: McpServer, settings: McpServerSettings): void {
  server.registerTool(
    "list_runs",
    {
      title: "List handoff runs",
      description: "The newest runs of the repository first: id, start, backend, verdict.",
      inputSchema: z.strictObject({
        repo: Repo,
        limit: z.number().int().positive().max(200).optional().describe("at most this many (default 20)"),
      }),
      annotations: { readOnlyHint: true },
    },
    ({ repo, limit }) =>
      answering(async () => {
        const top = await topLevel(allowedRepo(settings, repo));
        const runs = listRuns(settings.runsDir, { repo: top, limit: limit ?? 20 });
        return { content: [{ type: "text", text: `${JSON.stringify(runs, null, 2)}\n` }], structuredContent: { runs } };
      }),
  );
  server.registerTool(
    "show_run",
    {
      title: "Show a handoff run's report",
      description: "The report a reviewer reads for one run (`handoff show`): the verdict, what was checked, the patch's files, warnings.",
      inputSchema: z.strictObject({
        runId: RunId,
        repo: Repo,
        format: z.enum(["text", "markdown", "json"]).optional().describe("text (default), markdown or json (result.json)"),
      }),
      annotations: { readOnlyHint: true },
    },
    ({ runId, repo, format }) =>
      answering(async () => {
        const run = await theRun(settings, runId, repo);
        return { content: [{ type: "text", text: renderReport(run, format ?? "text") }] };
      }),
  );
  server.registerTool(
    "apply_run",
    {
      title: "Stage a verified patch",
      description:
        "Applies a verified run's patch to the repository's work tree and index (as `git apply --index`), only if it applies exactly. Refused for a run that did not verify, and for a repository with uncommitted changes unless the user allowed it.",
      inputSchema: z.strictObject({
        runId: RunId,
        repo: Repo,
        candidate: z.number().int().positive().optional().describe("of a best-of-N run: this candidate instead of the winner"),
      }),
      annotations: { readOnlyHint: false, destructiveHint: false },
    },
    ({ runId, repo, candidate }) =>
      answering(async () => {
        const named = await theRun(settings, runId, repo);
        const { run } = chosenCandidate(named, candidate);
        const target = named.result.repo.path;
        if (!settings.allowDirty) {
          const dirty = await listDirtyPaths(await inspectSource(target));
          if (dirty.length > 0)
            throw new UsageError(
              "dirty_source",
              `${target} has uncommitted changes (${dirty.slice(0, 5).join(", ")}${dirty.length > 5 ? ", …" : ""}); commit or stash them, or start handoff mcp with --allow-dirty`,
            );
        }
        const outcome = await applyRun(run, target);
        const text = `staged ${outcome.files.length} file(s) of run ${named.result.runId} in ${outcome.repo}${outcome.rebased ? " (HEAD had moved; the patch still applied cleanly)" : ""}:\n${outcome.files.join("\n")}\n`;
        return { content: [{ type: "text", text }], structuredContent: { ...outcome } };
      }),
  );
}

async function topLevel(dir: string): Promise<string> {
  const top = await findTopLevel(dir);
  if (top === null) throw new UsageError("not_a_repository", `${dir} is not inside a git repository`);
  return top;
}

/** The run named, or the latest finished one of the repository; only a run of a repository this server may act on. */
async function theRun(settings: McpServerSettings, runId: string | undefined, repo: string | undefined): Promise<LoadedRun> {
  const top = await topLevel(allowedRepo(settings, repo));
  let ref = runId;
  if (ref === undefined) {
    const latest = latestFinishedRun(settings.runsDir, top);
    if (latest === null) throw new UsageError("no_finished_run", `no finished run of ${top} in ${settings.runsDir}`);
    ref = latest.dir;
  }
  const run = loadTrustedRun(ref, settings.runsDir);
  if (!isAllowedRepo(settings, run.result.repo.path))
    throw new UsageError(
      "repo_not_allowed",
      `run ${run.result.runId} is of ${run.result.repo.path}, not a repository this server may act on`,
    );
  return run;
}
