import { UsageError } from "../../lib/errors.js";
import { escapeControls } from "../../vocabulary/display.js";
import { applyRun } from "../../review/apply.js";
import { commitRun } from "../../review/commit.js";
import { type LoadedRun, runLabel } from "../../run-dir/run-lookup.js";
import { chosenCandidate, loadTrustedRun } from "../../review/chosen-run.js";
import { wholeNumber } from "../../settings/option-values.js";
import { batchIsNotARun } from "../batch-listing.js";
import { REPO_OPTION } from "../repo-option.js";
import { parseOptions } from "../parse-options.js";
import { namedOrLatestRun } from "../run-ref.js";

export const APPLY_OPTIONS = {
  ...REPO_OPTION,
  "runs-dir": { type: "string" },
  candidate: { type: "string" },
  commit: { type: "boolean" },
  branch: { type: "string" },
  message: { type: "string" },
  push: { type: "string" },
  json: { type: "boolean" },
} as const;

export async function command(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseOptions("apply", args, APPLY_OPTIONS);
  if (positionals.length > 1)
    throw new UsageError(
      "bad_arguments",
      "usage: handoff apply [<run-id|run-dir>] [-C repo] [--candidate k] [--commit [--branch NAME] [--message TEXT] [--push REMOTE]]",
    );
  const withoutCommit = (["branch", "message", "push"] as const).find((name) => values[name] !== undefined && !values.commit);
  if (withoutCommit) throw new UsageError("bad_arguments", `--${withoutCommit} goes with --commit`);
  // Without an id: the latest finished run of the repository it applies to (-C, else the current directory's).
  const named = await namedOrLatestRun(positionals[0], values["runs-dir"], values.repo ?? process.cwd(), loadTrustedRun);
  if (named.kind === "batch") throw batchIsNotARun(named.batch, "apply");
  const { run, k } = chosenCandidate(named.run, wholeNumber("--candidate", values.candidate));
  if (values.commit) {
    const candidateOf = k === null ? undefined : { runId: named.run.result.runId, k };
    const committed = await commitRun(run, {
      repo: values.repo,
      branch: values.branch,
      message: values.message,
      push: values.push,
      candidateOf,
    });
    notesOnTheRun(run);
    if (values.json) process.stdout.write(`${JSON.stringify(committed, null, 2)}\n`);
    else {
      process.stderr.write(
        `handoff: committed ${committed.files.length} file(s) on the new branch ${committed.branch} at the run's base ${committed.baseCommit.slice(0, 12)}${committed.pushedTo === null ? "" : `, pushed to ${escapeControls(committed.pushedTo)}`}; your branch, index and work tree are as they were\n`,
      );
      process.stdout.write(`branch ${committed.branch}\ncommit ${committed.commit}\n`);
      for (const file of committed.files) process.stdout.write(`file ${file}\n`);
    }
    return 0;
  }
  const outcome = await applyRun(run, values.repo);
  notesOnTheRun(run);
  process.stderr.write(
    `handoff: applied ${outcome.files.length} file(s) of ${escapeControls(runLabel(run))} to ${outcome.repo}${outcome.rebased ? " (HEAD had moved; the patch still applied cleanly)" : ""}\n`,
  );
  if (values.json) process.stdout.write(`${JSON.stringify(outcome, null, 2)}\n`);
  else for (const file of outcome.files) process.stdout.write(`${file}\n`);
  return 0;
}

/** What `apply` says about a run whose patch nothing checked, or that changes verification inputs. */
function notesOnTheRun(run: LoadedRun): void {
  if (run.result.verification.skipped === "no_verify") {
    process.stderr.write(`handoff: note: ${escapeControls(runLabel(run))} was not verified (--no-verify); nothing checked this patch\n`);
  }
  const edits = run.result.verification.testEdits;
  // New test files are what a good patch brings: no note for them.
  const changed = (edits?.changed ?? []).filter((input) => !(input.change === "added" && input.reason === "test_file"));
  if (edits && changed.length > 0) {
    const held = run.result.verification.heldToBase;
    const how =
      edits.policy === "allow"
        ? "allowed as patched by --test-edits allow, not held to the base"
        : `held to the base${held ? ` (${held.passed ? "passed" : "failed"})` : ""}`;
    process.stderr.write(
      `handoff: note: this patch changes verification inputs, ${how}: ${changed.map((input) => escapeControls(input.path)).join(", ")}\n`,
    );
  }
}
