import { z } from "zod";
import { isRecord, stringOr, textOf } from "./conversation.js";
import type { Protocol, Reply, ReplyContext } from "./protocol.js";
import { argumentsOf, describeIssues, INPUT_TOKENS, OUTPUT_TOKENS, splitInTwo, sseFrame } from "./protocol.js";
import type { OfferedTool } from "./tools.js";

/** Anthropic Messages API (`POST /v1/messages`): Claude Code, and pi/omp with `api: anthropic-messages`. */

const requestSchema = z.looseObject({
  model: z.string().optional(),
  stream: z.boolean().optional(),
  system: z.unknown().optional(),
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown() })),
  // Server tools (web_search_…) carry a name but no input_schema.
  tools: z.array(z.looseObject({ name: z.string().optional(), input_schema: z.unknown().optional() })).optional(),
});

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  529: "overloaded_error",
};

function contentBlock(reply: Reply, context: ReplyContext): Record<string, unknown> {
  if (reply.kind === "text") return { type: "text", text: reply.text };
  return { type: "tool_use", id: `toolu_${context.callId}`, name: reply.call.name, input: argumentsOf(reply.call) };
}

export const anthropic: Protocol = {
  name: "anthropic",

  parse(body) {
    const parsed = requestSchema.safeParse(body);
    if (!parsed.success) return { ok: false, message: describeIssues(parsed.error.issues) };
    const request = parsed.data;
    const toolResultIds: string[] = [];
    const userTexts: string[] = [];
    for (const message of request.messages) {
      if (message.role !== "user") continue;
      for (const block of Array.isArray(message.content) ? message.content : []) {
        if (isRecord(block) && block.type === "tool_result") toolResultIds.push(stringOr(block.tool_use_id));
      }
      userTexts.push(textOf(message.content)); // tool_result blocks have no `text`, so only the user's words count
    }
    const tools: OfferedTool[] = (request.tools ?? []).flatMap((tool) =>
      tool.name ? [{ name: tool.name, kind: "function" as const, parameters: tool.input_schema ?? null }] : [],
    );
    return {
      ok: true,
      conversation: {
        model: request.model ?? null,
        stream: request.stream === true,
        toolResultIds,
        tools,
        texts: [textOf(request.system), ...userTexts],
        userTexts,
      },
    };
  },

  stream(reply, context) {
    const id = `msg_${context.seq}`;
    const frames = [
      sseFrame(
        {
          type: "message_start",
          message: {
            id,
            type: "message",
            role: "assistant",
            model: context.model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: INPUT_TOKENS, output_tokens: 0 },
          },
        },
        "message_start",
      ),
      sseFrame({ type: "ping" }, "ping"),
    ];
    const block = contentBlock(reply, context);
    const start = reply.kind === "text" ? { type: "text", text: "" } : { ...block, input: {} };
    frames.push(sseFrame({ type: "content_block_start", index: 0, content_block: start }, "content_block_start"));
    const pieces = reply.kind === "text" ? splitInTwo(reply.text) : splitInTwo(JSON.stringify(argumentsOf(reply.call)));
    for (const piece of pieces) {
      const delta = reply.kind === "text" ? { type: "text_delta", text: piece } : { type: "input_json_delta", partial_json: piece };
      frames.push(sseFrame({ type: "content_block_delta", index: 0, delta }, "content_block_delta"));
    }
    frames.push(sseFrame({ type: "content_block_stop", index: 0 }, "content_block_stop"));
    frames.push(
      sseFrame(
        {
          type: "message_delta",
          delta: { stop_reason: reply.kind === "text" ? "end_turn" : "tool_use", stop_sequence: null },
          usage: { output_tokens: OUTPUT_TOKENS },
        },
        "message_delta",
      ),
    );
    frames.push(sseFrame({ type: "message_stop" }, "message_stop"));
    return frames;
  },

  json(reply, context) {
    return {
      id: `msg_${context.seq}`,
      type: "message",
      role: "assistant",
      model: context.model,
      content: [contentBlock(reply, context)],
      stop_reason: reply.kind === "text" ? "end_turn" : "tool_use",
      stop_sequence: null,
      usage: { input_tokens: INPUT_TOKENS, output_tokens: OUTPUT_TOKENS },
    };
  },

  error(status, message) {
    const type = ERROR_TYPES[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
    return { type: "error", error: { type, message } };
  },
};
