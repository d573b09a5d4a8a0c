import { z } from "zod";
import { isRecord, stringOr, textOf } from "./conversation.js";
import type { Protocol, Reply, ReplyContext } from "./protocol.js";
import { argumentsOf, describeIssues, INPUT_TOKENS, OUTPUT_TOKENS, splitInTwo, sseFrame } from "./protocol.js";
import type { OfferedTool } from "./tools.js";

/**
 * The Gemini API (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse` and `:generateContent`): the Gemini CLI
 * (@google/genai). The model is named in the path, not the body; a tool call is a `functionCall` part of a `model`
 * turn, its result a `functionResponse` part of a `user` turn.
 */

/** `/v1beta/models/{model}:{method}` (any API version): the model and the method. */
export const GEMINI_PATH = /^\/v1[a-z0-9]*\/models\/([^/:]+):(streamGenerateContent|generateContent)$/;

const Part = z.looseObject({
  text: z.string().optional(),
  thought: z.boolean().optional(),
  functionResponse: z.looseObject({ id: z.string().optional(), name: z.string().optional() }).optional(),
});

const requestSchema = z.looseObject({
  contents: z.array(z.looseObject({ role: z.string().optional(), parts: z.array(Part).optional() })),
  systemInstruction: z.unknown().optional(),
  tools: z
    .array(
      z.looseObject({
        functionDeclarations: z
          .array(z.looseObject({ name: z.string(), parameters: z.unknown().optional(), parametersJsonSchema: z.unknown().optional() }))
          .optional(),
      }),
    )
    .optional(),
});

const STATUS_NAMES: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
};

const USAGE = { promptTokenCount: INPUT_TOKENS, candidatesTokenCount: OUTPUT_TOKENS, totalTokenCount: INPUT_TOKENS + OUTPUT_TOKENS };

/** The text of a `systemInstruction`: a string, or a Content with parts. */
function systemText(instruction: unknown): string {
  if (typeof instruction === "string") return instruction;
  return isRecord(instruction) ? textOf(instruction.parts) : "";
}

function part(reply: Reply, context: ReplyContext): Record<string, unknown> {
  if (reply.kind === "text") return { text: reply.text };
  return { functionCall: { id: `call_${context.callId}`, name: reply.call.name, args: argumentsOf(reply.call) } };
}

function response(parts: unknown[], context: ReplyContext, finishReason: string | null): Record<string, unknown> {
  return {
    candidates: [{ content: { role: "model", parts }, index: 0, ...(finishReason ? { finishReason } : {}) }],
    ...(finishReason ? { usageMetadata: USAGE } : {}),
    modelVersion: context.model,
    responseId: `resp_${context.seq}`,
  };
}

export const gemini: Protocol = {
  name: "gemini",

  parse(body, path = "") {
    const parsed = requestSchema.safeParse(body);
    if (!parsed.success) return { ok: false, message: describeIssues(parsed.error.issues) };
    const request = parsed.data;
    const route = GEMINI_PATH.exec(path);
    const toolResultIds: string[] = [];
    const userTexts: string[] = [];
    for (const content of request.contents) {
      if (content.role === "model") continue;
      const parts = content.parts ?? [];
      for (const item of parts) {
        const id = item.functionResponse ? stringOr(item.functionResponse.id) : null;
        // Gemini CLI 0.61.0 restores a resumed session with each function response twice (same id): one result each.
        if (id !== null && (id === "" || !toolResultIds.includes(id))) toolResultIds.push(id);
      }
      // A user turn of function responses only has no words of the user's.
      const words = textOf(parts.filter((item) => !item.functionResponse && item.thought !== true));
      if (words) userTexts.push(words);
    }
    const tools: OfferedTool[] = (request.tools ?? []).flatMap((tool) =>
      (tool.functionDeclarations ?? []).map((declaration) => ({
        name: declaration.name,
        kind: "function" as const,
        parameters: declaration.parametersJsonSchema ?? declaration.parameters ?? null,
      })),
    );
    return {
      ok: true,
      conversation: {
        model: route?.[1] ? decodeURIComponent(route[1]) : null,
        stream: route?.[2] === "streamGenerateContent",
        toolResultIds,
        tools,
        texts: [systemText(request.systemInstruction), ...userTexts],
        userTexts,
      },
    };
  },

  stream(reply, context) {
    if (reply.kind === "tool") return [sseFrame(response([part(reply, context)], context, "STOP"))];
    const pieces = splitInTwo(reply.text);
    return pieces.map((piece, index) => sseFrame(response([{ text: piece }], context, index === pieces.length - 1 ? "STOP" : null)));
  },

  json(reply, context) {
    return response([part(reply, context)], context, "STOP");
  },

  error(status, message) {
    return { error: { code: status, message, status: STATUS_NAMES[status] ?? (status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION") } };
  },
};
