import { mkdtempSync, readFileSync } from "node:fs";
import { type IncomingMessage, createServer, request } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { type AddressInfo, type Socket, connect, createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { afterEach, beforeAll, describe, expect, test } from "vitest";
import { parseAllowNet } from "../src/egress/allow-net.js";
import type { AllowRule } from "../src/egress/allow-rules.js";
import { EgressGate } from "../src/egress/egress-gate.js";
import { EgressLog } from "../src/egress/egress-log.js";
import { ATTEMPTS_KEPT, HOSTS_KEPT } from "../src/egress/egress-record.js";
import { checkResolved, matchHost } from "../src/egress/host-match.js";
import type { Tunnel } from "../src/egress/model-endpoints.js";
import { ruleWords } from "../src/egress/rule-words.js";
import { testCertificates } from "./helpers/test-ca.js";

/**
 * The egress gate called directly, as the sandbox's forwarder reaches it: through its Unix socket. Names resolve through
 * a table the test gives (`*.test` to loopback), so nothing leaves this machine.
 */
const gates: EgressGate[] = [];
afterEach(async () => {
  await Promise.all(gates.splice(0).map((gate) => gate.close()));
});

function openGate(
  allow: readonly string[],
  options: { connectTimeoutMs?: number; names?: Record<string, string>; tunnels?: readonly Tunnel[] } = {},
) {
  const rules: AllowRule[] = allow.flatMap((value) => parseAllowNet(value));
  const log = new EgressLog();
  const names = { "allowed.test": "127.0.0.1", "other.test": "127.0.0.1", ...options.names };
  const gate = new EgressGate({
    dir: mkdtempSync(join(tmpdir(), "gate-")),
    role: "agent",
    label: "command",
    decide: (host, port) => matchHost(rules, host, port),
    checkResolved,
    ruleWords,
    tunnels: options.tunnels ?? [],
    log,
    lookup: async (host) => (names[host as keyof typeof names] ? [names[host as keyof typeof names]!] : []),
    connectTimeoutMs: options.connectTimeoutMs,
    helloTimeoutMs: 2_000,
  });
  gates.push(gate);
  const socket = gate.forwardSpec()[0]!.socket;
  return { gate, log, socket };
}

/** A plain HTTP request through the proxy, by absolute URI, with the Host header it names. */
function viaProxy(socket: string, url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, path: url, method: "GET", headers: { host: new URL(url).host, ...headers } }, (res) => {
      let body = "";
      res.on("data", (chunk) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** `CONNECT host:port` on the proxy socket: the status line, and the socket for what follows. */
function connectThrough(socket: string, target: string): Promise<{ status: number; body: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const client = connect(socket);
    let answer = Buffer.alloc(0);
    client.on("error", reject);
    client.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
    const onData = (chunk: Buffer) => {
      answer = Buffer.concat([answer, chunk]);
      const end = answer.indexOf("\r\n\r\n");
      if (end === -1) return;
      client.off("data", onData);
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(answer.toString("latin1"))?.[1] ?? 0);
      const rest = answer.subarray(end + 4).toString("utf8");
      if (status === 200) resolve({ status, body: rest, socket: client });
      else client.on("end", () => resolve({ status, body: rest, socket: client })).resume();
      if (status !== 200) client.on("data", (more: Buffer) => (answer = Buffer.concat([answer, more])));
    };
    client.on("data", onData);
  });
}

