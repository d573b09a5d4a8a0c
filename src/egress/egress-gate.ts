import { rmSync } from "node:fs";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { builtinOnUse } from "../lib/builtin-on-use.js";
import { type Server as NetServer, type Socket, connect, createServer as createNetServer, isIP } from "node:net";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import type { AllowRule, BlockReason, HostDecision } from "./allow-rules.js";
import { serverNameOf } from "./client-hello.js";
import { endToEndHeaders, relayAnswer } from "./http-relay.js";
import type { EgressLog, OpenAttempt } from "./egress-log.js";
import type { EgressRole, EgressVia } from "./egress-record.js";
import { normalHost } from "./host-match.js";
import type { Tunnel } from "./model-endpoints.js";

/** Loaded when a gate opens, not at every start (builtin-on-use.ts). */
const http = builtinOnUse<typeof import("node:http")>("node:http");
const dns = builtinOnUse<typeof import("node:dns/promises")>("node:dns/promises");

export interface EgressGateOptions {
  /** A private directory for the gate's sockets, outside every sandbox's view but bound into this one's. */
  readonly dir: string;
  readonly role: EgressRole;
  readonly label: string;
  /** By name, before any lookup (src/egress/host-match.ts). */
  readonly decide: (host: string, port: number) => HostDecision;
  /** After the lookup: a private address needs a rule that names the host exactly. */
  readonly checkResolved: (rule: AllowRule, host: string, address: string) => HostDecision;
  readonly ruleWords: (rule: AllowRule) => string;
  readonly tunnels: readonly Tunnel[];
  readonly log: EgressLog;
  /** The addresses of a name (tests give their own); default: the system resolver. */
  readonly lookup?: (host: string) => Promise<string[]>;
  /** How long a connection to an upstream may take before the client is told it failed. */
  readonly connectTimeoutMs?: number;
  /** How long a CONNECT tunnel waits for the client's first bytes (its TLS ClientHello). */
  readonly helloTimeoutMs?: number;
}

/** Where the in-sandbox forwarder listens, and the socket each of its connections goes to. */
export interface ForwardEntry {
  readonly listen: number;
  readonly socket: string;
}

/** Ports the proxy may take inside the sandbox, the first one no tunnel needs. */
const PROXY_PORTS = [3128, 8118, 18_128, 28_128, 38_128];

/**
 * handoff's egress proxy for one contained process: an HTTP proxy on a Unix socket (plain HTTP by absolute URI, and
 * CONNECT), and one socket per tunnel (a model endpoint on this machine's loopback). Every connection is decided by
 * the allowlist, recorded in the run's EgressLog, and counted. Built on node:http: its parser (llhttp) reads the
 * requests. Nothing the sandboxed client sends can throw out of a handler.
 */
export class EgressGate {
  readonly proxyPort: number;
  readonly #options: EgressGateOptions;
  readonly #proxy: Server;
  readonly #tunnelServers: NetServer[] = [];
  readonly #forward: ForwardEntry[] = [];
  readonly #live = new Set<Duplex>();
  readonly #blocked = new Map<string, { host: string; port: number; reason: BlockReason; attempts: number }>();
  #closed = false;

