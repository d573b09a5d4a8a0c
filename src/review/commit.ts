import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type SourceRepo, inspectSource } from "../clone/source-repo.js";
import { filterOverrides } from "../clone/source-filters.js";
import { ApplyRefusedError, GitCommandError, NoGitIdentityError, UsageError } from "../lib/errors.js";
import { escapeControls } from "../vocabulary/display.js";
import { numstatPaths } from "../patch/patch.js";
import { type GitTarget, git, gitText } from "../process/git.js";
import type { LoadedRun } from "../run-dir/run-lookup.js";
import { applicablePatch } from "./apply.js";
import { type CandidateOf, commitMessage } from "./commit-message.js";
import { recheckPatchRules } from "./patch-recheck.js";
import { runRequest } from "./run-files.js";

export interface CommitRequest {
  /** The repository the branch is made in (default: the run's source repository). */
  readonly repo?: string;
  /** Default: `handoff/<run id>`. */
  readonly branch?: string;
  /** Replaces the default subject and body; the trailers always follow. */
  readonly message?: string;
  /** Who the commit is by (the action's bot); absent: the user's git identity (user.name, user.email). */
  readonly identity?: { readonly name: string; readonly email: string };
  /** A remote to push the branch to (`refs/heads/NAME` only); refused there too if the remote has that branch. */
  readonly push?: string;
  /** Publish mode: a branch whose tip carries a Handoff-Run trailer (one handoff made) may be replaced. */
  readonly replaceHandoffBranch?: boolean;
  /** Publish mode: judge the patch with handoff's patch rules again (the run directory is not trusted). */
  readonly recheckRules?: boolean;
  /** `run` is candidate k of this candidates run: the trailers and the default branch name the run, not the candidate. */
  readonly candidateOf?: CandidateOf;
}

export interface CommitOutcome {
  readonly repo: string;
  readonly branch: string;
  readonly commit: string;
  readonly baseCommit: string;
  readonly files: readonly string[];
  /** The remote the branch was pushed to; null without `push`. */
  readonly pushedTo: string | null;
}

const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/u;

/**
 * `handoff apply --commit`: the verified patch as a commit on a new branch whose parent is the run's base commit,
 * made with plumbing only (a temporary index, `commit-tree`, `update-ref`), so the user's current branch, HEAD,
 * index and work tree are never touched. The dates are the run's end, so the same run and identity make the same
 * commit id. Refusals are ApplyRefusedError; a bad branch name is a UsageError, no identity a NoGitIdentityError.
 */
