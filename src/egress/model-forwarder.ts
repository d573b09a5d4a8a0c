import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { builtinOnUse } from "../lib/builtin-on-use.js";
import type { Socket } from "node:net";
import type { EgressLog } from "./egress-log.js";
import { endToEndHeaders, relayAnswer } from "./http-relay.js";
import type { EgressRole } from "./egress-record.js";
import type { KeyRoute } from "./key-route.js";

/** Loaded when a forwarder opens, not at every start (builtin-on-use.ts). */
const http = builtinOnUse<typeof import("node:http")>("node:http");
const https = builtinOnUse<typeof import("node:https")>("node:https");

/** What the CLI holds instead of its key: recognisable, and worth nothing anywhere. */
export function keyPlaceholder(): string {
  return `handoff-placeholder-${randomBytes(12).toString("hex")}`;
}

export interface ModelForwarderOptions {
  readonly socket: string;
  readonly route: KeyRoute;
  readonly realKey: string;
  readonly placeholder: string;
  readonly role: EgressRole;
  readonly label: string;
  /** The rule in words, for the record (`claude: ANTHROPIC_API_KEY, added by handoff`). */
  readonly rule: string;
  readonly log: EgressLog;
}

/** The headers a CLI carries its key in, and how the key is written there. */
const KEY_SLOTS = [
  { name: "x-api-key", header: "x-api-key", holding: (key: string) => key },
  { name: "x-goog-api-key", header: "x-goog-api-key", holding: (key: string) => key },
  { name: "bearer", header: "authorization", holding: (key: string) => `Bearer ${key}` },
] as const;

/** The slots each kind of key route puts the real key in. */
const ROUTE_SLOTS: Readonly<Record<KeyRoute["header"], readonly (typeof KEY_SLOTS)[number]["name"][]>> = {
  "x-api-key": ["x-api-key"],
  bearer: ["bearer"],
  "x-api-key and bearer": ["x-api-key", "bearer"],
  "x-goog-api-key": ["x-goog-api-key"],
};

/**
 * handoff's model forwarder for one key: an HTTP server on a Unix socket (reached from the sandbox's loopback) that
 * sends every request on to the route's upstream, with the placeholder the CLI sent replaced by the real key in the
 * route's header (and dropped from a key header the route does not name, where the CLI sent it twice). A request that
 * does not carry the placeholder goes on unchanged: the key is added to nothing else.
 */
export class ModelForwarder {
  readonly #options: ModelForwarderOptions;
  readonly #upstream: URL;
  readonly #server;
  readonly #live = new Set<Socket>();

  constructor(options: ModelForwarderOptions) {
    this.#options = options;
    this.#upstream = new URL(options.route.upstream);
    this.#server = http().createServer({ requestTimeout: 0 }, (req, res) => {
      try {
        this.#forward(req, res);
      } catch {
        // A request node will not send on (a header it refuses): that request ends, never handoff.
        res.destroy();
      }
    });
    this.#server.on("connection", (socket: Socket) => {
      this.#live.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => this.#live.delete(socket));
    });
    this.#server.on("clientError", (_error, socket) => socket.destroy());
    this.#server.listen(options.socket);
  }

  /** The base URL the CLI is given inside the sandbox: the forwarder's port, the upstream's path. */
  insideBaseUrl(port: number): string {
    const path = this.#upstream.pathname.replace(/\/+$/, "");
    return `http://127.0.0.1:${port}${path}`;
  }

  async close(): Promise<void> {
    for (const socket of this.#live) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #forward(req: IncomingMessage, res: ServerResponse): void {
    req.on("error", () => {});
    res.on("error", () => {});
    const { route, realKey, placeholder, log, role, label, rule } = this.#options;
    const upstream = this.#upstream;
    const port = upstream.port === "" ? (upstream.protocol === "https:" ? 443 : 80) : Number(upstream.port);
    const attempt = log.record({ role, label, host: upstream.hostname.replace(/^\[|\]$/g, ""), port, via: "model", rule, reason: null });
    const headers = endToEndHeaders(req.headers, "without host");
    headers.host = upstream.host;
    // The placeholder in a key header the route does not name (omp sends both to a base URL not Anthropic's own) is
    // dropped there, never passed on as a second credential that fails.
    for (const slot of KEY_SLOTS) {
      if (headers[slot.header] !== slot.holding(placeholder)) continue;
      if (ROUTE_SLOTS[route.header].includes(slot.name)) headers[slot.header] = slot.holding(realKey);
      else delete headers[slot.header];
    }
    // The CLI's path already carries the upstream's prefix (its base URL inside has the same path).
    const send = upstream.protocol === "https:" ? https().request : http().request;
    const out = send({
      protocol: upstream.protocol,
      hostname: upstream.hostname.replace(/^\[|\]$/g, ""),
      port,
      method: req.method,
      path: req.url ?? "/",
      headers,
      agent: false,
    });
    out.on("error", (error) => {
      if (!res.headersSent) {
        const body = `handoff's model forwarder could not reach ${upstream.host}: ${error.message}\n`;
        res.writeHead(502, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(body) });
        res.end(body);
      } else res.destroy();
    });
    out.on("response", (answer) => relayAnswer(answer, res, attempt));
    req.on("data", (chunk: Buffer) => attempt.addUp(chunk.length));
    req.pipe(out);
  }
}
