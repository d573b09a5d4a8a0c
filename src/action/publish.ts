import { Octokit } from "@octokit/rest";
import { inspectSource } from "../clone/source-repo.js";
import { ApplyRefusedError, GitCommandError, PublishRefusedError, RunNotFoundError, UntrustedArtifactError } from "../lib/errors.js";
import { escapeControls } from "../vocabulary/display.js";
import { type GitTarget, git } from "../process/git.js";
import { carriesHandoffTrailer, commitRun, firstLine, pushBranch } from "../review/commit.js";
import { commitSubject } from "../review/commit-message.js";
import { renderReport } from "../review/report.js";
import { runRequest } from "../review/run-files.js";
import { remoteAuth, withAuth } from "./push-auth.js";
import { type LoadedRun, loadRun } from "../run-dir/run-lookup.js";

/** What publish mode needs: the run directory downloaded from the run job's artifact, and where to open the PR. */
export interface PublishRequest {
  /** The run directory as downloaded (result.json, changes.patch, report files...): untrusted until checked. */
  readonly runDir: string;
  /** The repository checkout the branch is made in ($GITHUB_WORKSPACE). */
  readonly repo: string;
  /** The remote the branch is pushed to (a remote name or URL). */
  readonly remote: string;
  /** The branch to create; the default is `handoff/<run id>`. */
  readonly branch: string | undefined;
  /** The pull request's base branch (the repository's default branch when absent). */
  readonly baseBranch: string | undefined;
  /** owner/name from $GITHUB_REPOSITORY. */
  readonly repository: { readonly owner: string; readonly name: string };
  readonly token: string;
  /** $GITHUB_API_URL: https://api.github.com on github.com, the stand-in's URL in the tests. */
  readonly apiUrl: string;
}

export interface PublishOutcome {
  readonly branch: string;
  readonly commit: string;
  /** What git's calls to the remote were authorised with: the token (an http(s) remote), or the remote's own access (a path, ssh). */
  readonly credential: "github-token" | "remote";
  readonly pullRequest: { readonly number: number; readonly url: string; readonly created: boolean };
}

/** The identity of the commits the action makes: GitHub's own bot for workflow tokens. */
export const BOT_IDENTITY = { name: "github-actions[bot]", email: "41898282+github-actions[bot]@users.noreply.github.com" } as const;

/** GitHub refuses a pull request body over 65,536 characters; the report is cut below that, saying so. */
export const MAX_BODY_CHARS = 65_000;

const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/u;

/**
 * Publish mode: check a run job's artifact, commit its verified patch on a branch, push it, open or update the PR.
 * The artifact is hostile until checked: it is read as `handoff apply` reads a run (no links, bounded, result.json
 * by its schema), refused unless it verified and changes.patch is the one result.json hashed, and its patch must
 * still pass handoff's patch rules on the base commit. A refusal is a PublishRefusedError with one line.
 */
export async function publishRun(request: PublishRequest): Promise<PublishOutcome> {
  const run = loadDownloadedRun(request.runDir);
  const source = await inspectSource(request.repo);
  const auth = await remoteAuth({ gitDir: source.gitDir, cwd: source.topLevel, asUser: true }, request.remote, request.token);
  const target = withAuth({ gitDir: source.gitDir, cwd: source.topLevel, asUser: true }, auth);
  await fetchBaseIfMissing(target, request.remote, run.result.repo.baseCommit);
  const committed = await refusedAsPublish(() =>
    commitRun(run, { repo: request.repo, branch: request.branch, identity: BOT_IDENTITY, replaceHandoffBranch: true, recheckRules: true }),
  );
  const remoteTip = await remoteBranchTip(target, request.remote, committed.branch);
  if (remoteTip !== committed.commit) {
    if (remoteTip !== null) {
      await git(target, ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", request.remote, `refs/heads/${committed.branch}`]);
      if (!(await carriesHandoffTrailer(target, remoteTip))) {
        throw new PublishRefusedError(
          "foreign_branch",
          `${escapeControls(request.remote)} already has a branch ${committed.branch} that handoff did not make (no Handoff-Run trailer at ${remoteTip.slice(0, 12)}); name another branch`,
        );
      }
    }
    await refusedAsPublish(() => pushBranch(source, request.remote, committed.branch, remoteTip ?? "", target.config));
  }
  const pullRequest = await openOrUpdatePullRequest(request, run, committed.branch);
  return {
    branch: committed.branch,
    commit: committed.commit,
    credential: auth.kind === "header" ? "github-token" : "remote",
    pullRequest,
  };
}

/** The downloaded run directory through loadRun's checks; what they refuse is a PublishRefusedError. */
function loadDownloadedRun(runDir: string): LoadedRun {
  try {
    return loadRun(runDir.includes("/") ? runDir : `./${runDir}`);
  } catch (error) {
    if (error instanceof UntrustedArtifactError) throw new PublishRefusedError("untrusted_artifact", error.message, { cause: error });
    if (error instanceof RunNotFoundError) throw new PublishRefusedError("bad_result", error.message, { cause: error });
    throw error;
  }
}

async function refusedAsPublish<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof ApplyRefusedError) throw new PublishRefusedError(error.code, error.message, { cause: error });
    throw error;
  }
}

