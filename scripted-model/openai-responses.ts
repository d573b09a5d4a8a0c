import { z } from "zod";
import { isRecord, stringOr, textOf } from "./conversation.js";
import type { Protocol, Reply, ReplyContext } from "./protocol.js";
import { argumentsOf, describeIssues, INPUT_TOKENS, OUTPUT_TOKENS, openAiError, splitInTwo, sseFrame } from "./protocol.js";
import type { OfferedTool } from "./tools.js";

/** OpenAI Responses API (`POST /v1/responses`) as Codex CLI 0.171 speaks it. */

const requestSchema = z.looseObject({
  model: z.string().optional(),
  stream: z.boolean().optional(),
  instructions: z.string().nullish(),
  input: z.union([z.string(), z.array(z.looseObject({ type: z.string().optional(), role: z.string().optional() }))]),
  tools: z.array(z.looseObject({ type: z.string().optional(), name: z.string().optional() })).optional(),
});

const TOOL_OUTPUTS = new Set(["function_call_output", "custom_tool_call_output"]);
const PROMPT_ROLES = new Set(["system", "developer", "user"]);

const USAGE = {
  input_tokens: INPUT_TOKENS,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: OUTPUT_TOKENS,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: INPUT_TOKENS + OUTPUT_TOKENS,
};

/** The finished output item, and the same item as `response.output_item.added` announces it. */
function outputItem(
  reply: Reply,
  context: ReplyContext,
): { readonly done: Record<string, unknown>; readonly added: Record<string, unknown> } {
  const callId = `call_${context.callId}`;
  if (reply.kind === "text") {
    const done = {
      type: "message",
      id: `msg_${context.seq}`,
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: reply.text, annotations: [] }],
    };
    return { done, added: { ...done, status: "in_progress", content: [] } };
  }
  const call = reply.call;
  if (call.kind === "custom") {
    const done = {
      type: "custom_tool_call",
      id: `ctc_${context.seq}`,
      call_id: callId,
      name: call.name,
      input: call.input,
      status: "completed",
    };
    return { done, added: { ...done, input: "", status: "in_progress" } };
  }
  const done = {
    type: "function_call",
    id: `fc_${context.seq}`,
    call_id: callId,
    name: call.name,
    arguments: JSON.stringify(argumentsOf(call)),
    status: "completed",
  };
  return { done, added: { ...done, arguments: "", status: "in_progress" } };
}

/** The events between `output_item.added` and `output_item.done` that stream the item's text or arguments. */
function itemDeltas(reply: Reply, item: Record<string, unknown>): Record<string, unknown>[] {
  const base = { item_id: item.id, output_index: 0 };
  if (reply.kind === "text") {
    const part = { type: "output_text", text: "", annotations: [] };
    return [
      { type: "response.content_part.added", ...base, content_index: 0, part },
      ...splitInTwo(reply.text).map((delta) => ({ type: "response.output_text.delta", ...base, content_index: 0, delta })),
      { type: "response.output_text.done", ...base, content_index: 0, text: reply.text },
      { type: "response.content_part.done", ...base, content_index: 0, part: { ...part, text: reply.text } },
    ];
  }
  const [kind, full] =
    item.type === "custom_tool_call" ? ["custom_tool_call_input", item.input] : ["function_call_arguments", item.arguments];
  const text = typeof full === "string" ? full : "";
  const doneKey = kind === "custom_tool_call_input" ? "input" : "arguments";
  return [
    ...splitInTwo(text).map((delta) => ({ type: `response.${kind}.delta`, ...base, delta })),
    { type: `response.${kind}.done`, ...base, [doneKey]: text },
  ];
}

function responseObject(context: ReplyContext, status: string, output: unknown[], usage: unknown): Record<string, unknown> {
  return {
    id: `resp_${context.seq}`,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    model: context.model,
    output,
    usage,
  };
}

export const openAiResponses: Protocol = {
  name: "openai-responses",

  parse(body) {
    const parsed = requestSchema.safeParse(body);
    if (!parsed.success) return { ok: false, message: describeIssues(parsed.error.issues) };
    const request = parsed.data;
    const items = typeof request.input === "string" ? [{ type: "message", role: "user", content: request.input }] : request.input;
    const texts = [request.instructions ?? ""];
    const userTexts: string[] = [];
    for (const item of items) {
      // An item without a type is a message in the "easy input" form.
      if ((item.type ?? "message") !== "message" || !PROMPT_ROLES.has(item.role ?? "")) continue;
      texts.push(textOf(item.content));
      if (item.role === "user") userTexts.push(textOf(item.content));
    }
    const tools: OfferedTool[] = (request.tools ?? []).flatMap((tool): OfferedTool[] => {
      if (!tool.name) return [];
      if (tool.type === "custom") return [{ name: tool.name, kind: "custom", parameters: null }];
      if (tool.type === "function")
        return [{ name: tool.name, kind: "function", parameters: isRecord(tool.parameters) ? tool.parameters : null }];
      return [];
    });
    return {
      ok: true,
      conversation: {
        model: request.model ?? null,
        stream: request.stream === true,
        toolResultIds: items.filter((item) => TOOL_OUTPUTS.has(item.type ?? "")).map((item) => stringOr(item.call_id)),
        tools,
        texts,
        userTexts,
      },
    };
  },

  stream(reply, context) {
    const { done, added } = outputItem(reply, context);
    const events: Record<string, unknown>[] = [
      { type: "response.created", response: responseObject(context, "in_progress", [], null) },
      { type: "response.output_item.added", output_index: 0, item: added },
      ...itemDeltas(reply, done),
      { type: "response.output_item.done", output_index: 0, item: done },
      { type: "response.completed", response: responseObject(context, "completed", [done], USAGE) },
    ];
    return events.map((event, index) => sseFrame({ ...event, sequence_number: index }, String(event.type)));
  },

  json(reply, context) {
    return responseObject(context, "completed", [outputItem(reply, context).done], USAGE);
  },

  error: openAiError,
};
