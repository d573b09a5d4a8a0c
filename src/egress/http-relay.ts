import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { OpenAttempt } from "./egress-log.js";

/** Headers that belong to one hop, never passed on (RFC 9110 §7.6.1), the proxy's own, and Host (set for the upstream). */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** The end-to-end headers of a request or a response, to send on; a forwarder to another origin sets its own Host. */
export function endToEndHeaders(headers: IncomingHttpHeaders, host: "with host" | "without host"): OutgoingHttpHeaders {
  // The headers `Connection` names are this hop's too (`Connection: close, x-secret` keeps x-secret from going on).
  const named = new Set(
    String(headers.connection ?? "")
      .split(",")
      .map((name) => name.trim().toLowerCase())
      .filter(Boolean),
  );
  const kept: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers))
    if (!HOP_BY_HOP.has(name) && !named.has(name) && (host === "with host" || name !== "host") && value !== undefined) kept[name] = value;
  return kept;
}

/** The upstream's answer, streamed back to the client with its end-to-end headers, its bytes counted. */
export function relayAnswer(answer: IncomingMessage, res: ServerResponse, attempt: OpenAttempt): void {
  res.writeHead(answer.statusCode ?? 502, endToEndHeaders(answer.headers, "with host"));
  answer.on("data", (chunk: Buffer) => attempt.addDown(chunk.length));
  answer.on("error", () => res.destroy());
  answer.pipe(res);
}