async function plainServer(): Promise<{ port: number; requests: IncomingMessage[]; close: () => void }> {
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    res.end(`hello from ${req.headers.host}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port, requests, close: () => server.close() };
}

describe("plain HTTP through the proxy", () => {
  test("an allowed host is reached, hop-by-hop and proxy headers are not passed on, and the bytes are counted", async () => {
    const upstream = await plainServer();
    try {
      const { socket, log } = openGate(["allowed.test"]);
      const answer = await viaProxy(socket, `http://allowed.test:${upstream.port}/path?q=1`, {
        "proxy-authorization": "Basic x",
        connection: "keep-alive, X-Hop-Only",
        "x-hop-only": "this hop",
        "x-end-to-end": "kept",
      });
      expect(answer).toEqual({ status: 200, body: `hello from allowed.test:${upstream.port}` });
      expect(upstream.requests[0]!.url).toBe("/path?q=1");
      expect(upstream.requests[0]!.headers["proxy-authorization"]).toBeUndefined();
      expect(upstream.requests[0]!.headers["x-hop-only"]).toBeUndefined();
      expect(upstream.requests[0]!.headers["x-end-to-end"]).toBe("kept");
      const { allowed, blocked } = log.tallies();
      expect(blocked).toEqual([]);
      expect(allowed).toEqual([
        expect.objectContaining({ host: "allowed.test", port: upstream.port, rule: "--allow-net allowed.test", attempts: 1 }),
      ]);
      expect(allowed[0]!.bytesDown).toBeGreaterThan(0);
    } finally {
      upstream.close();
    }
  });

  test("a host off the allowlist gets 403 with a line that says how to allow it, and is tallied as blocked", async () => {
    const upstream = await plainServer();
    try {
      const { socket, log, gate } = openGate(["allowed.test"]);
      const answer = await viaProxy(socket, `http://other.test:${upstream.port}/steal`);
      expect(answer.status).toBe(403);
      expect(answer.body).toContain("--allow-net other.test");
      expect(upstream.requests).toEqual([]);
      expect(log.tallies().blocked).toEqual([expect.objectContaining({ host: "other.test", reason: "not_allowed" })]);
      expect(gate.blockedHosts()).toEqual([{ host: "other.test", port: upstream.port, reason: "not_allowed", attempts: 1 }]);
    } finally {
      upstream.close();
    }
  });

  test("a Host header that names another host than the URI is refused (the hole sandbox-runtime's users found)", async () => {
    const upstream = await plainServer();
    try {
      const { socket, log } = openGate(["allowed.test"]);
      const answer = await viaProxy(socket, `http://allowed.test:${upstream.port}/`, { host: "evil.example" });
      expect(answer.status).toBe(403);
      expect(upstream.requests).toEqual([]);
      expect(log.tallies().blocked).toEqual([expect.objectContaining({ reason: "bad_request" })]);
    } finally {
      upstream.close();
    }
  });

  test("a name that resolves to loopback is refused unless a rule names it exactly; an IP literal likewise", async () => {
    const upstream = await plainServer();
    try {
      const wildcard = openGate(["*.gate.test"], { names: { "rebound.gate.test": "127.0.0.1" } });
      expect((await viaProxy(wildcard.socket, `http://rebound.gate.test:${upstream.port}/`)).status).toBe(403);
      expect(wildcard.log.tallies().blocked).toEqual([expect.objectContaining({ reason: "private_address" })]);
      expect((await viaProxy(wildcard.socket, `http://127.0.0.1:${upstream.port}/`)).status).toBe(403);
      const exact = openGate(["127.0.0.1"]);
      expect((await viaProxy(exact.socket, `http://127.0.0.1:${upstream.port}/`)).status).toBe(200);
      expect(upstream.requests).toHaveLength(1);
    } finally {
      upstream.close();
    }
  });

  test("an unresolvable name, a refused upstream and a request that is no proxy request each get an answer, never a hang", async () => {
    const { socket, log } = openGate(["*"]);
    expect((await viaProxy(socket, "http://nowhere.test/")).status).toBe(502);
    const closed = await plainServer();
    closed.close();
    const refused = await viaProxy(socket, `http://127.0.0.1:${closed.port}/`);
    expect(refused.status).toBe(502);
    expect(refused.body).toContain("could not reach");
    const originForm = await new Promise<number>((resolve) => {
      request({ socketPath: socket, path: "/just-a-path" }, (res) => resolve(res.statusCode ?? 0)).end();
    });
    expect(originForm).toBe(400);
    expect(log.tallies().blocked.map((host) => host.reason)).toContain("unresolved");
  });

  test("bytes that are not HTTP at all are answered 400 and the gate lives on", async () => {
    const { socket } = openGate(["*"]);
    const answer = await new Promise<string>((resolve) => {
      const client = connect(socket);
      let text = "";
      client.on("data", (chunk) => (text += chunk));
      client.on("close", () => resolve(text));
      client.on("error", () => resolve(text));
      client.write(Buffer.from([0x00, 0xff, 0x13, 0x37, 0x0d, 0x0a, 0x0d, 0x0a]));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    const upstream = await plainServer();
    try {
      expect((await viaProxy(socket, `http://127.0.0.1:${upstream.port}/`)).status).toBe(200);
    } finally {
      upstream.close();
    }
  });
});

