import { spawn } from "node:child_process";
import { join } from "node:path";
import type { RecordedRequest, Route, RouteReply } from "./server.js";

/**
 * A repository served over smart HTTP as github.com serves one, by git's own `git http-backend` (CGI): a private
 * repository, so every call needs `Authorization: basic x-access-token:<token>`, and a push needs a token that may
 * write. A token that may only read is refused as GitHub refuses it, with GitHub's words:
 * `Permission to owner/name.git denied to github-actions[bot].`
 */
export interface FakeGitRemote {
  /** The URL to clone from and push to: `<stand-in>/<owner>/<name>.git`. */
  url(server: { readonly url: string }): string;
  readonly route: Route;
}

export function fakeGitRemote(options: {
  /** The directory holding `<owner>/<name>.git` (a bare repository). */
  readonly projectRoot: string;
  readonly owner: string;
  readonly name: string;
  readonly tokens: { readonly write: readonly string[]; readonly read: readonly string[] };
}): FakeGitRemote {
  const prefix = `/${options.owner}/${options.name}.git`;
  const tokenOf = (request: RecordedRequest): string | null => {
    const basic = /^basic (.+)$/i.exec(request.headers.authorization ?? "")?.[1];
    if (!basic) return null;
    const [user, ...rest] = Buffer.from(basic, "base64").toString("utf8").split(":");
    return user === "x-access-token" ? rest.join(":") : null;
  };
  const route: Route = (request, url): RouteReply | Promise<RouteReply> | undefined => {
    if (!url.pathname.startsWith(`${prefix}/`)) return undefined;
    const token = tokenOf(request);
    const pushing = url.searchParams.get("service") === "git-receive-pack" || url.pathname.endsWith("/git-receive-pack");
    if (token === null || ![...options.tokens.write, ...options.tokens.read].includes(token))
      return {
        status: 401,
        body: "Invalid username or token.\n",
        headers: { "www-authenticate": 'Basic realm="GitHub"', "content-type": "text/plain" },
      };
    if (pushing && !options.tokens.write.includes(token))
      return {
        status: 403,
        body: `Permission to ${options.owner}/${options.name}.git denied to github-actions[bot].\n`,
        headers: { "content-type": "text/plain" },
      };
    return httpBackend(request, url, options.projectRoot);
  };
  return { url: (server) => `${server.url}${prefix}`, route };
}

/** One CGI request to `git http-backend`; its `Status:` and headers become the reply's. */
function httpBackend(request: RecordedRequest, url: URL, projectRoot: string): Promise<RouteReply> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    GIT_PROJECT_ROOT: projectRoot,
    GIT_HTTP_EXPORT_ALL: "1",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    HOME: join(projectRoot, ".."),
    // http-backend allows receive-pack to an authenticated user only.
    REMOTE_USER: "x-access-token",
    REMOTE_ADDR: "127.0.0.1",
    REQUEST_METHOD: request.method,
    PATH_INFO: url.pathname,
    QUERY_STRING: url.search.slice(1),
    CONTENT_TYPE: request.headers["content-type"] ?? "",
    CONTENT_LENGTH: String(request.body.length),
    ...(request.headers["content-encoding"] ? { HTTP_CONTENT_ENCODING: String(request.headers["content-encoding"]) } : {}),
    ...(request.headers["git-protocol"] ? { GIT_PROTOCOL: String(request.headers["git-protocol"]) } : {}),
  };
  return new Promise((resolve, reject) => {
    const child = spawn("git", ["http-backend"], { env, stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("close", () => {
      const raw = Buffer.concat(out);
      const split = raw.indexOf("\r\n\r\n");
      const head = raw.subarray(0, split).toString("latin1");
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.split("\r\n")) {
        const colon = line.indexOf(":");
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        if (name === "status") status = Number(value.split(" ")[0]);
        else if (name) headers[name] = value;
      }
      if (split < 0) resolve({ status: 500, body: `git http-backend: ${err}` });
      else resolve({ status, headers, body: raw.subarray(split + 4) });
    });
    child.stdin.end(request.body);
  });
}
