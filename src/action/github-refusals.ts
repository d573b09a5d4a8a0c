/**
 * What GitHub says when the publish job lacks a setting or a permission, turned into the line that names it
 * (docs/github.md, "What the repository needs"). GitHub's own words stay in the line: a user searches for them.
 */

/** The fields of an @octokit/request-error a refusal is read from; anything else is left as it is. */
interface ApiError {
  readonly status?: unknown;
  readonly message?: unknown;
}

const SETTINGS_PAGE = "Settings → Actions → General → Workflow permissions";

/** The pull request call's refusal with what to change, or null when it is not one of the known ones. */
export function explainApiRefusal(error: unknown): string | null {
  const { status, message } = (error ?? {}) as ApiError;
  const text = typeof message === "string" ? message.split(" - https://")[0]!.trim() : "";
  if (/not permitted to create or approve pull requests/i.test(text))
    return `GitHub refused to open the pull request (${status}: ${text}): tick "Allow GitHub Actions to create and approve pull requests" in the repository's ${SETTINGS_PAGE} (an organization's repository needs it allowed by the organization first), or give github-token a personal access token or a GitHub App token`;
  if (status === 403 && /Resource not accessible by (integration|personal access token)/i.test(text))
    return `GitHub refused the pull request call (403: ${text}): the token lacks pull-requests: write; give the publish job \`permissions: { contents: write, pull-requests: write }\` (a fine-grained token: "Pull requests: Read and write")`;
  if (status === 401)
    return `GitHub refused the token (401: ${text}): github-token is not a valid token (expired, revoked, or the secret is empty)`;
  if (status === 404)
    return `GitHub answered 404 (${text}) for the repository's pull requests: github-token cannot see this repository (a personal token of someone without access, or a fine-grained token not given this repository)`;
  return null;
}

/** A refused push's line with what to change, or null when git's words (the line and its whole stderr) are not a known refusal. */
export function explainPushRefusal(line: string, stderr = ""): string | null {
  // GitHub's reason comes as a `remote:` line before git's own `fatal:` one, which the line holds.
  const said = /^remote: (.*(?:Permission to|refusing to allow).*)$/m.exec(stderr)?.[1]?.trim();
  if (said && !line.includes(said)) line = `${line} (${said})`;
  if (/refusing to allow a (GitHub App|OAuth App) to create or update workflow/i.test(line))
    return `${line}: the patch changes .github/workflows/, which GITHUB_TOKEN may never push; give github-token a personal access token with the workflow scope (fine-grained: "Workflows: Read and write")`;
  if (/Permission to \S+ denied to github-actions\[bot\]/i.test(line))
    return `${line}: the job's GITHUB_TOKEN cannot push; give the publish job \`permissions: { contents: write }\` (and check ${SETTINGS_PAGE}, or the organization's, does not hold workflows to read-only)`;
  if (/Permission to \S+ denied to /i.test(line) || /returned error: 403/.test(line))
    return `${line}: the github-token input cannot push to this repository (a personal token needs write access to it: fine-grained "Contents: Read and write", classic "repo")`;
  if (/could not read Username|Authentication failed|returned error: 401/i.test(line))
    return `${line}: the push had no valid credential; github-token is sent to https remotes only, and this one was refused`;
  return null;
}
