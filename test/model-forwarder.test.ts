import { createServer, type IncomingHttpHeaders, request } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { EgressLog } from "../src/egress/egress-log.js";
import type { KeyRoute } from "../src/egress/key-route.js";
import { ModelForwarder } from "../src/egress/model-forwarder.js";
import { tempDir } from "./helpers/repo.js";

const PLACEHOLDER = "handoff-placeholder-0123456789abcdef01234567";
const REAL = "sk-real-key";

/** The headers an upstream received for one request the CLI sent to the forwarder with `headers`. */
async function upstreamSees(header: KeyRoute["header"], headers: Record<string, string>): Promise<IncomingHttpHeaders> {
  let seen: IncomingHttpHeaders = {};
  const upstream = createServer((req, res) => {
    seen = req.headers;
    res.end("ok");
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  onTestFinished(() => new Promise<void>((resolve) => upstream.close(() => resolve())));
  const socket = join(tempDir("handoff-forwarder"), "k0.sock");
  const forwarder = new ModelForwarder({
    socket,
    route: {
      variable: "ANTHROPIC_API_KEY",
      header,
      upstream: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
      redirect: { kind: "variable", variable: "ANTHROPIC_BASE_URL" },
    },
    realKey: REAL,
    placeholder: PLACEHOLDER,
    role: "agent",
    label: "command",
    rule: "test",
    log: new EgressLog(),
  });
  onTestFinished(() => forwarder.close());
  await new Promise<void>((resolve, reject) => {
    const req = request({ socketPath: socket, path: "/v1/messages", method: "POST", headers }, (res) => {
      res.resume();
      res.on("end", resolve);
    });
    req.on("error", reject);
    req.end("{}");
  });
  return seen;
}

describe("model forwarder: the key header", () => {
  test("the route's header gets the real key", async () => {
    expect((await upstreamSees("x-api-key", { "x-api-key": PLACEHOLDER }))["x-api-key"]).toBe(REAL);
    expect((await upstreamSees("bearer", { authorization: `Bearer ${PLACEHOLDER}` })).authorization).toBe(`Bearer ${REAL}`);
  });

  test("the placeholder sent in both key headers (omp to a base URL not Anthropic's): the other one is dropped", async () => {
    const both = { "x-api-key": PLACEHOLDER, authorization: `Bearer ${PLACEHOLDER}` };
    const apiKey = await upstreamSees("x-api-key", both);
    expect(apiKey["x-api-key"]).toBe(REAL);
    expect(apiKey.authorization).toBeUndefined();
    const bearer = await upstreamSees("bearer", both);
    expect(bearer.authorization).toBe(`Bearer ${REAL}`);
    expect(bearer["x-api-key"]).toBeUndefined();
  });

  test("a route in both headers (omp to a gateway) gets the real key in both", async () => {
    const seen = await upstreamSees("x-api-key and bearer", { "x-api-key": PLACEHOLDER, authorization: `Bearer ${PLACEHOLDER}` });
    expect(seen["x-api-key"]).toBe(REAL);
    expect(seen.authorization).toBe(`Bearer ${REAL}`);
  });

  test("a Gemini route (x-goog-api-key) gets the real key there, and only there", async () => {
    const seen = await upstreamSees("x-goog-api-key", { "x-goog-api-key": PLACEHOLDER, authorization: `Bearer ${PLACEHOLDER}` });
    expect(seen["x-goog-api-key"]).toBe(REAL);
    expect(seen.authorization).toBeUndefined();
    const other = await upstreamSees("x-api-key", { "x-api-key": PLACEHOLDER, "x-goog-api-key": PLACEHOLDER });
    expect(other["x-api-key"]).toBe(REAL);
    expect(other["x-goog-api-key"]).toBeUndefined();
  });

  test("another credential in the other header goes on unchanged", async () => {
    const seen = await upstreamSees("x-api-key", { "x-api-key": PLACEHOLDER, authorization: "Bearer someone-elses" });
    expect(seen["x-api-key"]).toBe(REAL);
    expect(seen.authorization).toBe("Bearer someone-elses");
  });
});
