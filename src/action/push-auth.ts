import { type GitTarget, git } from "../process/git.js";

/**
 * The credential publish mode's git calls to the remote carry: the `github-token` input, as the HTTP header GitHub
 * reads (`AUTHORIZATION: basic x-access-token:<token>`), given to each call in its environment (GIT_CONFIG_KEY_n), never
 * written to .git/config and never on a command line. So the push is the token's, whatever actions/checkout
 * persisted: with `persist-credentials: false` there is nothing else, and a personal token's push starts workflows.
 */
export type RemoteAuth =
  | { readonly kind: "header"; readonly url: string; readonly config: readonly (readonly [string, string])[] }
  /** Not an http(s) remote (a path, ssh): the token cannot be given to git there, and the remote's own access is used. */
  | { readonly kind: "none"; readonly url: string };

/** The remote's push URL: `git remote get-url --push`, or the remote itself when it is a URL or path, not a name. */
async function pushUrl(target: GitTarget, remote: string): Promise<string> {
  const named = await git(target, ["remote", "get-url", "--push", "--", remote], { okExitCodes: [2, 128] });
  return named.exitCode === 0 ? named.stdout.toString("utf8").trim() : remote;
}

export async function remoteAuth(target: GitTarget, remote: string, token: string): Promise<RemoteAuth> {
  const url = await pushUrl(target, remote);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { kind: "none", url };
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") return { kind: "none", url };
  parsed.username = "";
  parsed.password = "";
  parsed.search = "";
  parsed.hash = "";
  // As specific as the URL itself, so it outranks the `http.https://github.com/.extraheader` actions/checkout may have
  // persisted; the empty value first clears that one (two AUTHORIZATION headers are refused).
  const key = `http.${parsed.href}.extraheader`;
  const header = `AUTHORIZATION: basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}`;
  return {
    kind: "header",
    url: parsed.href,
    config: [
      [key, ""],
      [key, header],
    ],
  };
}

/** The target with the credential for the remote added. */
export function withAuth(target: GitTarget, auth: RemoteAuth): GitTarget {
  return auth.kind === "header" ? { ...target, config: [...(target.config ?? []), ...auth.config] } : target;
}
