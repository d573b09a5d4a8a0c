import type { Conversation } from "./conversation.js";
import type { ToolCall } from "./tools.js";

/** What the model answers: final text (ends the turn) or one tool call. */
export type Reply = { readonly kind: "text"; readonly text: string } | { readonly kind: "tool"; readonly call: ToolCall };

export interface ReplyContext {
  /** Echoed from the request. */
  readonly model: string;
  /** Server-wide response counter: makes ids unique. */
  readonly seq: number;
  /** Tool call id without its protocol prefix (`call_`, `toolu_`); see decide.ts. */
  readonly callId: string;
}

export type ParseResult = { readonly ok: true; readonly conversation: Conversation } | { readonly ok: false; readonly message: string };

export interface Protocol {
  readonly name: "anthropic" | "openai-chat" | "openai-responses" | "gemini";
  /** `path`: the request's path without its query (Gemini names the model and the method there). */
  parse(body: unknown, path?: string): ParseResult;
  /** The SSE frames of a complete streamed reply; a `cut` step sends only the first. */
  stream(reply: Reply, context: ReplyContext): string[];
  /** The body of a non-streamed reply. */
  json(reply: Reply, context: ReplyContext): unknown;
  /** The error body for an HTTP status. */
  error(status: number, message: string): unknown;
}

/** Fixed usage per response; tests assert on these numbers. */
export const INPUT_TOKENS = 100;
export const OUTPUT_TOKENS = 20;

export function sseFrame(data: unknown, event?: string): string {
  const json = typeof data === "string" ? data : JSON.stringify(data);
  return `${event ? `event: ${event}\n` : ""}data: ${json}\n\n`;
}

/** Two non-empty halves when possible, so clients must join streamed fragments. */
export function splitInTwo(text: string): string[] {
  if (text.length < 2) return [text];
  const middle = Math.floor(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)];
}

/** A freeform call as JSON arguments, for protocols that only know function tools. */
export function argumentsOf(call: ToolCall): Record<string, unknown> {
  return call.kind === "function" ? call.arguments : { input: call.input };
}

/** The zod issues of a failed parse as one line. */
export function describeIssues(issues: readonly { readonly path: readonly PropertyKey[]; readonly message: string }[]): string {
  return issues.map((issue) => `${issue.path.map(String).join(".") || "body"}: ${issue.message}`).join("; ");
}

/** OpenAI-style error body shared by Chat Completions and Responses. */
export function openAiError(status: number, message: string): unknown {
  const [type, code] =
    status === 401
      ? ["invalid_request_error", "invalid_api_key"]
      : status === 429
        ? ["requests", "rate_limit_exceeded"]
        : status >= 500
          ? ["server_error", "server_error"]
          : ["invalid_request_error", null];
  return { error: { message, type, param: null, code } };
}