  constructor(options: EgressGateOptions) {
    this.#options = options;
    const taken = new Set(options.tunnels.map((tunnel) => tunnel.listen));
    this.proxyPort = PROXY_PORTS.find((port) => !taken.has(port)) ?? 3128;
    const proxySocket = join(options.dir, "p.sock");
    this.#proxy = http().createServer({ requestTimeout: 0, headersTimeout: 30_000 }, (req, res) => this.#plain(req, res));
    this.#proxy.on("connect", (req: IncomingMessage, socket: Duplex, head: Buffer) => this.#connect(req, socket, head));
    this.#proxy.on("connection", (socket: Socket) => this.#track(socket));
    this.#proxy.on("clientError", (_error, socket) => {
      this.#refuseRaw(socket, 400, "handoff's egress proxy could not read this request");
    });
    // A Unix socket is bound when listen() returns: the sandbox's forwarder can connect as soon as it starts.
    this.#proxy.listen(proxySocket);
    this.#forward.push({ listen: this.proxyPort, socket: proxySocket });
    options.tunnels.forEach((tunnel, i) => {
      const path = join(options.dir, `t${i}.sock`);
      const server = createNetServer((client) => this.#tunnel(client, tunnel));
      server.on("error", () => {});
      server.listen(path);
      this.#tunnelServers.push(server);
      this.#forward.push({ listen: tunnel.listen, socket: path });
    });
  }

  /** What the in-sandbox forwarder listens on, and where each connection goes. */
  forwardSpec(): ForwardEntry[] {
    return [...this.#forward];
  }

  /** The hosts this gate refused, once each, with how many times. */
  blockedHosts(): { host: string; port: number; reason: BlockReason; attempts: number }[] {
    return [...this.#blocked.values()].map((host) => ({ ...host }));
  }

  /** Stops listening, ends every connection still open and removes the sockets. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const socket of this.#live) socket.destroy();
    const closing = [this.#proxy, ...this.#tunnelServers].map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
    await Promise.all(closing);
    rmSync(this.#options.dir, { recursive: true, force: true });
  }

  #track(socket: Duplex): void {
    this.#live.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => this.#live.delete(socket));
  }

  /** Plain HTTP by absolute URI: `GET http://host:port/path`. */
  #plain(req: IncomingMessage, res: ServerResponse): void {
    req.on("error", () => {});
    res.on("error", () => {});
    const target = absoluteHttpUrl(req.url ?? "");
    if (!target) {
      this.#refuseHttp(res, 400, null, "a proxy request names an absolute http:// URL (HTTPS goes through CONNECT)");
      return;
    }
    const host = normalHost(target.hostname);
    const port = target.port === "" ? 80 : Number(target.port);
    const headerHost = typeof req.headers.host === "string" ? hostOfHeader(req.headers.host, 80) : null;
    if (headerHost && (headerHost.host !== host || headerHost.port !== port)) {
      this.#block(host, port, "http", "bad_request");
      this.#refuseHttp(res, 403, host, `the Host header names ${headerHost.host}, not ${host}`);
      return;
    }
    this.#guarded(
      res,
      () => this.#decideAndResolve(host, port, "http"),
      (decided) => {
        if (decided.kind === "refused") {
          this.#refuseHttp(res, decided.status, host, decided.why);
          return;
        }
        const attempt = this.#allowed(host, port, "http", decided.rule);
        const headers = endToEndHeaders(req.headers, "with host");
        const upstream = http().request({
          host: decided.address,
          port,
          method: req.method,
          path: `${target.pathname}${target.search}`,
          headers,
          setHost: false,
          agent: false,
          timeout: this.#options.connectTimeoutMs ?? 15_000,
        });
        upstream.on("timeout", () => upstream.destroy(new Error("timed out")));
        upstream.on("error", (error) => {
          if (!res.headersSent) this.#answer(res, 502, `handoff's egress proxy could not reach ${host}:${port}: ${error.message}`);
          else res.destroy();
        });
        upstream.on("response", (answer) => {
          upstream.setTimeout(0);
          relayAnswer(answer, res, attempt);
        });
        req.on("data", (chunk: Buffer) => attempt.addUp(chunk.length));
        req.pipe(upstream);
      },
    );
  }

  /** `CONNECT host:port`: decided by the requested host, then by the server name of the TLS ClientHello that follows. */
  #connect(req: IncomingMessage, client: Duplex, head: Buffer): void {
    this.#track(client);
    const target = hostOfHeader(req.url ?? "", null);
    if (!target) {
      this.#refuseRaw(client, 400, "CONNECT names host:port");
      return;
    }
    const { host, port } = target;
    this.#guarded(
      client,
      () => this.#decideAndResolve(host, port, "connect"),
      (decided) => {
        if (decided.kind === "refused") {
          this.#refuseRaw(client, decided.status, decided.why, host);
          return;
        }
        const upstream = connect({ host: decided.address, port, timeout: this.#options.connectTimeoutMs ?? 15_000 });
        this.#track(upstream);
        upstream.once("timeout", () => upstream.destroy(new Error("timed out")));
        upstream.once("error", (error) => {
          if (!client.destroyed && client.writable && !established)
            this.#refuseRaw(client, 502, `handoff's egress proxy could not reach ${host}:${port}: ${error.message}`);
          else client.destroy();
        });
        let established = false;
        upstream.once("connect", () => {
          upstream.setTimeout(0);
          established = true;
          client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
          this.#readHello(client, head, host, port, (first) => {
            if (first === null) {
              upstream.destroy();
              return;
            }
            const attempt = this.#allowed(host, port, "connect", decided.rule);
            attempt.addUp(first.length);
            if (first.length > 0) upstream.write(first);
            pipeCounted(client, upstream, attempt);
          });
        });
      },
    );
  }

  /**
   * Waits for the client's first bytes: a ClientHello whose SNI names another host ends the tunnel (`sni_mismatch`,
   * nothing sent upstream); no SNI, or not TLS at all, passes as the requested host. Calls `then(null)` when refused.
   */
  #readHello(client: Duplex, head: Buffer, host: string, port: number, then: (first: Buffer | null) => void): void {
    let bytes = head;
    let done = false;
    const finish = (first: Buffer | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      client.off("data", onData);
      client.off("end", onEnd);
      client.pause();
      then(first);
    };
    const check = () => {
      const read = serverNameOf(bytes);
      if (read.kind === "incomplete") return;
      if (read.kind === "sni" && normalHost(read.name) !== host) {
        this.#block(host, port, "connect", "sni_mismatch");
        client.destroy();
        return finish(null);
      }
      finish(bytes);
    };
    const onData = (chunk: Buffer) => {
      bytes = Buffer.concat([bytes, chunk]);
      check();
    };
    const onEnd = () => finish(bytes);
    const timer = setTimeout(() => finish(bytes), this.#options.helloTimeoutMs ?? 10_000);
    client.on("data", onData);
    client.on("end", onEnd);
    client.resume();
    if (bytes.length > 0) check();
  }

  /** A fixed way out: each connection to the tunnel's socket goes to its host and port. */
  #tunnel(client: Socket, tunnel: Tunnel): void {
    this.#track(client);
    const attempt = this.#allowed(tunnel.host, tunnel.port, "tunnel", tunnel.rule);
    const upstream = connect({ host: tunnel.host, port: tunnel.port });
    this.#track(upstream);
    upstream.once("error", () => client.destroy());
    client.once("error", () => upstream.destroy());
    pipeCounted(client, upstream, attempt);
  }

  /**
   * Runs `then` on the decision; whatever either throws (a header node refuses to send on, a bug) ends that one
   * connection, never handoff: an uncaught rejection would take the run down.
   */
  #guarded<T>(end: { destroy(): unknown }, decide: () => Promise<T>, then: (decided: T) => void): void {
    decide()
      .then(then)
      .catch(() => end.destroy());
  }

  async #decideAndResolve(
    host: string,
    port: number,
    via: EgressVia,
  ): Promise<{ kind: "allowed"; rule: AllowRule; address: string } | { kind: "refused"; status: number; why: string }> {
    const byName = this.#options.decide(host, port);
    if (!byName.allowed) {
      this.#block(host, port, via, byName.reason);
      return { kind: "refused", status: 403, why: refusal(host, byName.reason) };
    }
    let addresses: string[];
    try {
      addresses = isIP(host) !== 0 ? [host] : await (this.#options.lookup ?? systemLookup)(host);
    } catch {
      addresses = [];
    }
    const address = addresses[0];
    if (address === undefined) {
      this.#block(host, port, via, "unresolved");
      return { kind: "refused", status: 502, why: `${host} did not resolve` };
    }
    // The address the lookup gave is the one connected to: a second lookup cannot lead elsewhere.
    const resolved = this.#options.checkResolved(byName.rule, host, address);
    if (!resolved.allowed) {
      this.#block(host, port, via, resolved.reason);
      return { kind: "refused", status: 403, why: refusal(host, resolved.reason) };
    }
    return { kind: "allowed", rule: byName.rule, address };
  }

  #allowed(host: string, port: number, via: EgressVia, rule: AllowRule): OpenAttempt {
    const { role, label, log, ruleWords } = this.#options;
    return log.record({ role, label, host, port, via, rule: ruleWords(rule), reason: null });
  }

  #block(host: string, port: number, via: EgressVia, reason: BlockReason): void {
    const { role, label, log } = this.#options;
    log.record({ role, label, host, port, via, rule: null, reason });
    const key = `${host}\0${port}`;
    const seen = this.#blocked.get(key);
    if (seen) seen.attempts++;
    else if (this.#blocked.size < 100) this.#blocked.set(key, { host, port, reason, attempts: 1 });
  }

  #refuseHttp(res: ServerResponse, status: number, _host: string | null, why: string): void {
    this.#answer(res, status, `handoff's egress proxy refused this request: ${why}\n`);
  }

  #answer(res: ServerResponse, status: number, body: string): void {
    if (res.headersSent) return void res.destroy();
    res.writeHead(status, { "content-type": "text/plain; charset=utf-8", connection: "close", "content-length": Buffer.byteLength(body) });
    res.end(body);
  }

  #refuseRaw(socket: Duplex, status: number, why: string, host?: string): void {
    if (socket.destroyed || !socket.writable) return void socket.destroy();
    const body = `handoff's egress proxy refused ${host ? `${host}: ` : ""}${why}\n`;
    const text = status === 403 ? "Forbidden" : status === 502 ? "Bad Gateway" : "Bad Request";
    socket.end(
      `HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
}

/** Both ways, counting bytes; either side's end or error ends the other. */
function pipeCounted(client: Duplex, upstream: Duplex, attempt: OpenAttempt): void {
  client.on("data", (chunk: Buffer) => attempt.addUp(chunk.length));
  upstream.on("data", (chunk: Buffer) => attempt.addDown(chunk.length));
  client.on("error", () => upstream.destroy());
  upstream.on("error", () => client.destroy());
  client.on("close", () => upstream.destroy());
  upstream.on("close", () => client.destroy());
  client.pipe(upstream);
  upstream.pipe(client);
  client.resume();
}

function refusal(host: string, reason: BlockReason): string {
  switch (reason) {
    case "private_address":
      return `${host} is (or resolved to) a local or private address; --allow-net ${host} names it exactly and allows it`;
    case "not_allowed":
      return `${host} is not on the allowlist; --allow-net ${host} would allow it`;
    default:
      return `${host}: ${reason}`;
  }
}

async function systemLookup(host: string): Promise<string[]> {
  const found = await dns().lookup(host, { all: true, verbatim: true });
  return found.map((entry) => entry.address);
}

/** An absolute `http://` URL; null for anything else (an origin-form path, https://, another scheme). */
function absoluteHttpUrl(url: string): URL | null {
  if (!/^http:\/\//i.test(url)) return null;
  try {
    const parsed = new URL(url);
    return parsed.hostname === "" ? null : parsed;
  } catch {
    return null;
  }
}

/** `host`, `host:port` or `[v6]:port` (a Host header or a CONNECT target); `defaultPort` null: the port is required. */
function hostOfHeader(value: string, defaultPort: number | null): { host: string; port: number } | null {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(value.trim());
  if (!match) return null;
  const host = normalHost(match[1] ?? match[2] ?? "");
  const port = match[3] === undefined ? defaultPort : Number(match[3]);
  if (host === "" || port === null || port < 1 || port > 65_535) return null;
  return { host, port };
}
