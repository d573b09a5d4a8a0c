import { findTopLevel } from "../clone/source-repo.js";
import { UsageError } from "../lib/errors.js";
import { escapeControls } from "../vocabulary/display.js";
import { latestFinishedRun } from "../run-dir/run-index.js";
import { type LoadedRun, loadRun } from "../run-dir/run-lookup.js";
import { type NamedBatch, findBatch } from "../run-dir/batch-lookup.js";
import { defaultRunsDir } from "../run-dir/default-places.js";

/** What `show` and `apply` were pointed at: a run, or a batch (named where a run was expected: it has none of its own). */
export type Named = { readonly kind: "run"; readonly run: LoadedRun } | { readonly kind: "batch"; readonly batch: NamedBatch };

/**
 * What `show` and `apply` act on: the run or batch named, else the latest finished run of the repository `repoDir` is
 * in (latestFinishedRun), said on stderr. No repository there, or no finished run of it, is a usage error.
 */
export async function namedOrLatestRun(
  ref: string | undefined,
  runsDir: string | undefined,
  repoDir: string,
  load: (ref: string, runsDir: string | undefined) => LoadedRun = loadRun,
): Promise<Named> {
  if (ref !== undefined) {
    const batch = findBatch(ref, runsDir ?? defaultRunsDir());
    return batch === null ? { kind: "run", run: load(ref, runsDir) } : { kind: "batch", batch };
  }
  const repo = await findTopLevel(repoDir);
  if (repo === null)
    throw new UsageError(
      "no_repository",
      `no run named, and ${escapeControls(repoDir)} is not inside a git repository whose latest run it could mean: name a run (handoff list --all shows them)`,
    );
  const dir = runsDir ?? defaultRunsDir();
  const latest = latestFinishedRun(dir, repo);
  if (latest === null)
    throw new UsageError(
      "no_finished_run",
      `no finished run of ${escapeControls(repo)} in ${escapeControls(dir)} (handoff list --all shows every repository's runs)`,
    );
  process.stderr.write(
    `handoff: the latest run of ${escapeControls(repo)}: ${escapeControls(latest.id)} (${escapeControls(latest.status.state === "finished" ? latest.status.verdict : latest.status.state)}, started ${latest.startedAt})\n`,
  );
  return { kind: "run", run: load(latest.dir, undefined) };
}
