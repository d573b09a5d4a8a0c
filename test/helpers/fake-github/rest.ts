import type { RecordedRequest, Route, RouteReply } from "./server.js";

/** A pull request as the stand-in keeps it: the fields handoff reads or sends, in GitHub's shape. */
export interface FakePull {
  number: number;
  state: "open" | "closed";
  title: string;
  body: string;
  head: string;
  base: string;
}

export interface FakeRepository {
  readonly owner: string;
  readonly name: string;
  readonly defaultBranch: string;
  /** Every pull request opened through the stand-in, in order; a test may add or close some. */
  readonly pulls: FakePull[];
  /** The routes for startFakeGitHub: GET the repository, GET pulls (head filter), POST pulls, PATCH pulls/:n. */
  readonly routes: Route[];
}

/**
 * GitHub's REST API for one repository's pull requests, with state: what publish mode calls. Answers are
 * GitHub-shaped JSON (only the fields a client reads); a request for another repository is left to the 404.
 */
export function fakeRepository(owner: string, name: string, defaultBranch = "main"): FakeRepository {
  const pulls: FakePull[] = [];
  const prefix = `/repos/${owner}/${name}`;
  const api = (path: string) => `http://github.invalid/api/v3${prefix}${path}`;
  const repositoryJson = () => ({
    id: 1,
    name,
    full_name: `${owner}/${name}`,
    owner: { login: owner, type: "User" },
    private: false,
    default_branch: defaultBranch,
    html_url: `https://github.invalid/${owner}/${name}`,
    url: api(""),
  });
  const pullJson = (pull: FakePull) => ({
    id: 1000 + pull.number,
    number: pull.number,
    state: pull.state,
    title: pull.title,
    body: pull.body,
    url: api(`/pulls/${pull.number}`),
    html_url: `https://github.invalid/${owner}/${name}/pull/${pull.number}`,
    head: { label: `${owner}:${pull.head}`, ref: pull.head, repo: repositoryJson() },
    base: { label: `${owner}:${pull.base}`, ref: pull.base, repo: repositoryJson() },
  });
  const invalid = (message: string): RouteReply => ({ status: 422, json: { message: "Validation Failed", errors: [{ message }] } });

  const routes: Route[] = [
    (request: RecordedRequest, url: URL) => {
      if (!url.pathname.startsWith(prefix)) return undefined;
      const rest = url.pathname.slice(prefix.length);
      if (request.method === "GET" && rest === "") return { status: 200, json: repositoryJson() };
      if (request.method === "GET" && rest === "/pulls") {
        const head = url.searchParams.get("head");
        const state = url.searchParams.get("state") ?? "open";
        const listed = pulls.filter(
          (pull) => (state === "all" || pull.state === state) && (head === null || `${owner}:${pull.head}` === head),
        );
        return { status: 200, json: listed.map(pullJson) };
      }
      if (request.method === "POST" && rest === "/pulls") {
        const sent = request.json as Partial<Record<"title" | "body" | "head" | "base", string>> | undefined;
        if (!sent?.title || !sent.head || !sent.base) return invalid("title, head and base are required");
        if (pulls.some((pull) => pull.state === "open" && pull.head === sent.head && pull.base === sent.base))
          return invalid(`A pull request already exists for ${owner}:${sent.head}.`);
        const pull: FakePull = {
          number: pulls.length + 1,
          state: "open",
          title: sent.title,
          body: sent.body ?? "",
          head: sent.head,
          base: sent.base,
        };
        pulls.push(pull);
        return { status: 201, json: pullJson(pull) };
      }
      const patched = /^\/pulls\/(\d+)$/u.exec(rest);
      if (request.method === "PATCH" && patched) {
        const pull = pulls.find((entry) => entry.number === Number(patched[1]));
        if (!pull) return undefined;
        const sent = (request.json ?? {}) as Partial<Record<"title" | "body", string>>;
        if (sent.title !== undefined) pull.title = sent.title;
        if (sent.body !== undefined) pull.body = sent.body;
        return { status: 200, json: pullJson(pull) };
      }
      return undefined;
    },
  ];
  return { owner, name, defaultBranch, pulls, routes };
}