/** A checkout made with `fetch-depth: 1` may lack the run's base commit: fetch it by id (GitHub serves any reachable one). */
async function fetchBaseIfMissing(target: GitTarget, remote: string, base: string): Promise<void> {
  if (!OBJECT_ID.test(base)) return; // commitRun refuses it
  const present = await git(target, ["cat-file", "-e", `${base}^{commit}`], { okExitCodes: [1, 128] });
  if (present.exitCode === 0) return;
  await git(target, ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", remote, base], { okExitCodes: [1, 128] });
}

/** Where `refs/heads/<branch>` is on the remote, or null when it has no such branch. */
async function remoteBranchTip(target: GitTarget, remote: string, branch: string): Promise<string | null> {
  let listed: string;
  try {
    listed = (await git(target, ["ls-remote", "--heads", "--", remote, `refs/heads/${branch}`])).stdout.toString("utf8");
  } catch (error) {
    if (!(error instanceof GitCommandError)) throw error;
    throw new PublishRefusedError(
      "remote_unreadable",
      `cannot read the branches of ${escapeControls(remote)}: ${firstLine(error.stderr)}`,
      {
        cause: error,
      },
    );
  }
  const line = listed.split("\n").find((entry) => entry.endsWith(`\trefs/heads/${branch}`));
  return line ? line.slice(0, line.indexOf("\t")) : null;
}

/** The open pull request whose head is the branch gets the new body; without one, a new pull request is opened. */
async function openOrUpdatePullRequest(request: PublishRequest, run: LoadedRun, branch: string): Promise<PublishOutcome["pullRequest"]> {
  const octokit = new Octokit({ auth: request.token, baseUrl: request.apiUrl });
  const { owner, name: repo } = request.repository;
  const title = commitSubject({ result: run.result, task: runRequest(run)?.task ?? null });
  const body = pullRequestBody(run);
  const open = await octokit.rest.pulls.list({ owner, repo, head: `${owner}:${branch}`, state: "open", per_page: 100 });
  const existing = open.data.find((pull) => pull.head.ref === branch);
  if (existing) {
    const updated = await octokit.rest.pulls.update({ owner, repo, pull_number: existing.number, title, body });
    return { number: updated.data.number, url: updated.data.html_url, created: false };
  }
  const base = request.baseBranch ?? (await octokit.rest.repos.get({ owner, repo })).data.default_branch;
  const created = await octokit.rest.pulls.create({ owner, repo, title, head: branch, base, body });
  return { number: created.data.number, url: created.data.html_url, created: true };
}

/** The markdown report, cut below GitHub's limit when it is still too long, saying so. */
export function pullRequestBody(run: LoadedRun): string {
  const report = renderReport(run, "markdown");
  if (report.length <= MAX_BODY_CHARS) return report;
  const note = `\n\n---\n**This report was cut at ${MAX_BODY_CHARS.toLocaleString("en")} characters** (of ${report.length.toLocaleString("en")}); the whole report is in the run's artifact.\n`;
  return `${report.slice(0, MAX_BODY_CHARS - note.length)}${note}`;
}
