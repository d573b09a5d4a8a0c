import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";
import { anthropic } from "./anthropic.js";
import type { Action } from "./decide.js";
import { decide } from "./decide.js";
import { GEMINI_PATH, gemini } from "./gemini.js";
import { openAiChat } from "./openai-chat.js";
import { openAiResponses } from "./openai-responses.js";
import type { Protocol, ReplyContext } from "./protocol.js";
import { INPUT_TOKENS } from "./protocol.js";
import type { ModelScript } from "./script.js";
import { parseModelScript } from "./script.js";

/** One request as the server saw it. Never holds header values or bodies: only facts about them. */
export interface RecordedRequest {
  readonly time: string;
  readonly method: string;
  readonly path: string;
  readonly protocol: Protocol["name"] | "other";
  readonly stepIndex: number | null;
  /** The script's user turn this request played: 0 = `steps`, k = the k-th `next` entry (a resumed session); null if none. */
  readonly turn: number | null;
  /** How many tool results the conversation already carried (a resumed request carries the earlier turns'). */
  readonly toolResults: number | null;
  readonly side: boolean;
  readonly model: string | null;
  readonly userAgent: string | null;
  readonly hasAuth: boolean;
  /** With `expectedKey`: whether the request carried exactly that key (`x-api-key`, `x-goog-api-key` or a bearer token); never the key itself. */
  readonly keyMatched: boolean | null;
  /** 0 for a `hang` step, which never answers. */
  readonly status: number;
}

export interface ScriptedModel {
  /** http://127.0.0.1:PORT, no trailing slash. */
  readonly url: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Stops listening and destroys every open connection, hanging requests included. */
  close(): Promise<void>;
}

export interface ScriptedModelOptions {
  readonly script: ModelScript;
  /** Default: a free port. */
  readonly port?: number;
  /** The key a test expects on every request: each request records whether it arrived (`keyMatched`). */
  readonly expectedKey?: string;
}

const ROUTES: Readonly<Record<string, Protocol>> = {
  "/v1/messages": anthropic,
  "/v1/chat/completions": openAiChat,
  "/v1/responses": openAiResponses,
};

const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** The headers a client sends its key in as it is (Anthropic's, Gemini's); a bearer token comes in `authorization`. */
const KEY_HEADERS = ["x-api-key", "x-goog-api-key"] as const;

class BadRequest extends Error {}

