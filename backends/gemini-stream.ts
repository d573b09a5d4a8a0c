import { z } from "zod";
import { lazySchema } from "../src/lib/lazy-schema.js";
import type { ExternalAgentResult } from "../src/agent/backend.js";
import { classifyProviderError } from "../src/agent/cli-failures.js";
import type { StreamParser, StreamVerdict } from "../src/agent/stream-contract.js";
import type { AgentEvent } from "../src/vocabulary/events.js";
import { readJsonLine, shapeDiagnostic, unknownTypeDiagnostic } from "./json-line.js";
import { clip } from "../src/lib/clip.js";

/**
 * The `--output-format stream-json` stream of the Gemini CLI (`@google/gemini-cli` 0.61.0): one JSON object per line,
 * keyed on `type` (`init`, `message`, `tool_use`, `tool_result`, `error`, `result`). The last line is always `result`,
 * with `status` `success` or `error`, whatever the exit code. docs/backends/gemini.md has the mapping table.
 */

const Init = lazySchema(() => z.looseObject({ session_id: z.string().min(1), model: z.string().optional() }));
const Message = lazySchema(() => z.looseObject({ role: z.string(), content: z.string(), delta: z.boolean().optional() }));
const ToolUse = lazySchema(() => z.looseObject({ tool_name: z.string(), tool_id: z.string(), parameters: z.unknown().optional() }));
const ToolResult = lazySchema(() =>
  z.looseObject({
    tool_id: z.string(),
    status: z.string(),
    output: z.string().nullish(),
    error: z.looseObject({ type: z.string().optional(), message: z.string().optional() }).nullish(),
  }),
);
const ErrorLine = lazySchema(() => z.looseObject({ severity: z.string().optional(), message: z.string() }));
const Stats = lazySchema(() => z.looseObject({ input_tokens: z.number().optional(), output_tokens: z.number().optional() }));
const Result = lazySchema(() =>
  z.looseObject({
    status: z.string(),
    error: z.looseObject({ type: z.string().optional(), message: z.string().optional() }).nullish(),
    stats: Stats.nullish(),
  }),
);

/** Tools whose successful call changed the file at `parameters.file_path`. */
const FILE_TOOLS: Readonly<Record<string, string>> = { write_file: "write", replace: "edit" };

/** Gemini's error types for a stop that is not the provider's fault (packages/cli nonInteractiveCli). */
const MAX_TURNS = /max(imum)?[ _-]?(session[ _-]?)?turns/i;

/** The HTTP status inside Gemini's `[API Error: {"error":{"code":401,…}}]`, when the message carries the API's body. */
function embeddedStatus(message: string): number | null {
  const match = /"code"\s*:\s*(\d{3})\b/.exec(message);
  return match ? Number(match[1]) : null;
}

/** Gemini wraps the provider's error as `[API Error: <what it said>]`: read what it said (a cut stream says `terminated`). */
function unwrapped(message: string): string {
  return message.replace(/^\[API Error: ([^\n]*)\]/, "$1");
}

/** What a failed `result` means for the run. */
export function geminiFailure(message: string, type: string | undefined): Extract<StreamVerdict, { kind: "failed" }> {
  const detail = MAX_TURNS.test(`${type ?? ""} ${message}`)
    ? "max_turns"
    : classifyProviderError(unwrapped(message), embeddedStatus(message));
  return { kind: "failed", detail, message: clip(message, 1000), hint: null };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

export function createGeminiStreamParser(): StreamParser {
  let sessionId: string | null = null;
  let finalMessage: string | null = null;
  /** The assistant's streamed pieces (`delta: true`) since the last tool call: one message when something else comes. */
  let pending = "";
  let result: z.infer<typeof Result> | null = null;
  const toolArgs = new Map<string, { name: string; parameters: unknown }>();

  function flush(): AgentEvent[] {
    const text = pending.trim();
    pending = "";
    if (!text) return [];
    finalMessage = text;
    return [{ type: "agent.message", text }];
  }

  function read(type: string, line: unknown): AgentEvent[] {
    switch (type) {
      case "init": {
        const parsed = Init.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        if (parsed.data.session_id === sessionId) return [];
        sessionId = parsed.data.session_id;
        return [{ type: "agent.session", sessionId }];
      }
      case "message": {
        const parsed = Message.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        // The user's own message (the task) is echoed first: input, not output.
        if (parsed.data.role !== "assistant") return [];
        if (parsed.data.delta === true) {
          pending += parsed.data.content;
          return [];
        }
        pending += parsed.data.content;
        return flush();
      }
      case "tool_use": {
        const parsed = ToolUse.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        const { tool_id, tool_name, parameters } = parsed.data;
        toolArgs.set(tool_id, { name: tool_name, parameters });
        return [...flush(), { type: "agent.tool.started", id: tool_id, name: tool_name, input: parameters }];
      }
      case "tool_result": {
        const parsed = ToolResult.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        const { tool_id, status, output, error } = parsed.data;
        const ok = status === "success";
        const text = output ?? error?.message ?? undefined;
        const events: AgentEvent[] = [{ type: "agent.tool.finished", id: tool_id, ok, ...(text ? { output: clip(text) } : {}) }];
        const call = toolArgs.get(tool_id);
        toolArgs.delete(tool_id);
        const change = call ? FILE_TOOLS[call.name] : undefined;
        const params = call?.parameters;
        if (ok && change && isRecord(params) && typeof params.file_path === "string")
          events.push({ type: "agent.file.changed", path: params.file_path, change });
        return events;
      }
      case "error": {
        const parsed = ErrorLine.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        return [{ type: "agent.error", message: `gemini ${parsed.data.severity ?? "error"}: ${parsed.data.message}` }];
      }
      case "result": {
        const parsed = Result.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        result = parsed.data;
        const events = flush();
        const stats = parsed.data.stats;
        const usage = { inputTokens: stats?.input_tokens ?? 0, outputTokens: stats?.output_tokens ?? 0, costUsd: null };
        // A request that failed before any answer reports zeros: nothing to say.
        if (usage.inputTokens > 0 || usage.outputTokens > 0) events.push({ type: "agent.usage", ...usage });
        return events;
      }
      default:
        return [unknownTypeDiagnostic(type, line)];
    }
  }

  function push(text: string): AgentEvent[] {
    if (text.trim() === "") return [];
    const parsedLine = readJsonLine(text);
    if (!parsedLine.ok) return [parsedLine.event];
    const line = parsedLine.value;
    const type = isRecord(line) ? line.type : undefined;
    if (typeof type !== "string") return [unknownTypeDiagnostic(type, line)];
    return read(type, line);
  }

  function verdict(): StreamVerdict {
    const end = result as z.infer<typeof Result> | null;
    if (!end) return { kind: "incomplete" };
    if (end.status === "success") return { kind: "finished" };
    return geminiFailure(end.error?.message ?? `gemini ended with status '${end.status}'`, end.error?.type);
  }

  return {
    push,
    finish() {
      // Pieces after the last event, in a stream cut short: still what the agent said.
      flush();
      const end = result as z.infer<typeof Result> | null;
      const stats = end?.stats;
      const usage: ExternalAgentResult["usage"] = stats
        ? { inputTokens: stats.input_tokens ?? 0, outputTokens: stats.output_tokens ?? 0, costUsd: null }
        : null;
      return { verdict: verdict(), sessionId, finalMessage, usage };
    },
  };
}
