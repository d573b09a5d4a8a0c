import { z } from "zod";
import { stringOr, textOf } from "./conversation.js";
import type { Protocol, Reply, ReplyContext } from "./protocol.js";
import { argumentsOf, describeIssues, INPUT_TOKENS, OUTPUT_TOKENS, openAiError, splitInTwo, sseFrame } from "./protocol.js";
import type { OfferedTool } from "./tools.js";

/** OpenAI Chat Completions (`POST /v1/chat/completions`): opencode, and pi/omp with `api: openai-completions`. */

const requestSchema = z.looseObject({
  model: z.string().optional(),
  stream: z.boolean().optional(),
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown().optional() })),
  tools: z
    .array(z.looseObject({ function: z.looseObject({ name: z.string(), parameters: z.unknown().optional() }).optional() }))
    .optional(),
});

const USAGE = { prompt_tokens: INPUT_TOKENS, completion_tokens: OUTPUT_TOKENS, total_tokens: INPUT_TOKENS + OUTPUT_TOKENS };

function envelope(context: ReplyContext, object: string): Record<string, unknown> {
  return { id: `chatcmpl-${context.seq}`, object, created: Math.floor(Date.now() / 1000), model: context.model };
}

function finishReason(reply: Reply): string {
  return reply.kind === "text" ? "stop" : "tool_calls";
}

export const openAiChat: Protocol = {
  name: "openai-chat",

  parse(body) {
    const parsed = requestSchema.safeParse(body);
    if (!parsed.success) return { ok: false, message: describeIssues(parsed.error.issues) };
    const request = parsed.data;
    const texts = request.messages
      .filter((message) => message.role === "system" || message.role === "developer" || message.role === "user")
      .map((message) => textOf(message.content));
    const userTexts = request.messages.filter((message) => message.role === "user").map((message) => textOf(message.content));
    const tools: OfferedTool[] = (request.tools ?? []).flatMap((tool) =>
      tool.function ? [{ name: tool.function.name, kind: "function" as const, parameters: tool.function.parameters ?? null }] : [],
    );
    return {
      ok: true,
      conversation: {
        model: request.model ?? null,
        stream: request.stream === true,
        toolResultIds: request.messages.filter((message) => message.role === "tool").map((message) => stringOr(message.tool_call_id)),
        tools,
        texts,
        userTexts,
      },
    };
  },

  stream(reply, context) {
    const chunk = (delta: unknown, finish: string | null = null) =>
      sseFrame({ ...envelope(context, "chat.completion.chunk"), choices: [{ index: 0, delta, finish_reason: finish }] });
    const frames = [chunk({ role: "assistant", content: "" })];
    if (reply.kind === "text") {
      for (const piece of splitInTwo(reply.text)) frames.push(chunk({ content: piece }));
    } else {
      const start = { index: 0, id: `call_${context.callId}`, type: "function", function: { name: reply.call.name, arguments: "" } };
      frames.push(chunk({ tool_calls: [start] }));
      for (const piece of splitInTwo(JSON.stringify(argumentsOf(reply.call)))) {
        frames.push(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
      }
    }
    frames.push(chunk({}, finishReason(reply)));
    frames.push(sseFrame({ ...envelope(context, "chat.completion.chunk"), choices: [], usage: USAGE }));
    frames.push(sseFrame("[DONE]"));
    return frames;
  },

  json(reply, context) {
    const message =
      reply.kind === "text"
        ? { role: "assistant", content: reply.text }
        : {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: `call_${context.callId}`,
                type: "function",
                function: { name: reply.call.name, arguments: JSON.stringify(argumentsOf(reply.call)) },
              },
            ],
          };
    return { ...envelope(context, "chat.completion"), choices: [{ index: 0, message, finish_reason: finishReason(reply) }], usage: USAGE };
  },

  error: openAiError,
};
