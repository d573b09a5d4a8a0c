import { z } from "zod";
import { lazySchema } from "../src/lib/lazy-schema.js";
import type { StreamParser, StreamVerdict } from "../src/agent/stream-contract.js";
import type { ExternalAgentResult } from "../src/agent/backend.js";
import type { AgentEvent } from "../src/vocabulary/events.js";
import { classifyProviderError } from "../src/agent/cli-failures.js";
import { readJsonLine, shapeDiagnostic, unknownTypeDiagnostic } from "./json-line.js";
import { clip } from "../src/lib/clip.js";

/**
 * The `--mode json` stream of the pi family: pi (`@mariozechner/pi-coding-agent` 0.73.1), its successor pi 1.x
 * (`@earendil-works/pi-coding-agent`: delta-only `message_update`, a `system` message, `agent_settled`) and omp
 * (`@oh-my-pi/pi-coding-agent` 18.2.3: delta-only updates, `errorStatus`, extra informational events).
 * One JSON object per line, keyed on `type`; the first line is the session header `{type:"session", id}`.
 * docs/backends/pi.md and docs/backends/omp.md explain every decision below.
 */

/**
 * Lines read for nothing, on purpose. `message_update` above all: pi 0.73.1 repeats the whole partial message twice
 * on every streamed delta (lines grow quadratically on a long turn), and `message_end` carries the final message
 * anyway. `turn_end` repeats the turn's last message; `message_start` is an empty shell; `tool_execution_update` is
 * progress. The rest are state notifications with nothing for the record.
 */
export const PI_SKIPPED_TYPES: ReadonlySet<string> = new Set([
  // pi 0.73.1 / 1.x
  "turn_start",
  "turn_end",
  "message_start",
  "message_update",
  "tool_execution_update",
  "queue_update",
  "compaction_start",
  "session_info_changed",
  "thinking_level_changed",
  // omp 18.2.3 (src/session/agent-session-events.ts)
  "tool_stream_update",
  "auto_compaction_start",
  "advisor_cost_changed",
  "advisor_yielded",
  "config_warnings_changed",
  "model_changed",
  "retry_fallback_succeeded",
  "ttsr_triggered",
  "todo_reminder",
  "todo_auto_clear",
  "goal_updated",
  "irc_message",
]);

/** Lines passed on whole as `agent.json`: omp's notices, and its switch to a fallback model after an error. */
export const PI_PASSED_ON_TYPES: ReadonlySet<string> = new Set(["notice", "retry_fallback_applied"]);

/** Lines that only a running agent loop writes (omp's `advisor_cost_changed` comes before, even when startup fails). */
const AGENT_EVENT_TYPES: ReadonlySet<string> = new Set([
  "agent_start",
  "turn_start",
  "message_start",
  "message_end",
  "tool_execution_start",
  "tool_execution_end",
  "auto_retry_start",
  "auto_retry_end",
  "agent_end",
  "agent_settled",
]);

/** omp marks an abort that is part of its own flow (plan-mode transitions) with this text; it is not a failure. */
const OMP_SILENT_ABORT = "__omp.silent_abort__";

const SessionHeader = lazySchema(() => z.looseObject({ id: z.string().min(1) }));

const Usage = lazySchema(() =>
  z.looseObject({
    input: z.number().optional(),
    output: z.number().optional(),
    cacheRead: z.number().optional(),
    cacheWrite: z.number().optional(),
    cost: z.looseObject({ total: z.number().optional() }).nullish(),
  }),
);

const MessageLine = lazySchema(() => z.looseObject({ message: z.looseObject({ role: z.string() }) }));

const AssistantMessage = lazySchema(() =>
  z.looseObject({
    role: z.literal("assistant"),
    content: z.array(z.unknown()),
    usage: Usage.nullish(),
    stopReason: z.string().nullish(),
    errorMessage: z.string().nullish(),
    /** omp only: the provider's HTTP status on an error. */
    errorStatus: z.number().nullish(),
  }),
);

const ToolStart = lazySchema(() => z.looseObject({ toolCallId: z.string(), toolName: z.string(), args: z.unknown().optional() }));
const ToolEnd = lazySchema(() =>
  z.looseObject({
    toolCallId: z.string(),
    toolName: z.string(),
    result: z.unknown().optional(),
    isError: z.boolean().optional(),
  }),
);
const RetryStart = lazySchema(() =>
  z.looseObject({
    attempt: z.number(),
    maxAttempts: z.number(),
    delayMs: z.number().optional(),
    errorMessage: z.string().optional(),
  }),
);
const RetryEnd = lazySchema(() => z.looseObject({ success: z.boolean(), attempt: z.number(), finalError: z.string().nullish() }));
const AgentEnd = lazySchema(() => z.looseObject({ willRetry: z.boolean().optional(), isTerminal: z.boolean().optional() }));
const CompactionEnd = lazySchema(() => z.looseObject({ errorMessage: z.string().nullish() }));

