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
  readonly pullRequest: { readonly number: number; readonly url: string; readonly created: boolean };
}

/** Publish mode: check a run job's artifact, commit its verified patch on a branch, push it, open or update the PR. */
export async function publishRun(request: PublishRequest): Promise<PublishOutcome> {
  throw new Error(`publishRun is not built yet (${request.runDir})`);
}