/** Starts a fake LLM provider on 127.0.0.1 that answers every protocol from `script`. */
export async function startScriptedModel(options: ScriptedModelOptions): Promise<ScriptedModel> {
  const script = parseModelScript(options.script);
  const recorded = (req: IncomingMessage, facts: Partial<RecordedRequest> & { readonly status: number }) =>
    entry(req, facts, options.expectedKey);
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let seq = 0;

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      // A bug here must not take the test run down: answer 500 if still possible.
      if (!res.headersSent) sendJson(res, 500, { error: { message: `scripted model: ${String(error)}` } });
      else res.destroy();
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  // Codex's built-in provider tries a Responses WebSocket first; refusing it makes Codex fall back to SSE.
  server.on("upgrade", (req: IncomingMessage, socket: Socket) => {
    requests.push(recorded(req, { status: 426 }));
    socket.end("HTTP/1.1 426 Upgrade Required\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = pathOf(req);
    const method = req.method ?? "GET";
    if ((method === "HEAD" || method === "GET") && path === "/") {
      requests.push(recorded(req, { status: 200 }));
      res.writeHead(200, { "content-type": "text/plain" }).end(method === "HEAD" ? undefined : "scripted model\n");
      return;
    }
    if (method === "GET" && path === "/v1/models") {
      requests.push(recorded(req, { status: 200 }));
      sendJson(res, 200, { object: "list", data: [{ id: "mock-model", object: "model" }] });
      return;
    }
    if (method === "POST" && path === "/v1/messages/count_tokens") {
      await readBody(req).catch(() => undefined);
      requests.push(recorded(req, { protocol: "anthropic", side: true, status: 200 }));
      sendJson(res, 200, { input_tokens: INPUT_TOKENS });
      return;
    }
    const protocol = ROUTES[path] ?? (GEMINI_PATH.test(path) ? gemini : undefined);
    if (!protocol || method !== "POST") {
      requests.push(recorded(req, { status: 404 }));
      sendJson(res, 404, { error: { message: `scripted model: no route for ${method} ${path}` } });
      return;
    }

    let body: unknown;
    try {
      body = JSON.parse((await readBody(req)).toString("utf8"));
    } catch (error) {
      const message = error instanceof BadRequest ? error.message : `request body is not JSON: ${String(error)}`;
      requests.push(recorded(req, { protocol: protocol.name, status: 400 }));
      sendJson(res, 400, protocol.error(400, `scripted model: ${message}`));
      return;
    }
    const parsed = protocol.parse(body, path);
    if (!parsed.ok) {
      requests.push(recorded(req, { protocol: protocol.name, status: 400 }));
      sendJson(res, 400, protocol.error(400, `scripted model: unexpected ${protocol.name} request: ${parsed.message}`));
      return;
    }

    const conversation = parsed.conversation;
    const decision = decide(script, conversation, ++seq);
    const context: ReplyContext = { model: conversation.model ?? "mock-model", seq, callId: decision.callId };
    const status = statusOf(decision.action);
    requests.push(
      recorded(req, {
        protocol: protocol.name,
        stepIndex: decision.stepIndex,
        turn: decision.turn,
        toolResults: conversation.toolResultIds.length,
        side: decision.side,
        model: conversation.model,
        status,
      }),
    );
    respond(res, protocol, decision.action, conversation.stream, context);
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

function respond(res: ServerResponse, protocol: Protocol, action: Action, stream: boolean, context: ReplyContext): void {
  switch (action.kind) {
    case "hang":
      return; // close() destroys the socket
    case "fail": {
      const headers: Record<string, string> = action.status === 429 ? { "retry-after": "0" } : {};
      sendJson(res, action.status, protocol.error(action.status, action.message), headers);
      return;
    }
    case "cut": {
      // Headers and the first event, then the connection dies mid-stream.
      const first = stream
        ? (protocol.stream(action.reply, context)[0] ?? "")
        : JSON.stringify(protocol.json(action.reply, context)).slice(0, 20);
      res.writeHead(200, { "content-type": stream ? "text/event-stream" : "application/json", "cache-control": "no-cache" });
      res.write(first, () => res.socket?.destroy());
      return;
    }
    case "reply":
      if (!stream) {
        sendJson(res, 200, protocol.json(action.reply, context));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
      res.end(protocol.stream(action.reply, context).join(""));
  }
}

function statusOf(action: Action): number {
  if (action.kind === "fail") return action.status;
  return action.kind === "hang" ? 0 : 200;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

function pathOf(req: IncomingMessage): string {
  const url = req.url ?? "/";
  const end = url.search(/[?#]/);
  return end === -1 ? url : url.slice(0, end);
}

function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return typeof value === "string" && value !== "" ? value : null;
}

function entry(
  req: IncomingMessage,
  facts: Partial<RecordedRequest> & { readonly status: number },
  expectedKey: string | undefined,
): RecordedRequest {
  return {
    time: new Date().toISOString(),
    method: req.method ?? "GET",
    path: pathOf(req),
    protocol: "other",
    stepIndex: null,
    turn: null,
    toolResults: null,
    side: false,
    model: null,
    userAgent: header(req, "user-agent"),
    hasAuth: header(req, "authorization") !== null || KEY_HEADERS.some((name) => header(req, name) !== null),
    keyMatched:
      expectedKey === undefined
        ? null
        : KEY_HEADERS.some((name) => header(req, name) === expectedKey) || header(req, "authorization") === `Bearer ${expectedKey}`,
    ...facts,
  };
}

/** The request body, decompressed; a body over the limit or in an unknown encoding is a BadRequest. */
async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new BadRequest(`request body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  const raw = Buffer.concat(chunks);
  const encoding = (header(req, "content-encoding") ?? "identity").toLowerCase();
  try {
    if (encoding === "identity") return raw;
    if (encoding === "gzip") return gunzipSync(raw);
    if (encoding === "deflate") return inflateSync(raw);
    if (encoding === "br") return brotliDecompressSync(raw);
  } catch (error) {
    throw new BadRequest(`cannot decode the ${encoding} request body: ${String(error)}`);
  }
  throw new BadRequest(`unsupported content-encoding ${encoding}`);
}
