import { homedir } from "node:os";
import { basename } from "node:path";
import type { LoadedRun } from "../run-dir/run-lookup.js";

/**
 * The markdown report is a pull request's body and a workflow's step summary: no path of the machine that ran the run
 * belongs there. Its sections leave out the paths they know (ReportWriter.localPaths); what a message, a reason or
 * the agent's words still carry is rewritten here, the longest first: a path under the run directory relative to it,
 * the run directory as the run id, a path in the repository relative to it, the repository as its name, and a
 * path in the home directory from `~`; a held-out patch by its file name.
 */
export function localPathsOut(markdown: string, run: LoadedRun): string {
  const roots: [string, string][] = [
    [run.dir, run.result.runId],
    [run.result.repo.path, basename(run.result.repo.path)],
    [homedir(), "~"],
    // A held-out patch by its file name (the report already says which by its sha256).
    ...(run.result.verification?.holdouts ?? []).map((holdout): [string, string] => [holdout.source, basename(holdout.source)]),
  ];
  let out = markdown;
  for (const [root, name] of roots.filter(([root]) => root.length > 1).sort((a, b) => b[0].length - a[0].length)) {
    const within = name === "~" ? "~/" : "";
    // The root itself, not a longer name that starts with it (`/tmp/repo` in `/tmp/repository`).
    out = out.replace(new RegExp(`${escapeRegExp(root)}(?:/|(?![\\w.-]))`, "gu"), (match) => (match.endsWith("/") ? within : name));
  }
  return out;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/gu, "\\$&");
}