describe("CONNECT through the proxy", () => {
  let certs: { ca: string; key: string; cert: string };
  beforeAll(() => {
    certs = testCertificates("allowed.test");
  });

  async function tlsServer(): Promise<{ port: number; handshakes: () => number; close: () => void }> {
    let handshakes = 0;
    const server = createHttpsServer({ key: certs.key, cert: certs.cert }, (_req, res) => res.end("tls hello"));
    server.on("secureConnection", () => handshakes++);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return { port: (server.address() as AddressInfo).port, handshakes: () => handshakes, close: () => server.close() };
  }

  test("an allowed host is reached over TLS with its own certificate, and the tunnel's bytes are counted", async () => {
    const upstream = await tlsServer();
    try {
      const { socket, log } = openGate(["allowed.test"]);
      const tunnel = await connectThrough(socket, `allowed.test:${upstream.port}`);
      expect(tunnel.status).toBe(200);
      const body = await new Promise<string>((resolve, reject) => {
        const tls = tlsConnect({ socket: tunnel.socket, servername: "allowed.test", ca: certs.ca }, () => {
          tls.write(`GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n`);
        });
        let text = "";
        tls.on("data", (chunk) => (text += chunk));
        tls.on("end", () => resolve(text));
        tls.on("error", reject);
      });
      expect(body).toContain("tls hello");
      const [tally] = log.tallies().allowed;
      expect(tally).toMatchObject({ host: "allowed.test", port: upstream.port });
      expect(tally!.bytesUp).toBeGreaterThan(100);
      expect(tally!.bytesDown).toBeGreaterThan(100);
    } finally {
      upstream.close();
    }
  });

  test("a tunnel whose ClientHello names another host than the CONNECT is refused before any TLS byte reaches the upstream", async () => {
    const upstream = await tlsServer();
    try {
      const { socket, log } = openGate(["allowed.test"]);
      const tunnel = await connectThrough(socket, `allowed.test:${upstream.port}`);
      expect(tunnel.status).toBe(200);
      const failed = await new Promise<boolean>((resolve) => {
        const tls = tlsConnect({ socket: tunnel.socket, servername: "evil.example", ca: certs.ca });
        tls.on("secureConnect", () => resolve(false));
        tls.on("error", () => resolve(true));
        tls.on("close", () => resolve(true));
      });
      expect(failed).toBe(true);
      expect(upstream.handshakes()).toBe(0);
      expect(log.tallies()).toMatchObject({
        allowed: [],
        blocked: [expect.objectContaining({ host: "allowed.test", port: upstream.port, reason: "sni_mismatch" })],
      });
    } finally {
      upstream.close();
    }
  });

  test("a CONNECT to a host off the allowlist gets 403 and no connection is made", async () => {
    const upstream = await tlsServer();
    try {
      const { socket } = openGate(["allowed.test"]);
      const tunnel = await connectThrough(socket, `other.test:${upstream.port}`);
      expect(tunnel.status).toBe(403);
      expect(tunnel.body).toContain("--allow-net other.test");
      expect(upstream.handshakes()).toBe(0);
    } finally {
      upstream.close();
    }
  });
});

describe("tunnels and the record", () => {
  test("a tunnel leads every connection to its fixed host and port, recorded by its rule", async () => {
    const upstream = createNetServer((socket) => socket.end("model says hi"));
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    const port = (upstream.address() as AddressInfo).port;
    try {
      const rule: AllowRule = {
        kind: "host",
        host: "127.0.0.1",
        port,
        preset: null,
        source: { kind: "backend", name: "claude", why: "ANTHROPIC_BASE_URL" },
      };
      const { gate, log } = openGate([], { tunnels: [{ listen: port, host: "127.0.0.1", port, rule }] });
      const entry = gate.forwardSpec().find((forward) => forward.listen === port)!;
      expect(gate.proxyPort).not.toBe(port);
      const said = await new Promise<string>((resolve) => {
        const client = connect(entry.socket);
        let text = "";
        client.on("data", (chunk) => (text += chunk));
        client.on("close", () => resolve(text));
      });
      expect(said).toBe("model says hi");
      expect(log.tallies().allowed).toEqual([
        expect.objectContaining({ host: "127.0.0.1", port, rule: `127.0.0.1:${port} (claude: ANTHROPIC_BASE_URL)`, bytesDown: 13 }),
      ]);
    } finally {
      upstream.close();
    }
  });

  test("the log stays bounded however many attempts the agent makes", () => {
    const log = new EgressLog();
    for (let i = 0; i < 10_000; i++)
      log.record({ role: "agent", label: "command", host: `h${i}.example`, port: 443, via: "connect", rule: null, reason: "not_allowed" });
    const tallies = log.tallies();
    expect(tallies.blocked).toHaveLength(HOSTS_KEPT);
    expect(tallies.hostsLeftOut).toBe(10_000 - HOSTS_KEPT);
    expect(tallies.attempts).toHaveLength(ATTEMPTS_KEPT);
    expect(tallies.attemptsLeftOut).toBe(10_000 - ATTEMPTS_KEPT);
  });

  test("close() ends live connections and removes the sockets", async () => {
    const upstream = createNetServer(() => {});
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    const port = (upstream.address() as AddressInfo).port;
    try {
      const { gate, socket } = openGate(["127.0.0.1"]);
      const tunnel = await connectThrough(socket, `127.0.0.1:${port}`);
      expect(tunnel.status).toBe(200);
      const closed = new Promise<void>((resolve) => tunnel.socket.on("close", () => resolve()));
      await gate.close();
      await closed;
      expect(() => readFileSync(socket)).toThrow();
    } finally {
      upstream.close();
    }
  });
});
