import { findTopLevel } from "../../clone/source-repo.js";
import { UsageError } from "../../lib/errors.js";
import { escapeControls } from "../../vocabulary/display.js";
import { type RunIndexEntry, type RunState, listRuns } from "../../run-dir/run-index.js";
import { wholeNumber } from "../../settings/option-values.js";
import { REPO_OPTION } from "../repo-option.js";
import { parseOptions } from "../parse-options.js";
import { defaultRunsDir } from "../../run-dir/default-places.js";

export const LIST_OPTIONS = {
  ...REPO_OPTION,
  all: { type: "boolean" },
  limit: { type: "string" },
  json: { type: "boolean" },
  "runs-dir": { type: "string" },
} as const;

const DEFAULT_LIMIT = 20;

/**
 * `handoff list`: the newest runs of the runs directory first, of one repository (-C, else the work tree the current
 * directory is in) or, with --all or outside any repository, of every repository. --json prints only the array.
 */
export async function command(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseOptions("list", args, LIST_OPTIONS);
  if (positionals.length > 0)
    throw new UsageError("bad_arguments", "usage: handoff list [-C DIR | --all] [--limit N] [--json] [--runs-dir DIR]");
  const limit = wholeNumber("--limit", values.limit) ?? DEFAULT_LIMIT;
  const runsDir = values["runs-dir"] ?? defaultRunsDir();
  if (values.all && values.repo !== undefined)
    throw new UsageError("bad_arguments", "--all lists every repository's runs, -C one repository's: not both");
  const repo = values.all ? null : await findTopLevel(values.repo ?? process.cwd());
  if (repo === null && values.repo !== undefined)
    throw new UsageError(
      "not_a_repository",
      `-C ${escapeControls(values.repo)}: not inside a git repository (handoff list --all lists every repository's runs)`,
    );
  const entries = listRuns(runsDir, { repo, limit });
  if (values.json) {
    process.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
    return 0;
  }
  const whose =
    repo !== null ? `runs of ${escapeControls(repo)}` : `runs of every repository${values.all ? "" : " (not inside a git repository)"}`;
  process.stdout.write(
    `${whose} in ${escapeControls(runsDir)}, newest first, at most ${limit}${repo !== null ? " (--all: every repository)" : ""}\n`,
  );
  if (entries.length === 0) {
    process.stdout.write("no runs\n");
    return 0;
  }
  const rows = [["ID", "STARTED", "BACKEND", "VERDICT", "REPOSITORY"], ...entries.map(row)];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((cells) => cells[column]!.length)));
  for (const cells of rows)
    process.stdout.write(
      `${cells
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join("  ")
        .trimEnd()}\n`,
    );
  return 0;
}

function row(entry: RunIndexEntry): string[] {
  const id = entry.kind === "run" ? entry.id : `${entry.id} (${entry.kind})`;
  const repos = entry.repos.length > 1 ? `${entry.repos.length} repositories` : (entry.repos[0] ?? "-");
  return [id, entry.startedAt.replace(/\.\d+Z$/, "Z"), entry.backends.join(",") || "-", stateText(entry.status), repos].map((cell) =>
    escapeControls(cell),
  );
}

function stateText(status: RunState): string {
  switch (status.state) {
    case "finished":
      return status.verdict;
    case "running":
      return `running${status.phase ? ` (${status.phase})` : ""}`;
    case "crashed":
      return `crashed${status.phase ? ` in ${status.phase}` : ""} (the next handoff run ends it)`;
    case "unknown":
      return `unknown: ${status.why}`;
  }
}