export async function commitRun(run: LoadedRun, request: CommitRequest = {}): Promise<CommitOutcome> {
  const result = run.result;
  const patch = applicablePatch(run);
  const branch = request.branch ?? `handoff/${request.candidateOf?.runId ?? result.runId}`;
  const scratch = mkdtempSync(join(tmpdir(), "handoff-commit-"));
  try {
    await checkBranchName(branch, scratch);
    const source = await inspectSource(request.repo ?? result.repo.path);
    const base = result.repo.baseCommit;
    // The index lives in a private directory that is also the work tree git is told about: the user's is never read.
    const target: GitTarget = {
      gitDir: source.gitDir,
      workTree: scratch,
      indexFile: join(scratch, "index"),
      cwd: scratch,
      config: filterOverrides(source.filterDrivers),
    };
    if (!OBJECT_ID.test(base) || (await git(target, ["cat-file", "-e", `${base}^{commit}`], { okExitCodes: [1, 128] })).exitCode !== 0) {
      throw new ApplyRefusedError(
        "base_missing",
        `the run's base commit ${escapeControls(base.slice(0, 40))} is not in ${source.topLevel}; fetch it first`,
      );
    }
    const existing = await branchTip(target, branch);
    if (existing && !(request.replaceHandoffBranch && (await carriesHandoffTrailer(target, existing)))) {
      throw new ApplyRefusedError(
        "branch_exists",
        `branch ${branch} already exists in ${source.topLevel} (at ${existing.slice(0, 12)}); name another with --branch`,
      );
    }
    await git(target, ["read-tree", base]);
    // The bytes whose sha256 was checked, on stdin: never the file again.
    const applied = await git(target, ["apply", "--cached", "--whitespace=nowarn", "-"], { input: patch, okExitCodes: [1, 128] });
    if (applied.exitCode !== 0) {
      throw new ApplyRefusedError(
        "does_not_apply",
        `the patch does not apply to the run's base commit ${base.slice(0, 12)}: ${firstLine(applied.stderr)}`,
      );
    }
    const files = numstatPaths((await git(target, ["apply", "--numstat", "-z", "-"], { input: patch })).stdout);
    if (request.recheckRules) {
      const violations = await recheckPatchRules(target, base, patch, source.objectFormat);
      if (violations.length > 0) {
        const shown = violations.slice(0, 3).map((finding) => `${finding.rule}${finding.path ? ` (${finding.path})` : ""}`);
        throw new ApplyRefusedError(
          "patch_rules",
          `the patch breaks handoff's patch rules: ${shown.join(", ")}${violations.length > 3 ? ", …" : ""}`,
        );
      }
    }
    const tree = await gitText(target, ["write-tree"]);
    const identity = request.identity ?? (await userIdentity(source));
    const requested = runRequest(run);
    const facts = { result, task: requested?.task ?? null, model: requested?.backend.model ?? null, candidateOf: request.candidateOf };
    const commit = await gitText(
      { ...target, identity: { ...identity, date: runEnd(run) } },
      ["commit-tree", tree, "-p", base, "-F", "-"],
      {
        input: commitMessage(facts, request.message),
      },
    );
    if (existing !== commit) await updateBranch(target, branch, commit, existing ?? zeroId(source), source.topLevel);
    if (request.push !== undefined) await pushBranch(source, request.push, branch, "");
    return { repo: source.topLevel, branch, commit, baseCommit: base, files, pushedTo: request.push ?? null };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** A name git takes for a branch, as given (`check-ref-format --branch` would expand `@{-1}`): else a usage error. */
async function checkBranchName(branch: string, cwd: string): Promise<void> {
  const checked = await git({ cwd }, ["check-ref-format", "--branch", branch], { okExitCodes: [1, 128] });
  if (checked.exitCode !== 0 || checked.stdout.toString("utf8").replace(/\n$/u, "") !== branch || branch.startsWith("-")) {
    throw new UsageError("bad_branch", `'${escapeControls(branch)}' is not a branch name git accepts (git check-ref-format --branch)`);
  }
}

/** The commit `refs/heads/<branch>` points at, or null when there is no such branch. */
async function branchTip(target: GitTarget, branch: string): Promise<string | null> {
  const tip = await git(target, ["rev-parse", "--verify", "-q", `refs/heads/${branch}`], { okExitCodes: [1] });
  return tip.exitCode === 0 ? tip.stdout.toString("utf8").trim() : null;
}

/** Moves the branch only if it is still where it was seen (the zero id: it must not exist), in one step. */
async function updateBranch(target: GitTarget, branch: string, commit: string, expected: string, repo: string): Promise<void> {
  const updated = await git(target, ["update-ref", "-m", "handoff apply --commit", `refs/heads/${branch}`, commit, expected], {
    okExitCodes: [128],
  });
  if (updated.exitCode !== 0)
    throw new ApplyRefusedError("branch_exists", `branch ${branch} appeared or moved in ${repo} meanwhile: ${firstLine(updated.stderr)}`);
}

/** Whether a commit's message ends with a Handoff-Run trailer, as `git interpret-trailers --parse` reads it. */
export async function carriesHandoffTrailer(target: GitTarget, commit: string): Promise<boolean> {
  const object = (await git(target, ["cat-file", "commit", commit])).stdout.toString("utf8");
  const message = object.slice(object.indexOf("\n\n") + 2);
  const parsed = await gitText(target, ["interpret-trailers", "--parse"], { input: message });
  return parsed.split("\n").some((line) => line.startsWith("Handoff-Run: "));
}

/**
 * Pushes `refs/heads/<branch>` alone to `remote` with the user's own git (their remotes, credentials and ssh keys;
 * hooks stay off), only if the remote's branch is where `expected` says (empty: it must not exist there).
 */
export async function pushBranch(
  source: Pick<SourceRepo, "gitDir" | "topLevel">,
  remote: string,
  branch: string,
  expected: string,
  /** Config for this push alone (publish mode's credential for the remote, src/action/push-auth.ts). */
  config: GitTarget["config"] = [],
): Promise<void> {
  if (remote === "" || remote.startsWith("-")) throw new UsageError("bad_remote", `'${escapeControls(remote)}' is not a remote`);
  const target: GitTarget = { gitDir: source.gitDir, cwd: source.topLevel, asUser: true, config };
  const ref = `refs/heads/${branch}`;
  try {
    await git(target, ["push", "--quiet", "--no-verify", `--force-with-lease=${ref}:${expected}`, "--", remote, `${ref}:${ref}`]);
  } catch (error) {
    if (!(error instanceof GitCommandError)) throw error;
    throw new ApplyRefusedError(
      "push_failed",
      `branch ${branch} was made here, but pushing it to ${escapeControls(remote)} failed: ${firstLine(error.stderr)}`,
      { cause: error },
    );
  }
}

/** The identity the user's own git would commit as; none is a NoGitIdentityError that says how to set one. */
async function userIdentity(source: SourceRepo): Promise<{ name: string; email: string }> {
  const target: GitTarget = { gitDir: source.gitDir, cwd: source.topLevel, asUser: true };
  const [name, email] = await Promise.all(
    ["user.name", "user.email"].map(async (key) =>
      (await git(target, ["config", "--get", key], { okExitCodes: [1] })).stdout.toString("utf8").trim(),
    ),
  );
  if (!name || !email) {
    throw new NoGitIdentityError(
      `no git identity to commit as: set one with git config user.email "you@example.com" and git config user.name "Your Name"`,
    );
  }
  return { name, email };
}

/** The run's end as git's date (`@<seconds> +0000`): publishing the same run twice makes the same commit. */
function runEnd(run: LoadedRun): string {
  const end = Date.parse(run.result.timings.startedAt) + run.result.timings.durationMs;
  if (!Number.isFinite(end))
    throw new ApplyRefusedError("bad_result", `result.json of run ${escapeControls(run.result.runId)} has no valid start time`);
  return `@${Math.floor(end / 1000)} +0000`;
}

function zeroId(source: SourceRepo): string {
  return "0".repeat(source.objectFormat === "sha256" ? 64 : 40);
}

/** git's first line worth reading: its `fatal:`/`error:`/rejection line, else the first line it wrote. */
export function firstLine(stderr: string): string {
  const lines = stderr
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
  const said = lines.find((line) => /^(fatal|error):|\[(remote )?rejected\]/u.test(line)) ?? lines[0] ?? "no message";
  return escapeControls(said.replace(/^(fatal|error): /u, "")).slice(0, 300);
}
