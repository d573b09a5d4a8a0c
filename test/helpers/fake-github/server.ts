import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

/** One request the stand-in received, kept whole so a test can assert on exactly what was sent to GitHub. */
export interface RecordedRequest {
  readonly method: string;
  /** The path with its query string, e.g. `/repos/o/r/pulls?head=o:b`. */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  /** The body parsed as JSON when it is JSON, else undefined. */
  readonly json: unknown;
}

export interface RouteReply {
  readonly status: number;
  readonly json?: unknown;
  readonly body?: Buffer | string;
  readonly headers?: Record<string, string>;
}

/** A handler answers the requests it knows (a reply) and passes on the rest (undefined). */
export type Route = (request: RecordedRequest, url: URL, server: FakeGitHub) => RouteReply | undefined | Promise<RouteReply | undefined>;

export interface FakeGitHub {
  /** http://127.0.0.1:<port>, the GITHUB_API_URL (and ACTIONS_RESULTS_URL) to give the code under test. */
  readonly url: string;
  /** Every request in arrival order, answered or not. */
  readonly requests: RecordedRequest[];
  /** Later routes are tried first, so a test can override a default. */
  addRoutes(...routes: Route[]): void;
  close(): Promise<void>;
}

/**
 * The one fake in the suite: a stand-in for GitHub's HTTP APIs on 127.0.0.1, because GitHub cannot run here. It
 * records every request; a request no route answers gets GitHub's 404 body, so a missing route shows up as a
 * failure of the code under test, never as a silent success.
 */
export async function startFakeGitHub(...routes: Route[]): Promise<FakeGitHub> {
  const table: Route[] = [...routes];
  const requests: RecordedRequest[] = [];
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      const body = Buffer.concat(chunks);
      let json: unknown;
      try {
        json = body.length > 0 ? JSON.parse(body.toString("utf8")) : undefined;
      } catch {
        json = undefined;
      }
      const request: RecordedRequest = {
        method: incoming.method ?? "GET",
        path: incoming.url ?? "/",
        headers: incoming.headers,
        body,
        json,
      };
      requests.push(request);
      const url = new URL(request.path, fake.url);
      void answer(request, url).then(
        (reply) => {
          const payload = reply.json !== undefined ? JSON.stringify(reply.json) : (reply.body ?? "");
          const type = reply.json !== undefined ? { "content-type": "application/json; charset=utf-8" } : {};
          outgoing.writeHead(reply.status, { ...type, ...reply.headers });
          outgoing.end(payload);
        },
        (error: unknown) => {
          outgoing.writeHead(500, { "content-type": "application/json" });
          outgoing.end(JSON.stringify({ message: `the fake's route threw: ${(error as Error).message}` }));
        },
      );
    });
  });
  async function answer(request: RecordedRequest, url: URL): Promise<RouteReply> {
    for (const route of [...table].reverse()) {
      const reply = await route(request, url, fake);
      if (reply) return reply;
    }
    return { status: 404, json: { message: "Not Found", documentation_url: "https://docs.github.com/rest" } };
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const fake: FakeGitHub = {
    url: `http://127.0.0.1:${port}`,
    requests,
    addRoutes: (...more) => table.push(...more),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}