/** Tools whose successful call changed a file at `args.path` (pi and omp name them alike). */
const FILE_TOOLS: Readonly<Record<string, string>> = { write: "write", edit: "edit" };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/** The text blocks of a message's content, joined. */
function textOf(content: readonly unknown[], kind: "text" | "thinking"): string {
  return content
    .flatMap((block) => (isRecord(block) && block.type === kind && typeof block[kind] === "string" ? [block[kind]] : []))
    .join("\n")
    .trim();
}

/** A tool result's text: `{content:[{type:"text",text}]}` in both CLIs; anything else as JSON. */
function toolOutput(result: unknown): string | undefined {
  if (result === undefined || result === null) return undefined;
  if (typeof result === "string") return clip(result);
  if (isRecord(result) && Array.isArray(result.content)) return clip(textOf(result.content, "text"));
  return clip(JSON.stringify(result));
}

interface LastAssistant {
  readonly stopReason: string | null;
  readonly errorMessage: string | null;
  readonly errorStatus: number | null;
}

interface Totals {
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
}

export interface PiStreamOptions {
  /** The CLI's name, for messages. */
  readonly cli: string;
}

export function createPiStreamParser(options: PiStreamOptions): StreamParser {
  const { cli } = options;
  let sessionId: string | null = null;
  let finalMessage: string | null = null;
  /** An event only a running agent loop writes (AGENT_EVENT_TYPES) was seen. */
  let started = false;
  /** An `agent_end` (or pi 1.x `agent_settled`) with no retry announced after it. */
  let ended = false;
  /** pi 1.x: nothing follows `agent_settled`. */
  let settled = false;
  let last: LastAssistant | null = null;
  let usage: Totals | null = null;
  const toolArgs = new Map<string, unknown>();

  function assistantEnd(line: unknown, message: unknown): AgentEvent[] {
    const parsed = AssistantMessage.safeParse(message);
    if (!parsed.success) return [shapeDiagnostic("message_end", parsed.error, line)];
    const value = parsed.data;
    const events: AgentEvent[] = [];
    const reasoning = textOf(value.content, "thinking");
    if (reasoning) events.push({ type: "agent.reasoning", text: reasoning });
    const text = textOf(value.content, "text");
    if (text) {
      finalMessage = text;
      events.push({ type: "agent.message", text });
    }
    if (value.usage) {
      const u = value.usage;
      // `input` excludes cached prompt tokens in both CLIs; the prompt the model read is all three.
      const turn = {
        inputTokens: (u.input ?? 0) + (u.cacheRead ?? 0) + (u.cacheWrite ?? 0),
        outputTokens: u.output ?? 0,
        costUsd: typeof u.cost?.total === "number" ? u.cost.total : null,
      };
      usage = {
        inputTokens: (usage?.inputTokens ?? 0) + turn.inputTokens,
        outputTokens: (usage?.outputTokens ?? 0) + turn.outputTokens,
        costUsd: turn.costUsd === null ? (usage?.costUsd ?? null) : (usage?.costUsd ?? 0) + turn.costUsd,
      };
      // A failed request reports all zeros: nothing to say per turn (finish() still sums it).
      if (turn.inputTokens > 0 || turn.outputTokens > 0 || (turn.costUsd ?? 0) > 0) events.push({ type: "agent.usage", ...turn });
    }
    last = { stopReason: value.stopReason ?? null, errorMessage: value.errorMessage ?? null, errorStatus: value.errorStatus ?? null };
    const failed = value.stopReason === "error" || value.stopReason === "aborted";
    if (failed && value.errorMessage !== OMP_SILENT_ABORT) {
      events.push({ type: "agent.error", message: value.errorMessage ?? `the model request ended with stopReason '${value.stopReason}'` });
    }
    return events;
  }

  function push(text: string): AgentEvent[] {
    if (text.trim() === "") return [];
    const read = readJsonLine(text);
    if (!read.ok) return [read.event];
    const line = read.value;
    const type = isRecord(line) ? line.type : undefined;
    if (typeof type !== "string") return [unknownTypeDiagnostic(type, line)];
    if (AGENT_EVENT_TYPES.has(type)) started = true;
    if (PI_SKIPPED_TYPES.has(type)) return [];
    if (PI_PASSED_ON_TYPES.has(type)) return [{ type: "agent.json", data: line }];
    switch (type) {
      case "session": {
        const parsed = SessionHeader.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        if (parsed.data.id === sessionId) return [];
        sessionId = parsed.data.id;
        return [{ type: "agent.session", sessionId }];
      }
      case "agent_start":
        if (!settled) ended = false;
        return [];
      case "message_end": {
        const parsed = MessageLine.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        // user, toolResult, system (pi 1.x), bashExecution, custom, …: the agent's own input, not its output.
        if (parsed.data.message.role !== "assistant") return [];
        return assistantEnd(line, parsed.data.message);
      }
      case "tool_execution_start": {
        const parsed = ToolStart.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        toolArgs.set(parsed.data.toolCallId, parsed.data.args);
        return [{ type: "agent.tool.started", id: parsed.data.toolCallId, name: parsed.data.toolName, input: parsed.data.args }];
      }
      case "tool_execution_end": {
        const parsed = ToolEnd.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        const { toolCallId, toolName, result, isError } = parsed.data;
        const ok = isError !== true;
        const output = toolOutput(result);
        const events: AgentEvent[] = [{ type: "agent.tool.finished", id: toolCallId, ok, ...(output !== undefined ? { output } : {}) }];
        const args = toolArgs.get(toolCallId);
        toolArgs.delete(toolCallId);
        const change = FILE_TOOLS[toolName];
        if (ok && change && isRecord(args) && typeof args.path === "string")
          events.push({ type: "agent.file.changed", path: args.path, change });
        return events;
      }
      case "auto_retry_start": {
        // pi 0.73.1 writes agent_end before announcing the retry: the run is not over yet.
        if (!settled) ended = false;
        const parsed = RetryStart.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        const { attempt, maxAttempts, delayMs, errorMessage } = parsed.data;
        const wait = delayMs !== undefined ? ` in ${(delayMs / 1000).toFixed(1)} s` : "";
        return [
          {
            type: "agent.error",
            message: `${cli} retries (attempt ${attempt} of ${maxAttempts}${wait}) after: ${errorMessage ?? "an error"}`,
          },
        ];
      }
      case "auto_retry_end": {
        const parsed = RetryEnd.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        if (parsed.data.success) return [];
        return [{ type: "agent.error", message: `${cli} gave up retrying: ${parsed.data.finalError ?? "the last attempt failed"}` }];
      }
      case "compaction_end":
      case "auto_compaction_end": {
        const parsed = CompactionEnd.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        return parsed.data.errorMessage
          ? [{ type: "agent.error", message: `${cli} could not compact the context: ${parsed.data.errorMessage}` }]
          : [];
      }
      case "agent_end": {
        const parsed = AgentEnd.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        // pi 1.x announces a retry with willRetry; omp a continuation with isTerminal:false.
        if (!settled) ended = parsed.data.willRetry !== true && parsed.data.isTerminal !== false;
        return [];
      }
      case "agent_settled":
        // pi 1.x: all automatic work (retries, compaction) is over.
        settled = true;
        ended = true;
        return [];
      default:
        return [unknownTypeDiagnostic(type, line)];
    }
  }

  function verdict(): StreamVerdict {
    // Only the header: pi prints it, then stops before its agent starts when it has no credentials or no model
    // ("No API key found for …" on stderr, exit 1). Not a stream handoff failed to follow.
    // Header written, then a failure before the agent started (no key: "No API key found for …", exit 1): the reason is
    // on stderr only, so the stream is incomplete and src/agent/agent-ending.ts quotes stderr.
    if (!started && sessionId !== null) return { kind: "incomplete" };
    if (!ended) return { kind: "incomplete" };
    const end = last as LastAssistant | null;
    if (!end) return { kind: "failed", detail: "agent_reported_error", message: `${cli} ended without a model response`, hint: null };
    if ((end.stopReason === "error" || end.stopReason === "aborted") && end.errorMessage !== OMP_SILENT_ABORT) {
      const message = end.errorMessage ?? `the model request ended with stopReason '${end.stopReason}'`;
      // omp gives the HTTP status (`errorStatus`); pi only the text, which starts with it ("401 invalid x-api-key").
      const detail =
        end.stopReason === "aborted" && !end.errorMessage ? "agent_reported_error" : classifyProviderError(message, end.errorStatus);
      return { kind: "failed", detail, message: clip(message, 1000), hint: null };
    }
    return { kind: "finished" };
  }

  return {
    push,
    finish() {
      const totals = usage as Totals | null;
      const result: ExternalAgentResult["usage"] = totals ? { ...totals } : null;
      return { verdict: verdict(), sessionId, finalMessage, usage: result };
    },
  };
}
