import { z } from "zod";
import { lazySchema } from "../src/lib/lazy-schema.js";
import type { StreamParser, StreamVerdict } from "../src/agent/stream-contract.js";
import type { ExternalAgentResult } from "../src/agent/backend.js";
import type { AgentEvent } from "../src/vocabulary/events.js";
import { type AgentFailureDetail, classifyProviderError } from "../src/agent/cli-failures.js";
import { readJsonLine, shapeDiagnostic, unknownTypeDiagnostic } from "./json-line.js";
import { clip } from "../src/lib/clip.js";

/** The stream of `codex exec --json` (tested with 0.171.0); docs/backends/codex.md. */

/**
 * What a failed turn's message means. Codex gives no status field, only text: "unexpected status 401 Unauthorized:
 * …", "exceeded retry limit, last status: 429 Too Many Requests", "We’re currently experiencing high demand…" (its
 * text for an HTTP 500), "stream disconnected before completion: …" (a broken or idle SSE stream).
 */
export function classifyCodexError(message: string): AgentFailureDetail {
  // Codex words an HTTP 500 without its status.
  if (/experiencing high demand/i.test(message)) return "provider_error";
  return classifyProviderError(message);
}

const Usage = lazySchema(() =>
  z.looseObject({
    input_tokens: z.number(),
    output_tokens: z.number(),
    cached_input_tokens: z.number().optional(),
    reasoning_output_tokens: z.number().optional(),
  }),
);

const ThreadStarted = lazySchema(() => z.looseObject({ thread_id: z.string().min(1) }));
const TurnCompleted = lazySchema(() => z.looseObject({ usage: Usage.optional() }));
const WithMessage = lazySchema(() => z.looseObject({ message: z.string() }));
const TurnFailed = lazySchema(() => z.looseObject({ error: WithMessage }));
const ItemLine = lazySchema(() => z.looseObject({ item: z.looseObject({ id: z.string(), type: z.string() }) }));

const AgentMessage = lazySchema(() => z.looseObject({ text: z.string() }));
const CommandExecution = lazySchema(() =>
  z.looseObject({
    command: z.string(),
    aggregated_output: z.string().optional(),
    exit_code: z.number().nullish(),
    status: z.string(),
  }),
);
const FileChange = lazySchema(() =>
  z.looseObject({
    changes: z.array(z.looseObject({ path: z.string(), kind: z.string() })),
    status: z.string(),
  }),
);
const McpToolCall = lazySchema(() =>
  z.looseObject({
    server: z.string(),
    tool: z.string(),
    arguments: z.unknown().optional(),
    result: z.looseObject({ content: z.array(z.unknown()).optional() }).nullish(),
    error: WithMessage.nullish(),
    status: z.string(),
  }),
);
const WebSearch = lazySchema(() => z.looseObject({ query: z.string() }));
const TodoList = lazySchema(() => z.looseObject({ items: z.array(z.looseObject({ text: z.string(), completed: z.boolean() })) }));
const CollabToolCall = lazySchema(() => z.looseObject({ tool: z.string(), status: z.string() }));

type ItemPhase = "started" | "updated" | "completed";

interface Totals {
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** The text parts of an MCP tool result. */
function mcpOutput(result: z.infer<typeof McpToolCall>): string | undefined {
  if (result.error) return result.error.message;
  const parts = result.result?.content ?? [];
  const texts = parts.flatMap((part) =>
    typeof part === "object" && part !== null && "text" in part && typeof part.text === "string" ? [part.text] : [],
  );
  return texts.length > 0 ? clip(texts.join("\n")) : undefined;
}

/** The command's output, with its exit code when not 0 and its status when it did not simply run (e.g. declined). */
function commandOutput(value: z.infer<typeof CommandExecution>): string {
  const notes: string[] = [];
  if (typeof value.exit_code === "number" && value.exit_code !== 0) notes.push(`exit code ${value.exit_code}`);
  if (value.status !== "completed" && value.status !== "failed") notes.push(value.status);
  return clip(`${value.aggregated_output ?? ""}${notes.length > 0 ? `${value.aggregated_output ? "\n" : ""}(${notes.join(", ")})` : ""}`);
}

/** "Reconnecting... waiting for network" lines before handoff calls the provider unreachable (about 15 s in). */
export const CODEX_NETWORK_WAITS = 3;

export function createCodexParser(): StreamParser {
  let sessionId: string | null = null;
  let finalMessage: string | null = null;
  let terminal: StreamVerdict | null = null;
  let lastError: string | null = null;
  let networkWaits = 0;
  /** Codex reports usage summed over the thread; each turn's share is the difference to the previous report. */
  let reported: Totals = { inputTokens: 0, outputTokens: 0 };
  let usage: Totals | null = null;
  const started = new Set<string>();

  /** agent.tool.started once per item, even when Codex only sends the completed item. */
  function startTool(id: string, name: string, input: unknown): AgentEvent[] {
    if (started.has(id)) return [];
    started.add(id);
    return [{ type: "agent.tool.started", id, name, input }];
  }

  function tool(
    phase: ItemPhase,
    id: string,
    name: string,
    input: unknown,
    finished: () => { ok: boolean; output?: string | undefined },
  ): AgentEvent[] {
    if (phase === "updated") return []; // progress only; the completed item carries the final state
    const events = startTool(id, name, input);
    if (phase === "completed") {
      started.delete(id); // completed is an item's last line: the set stays as small as the items in flight
      const { ok, output } = finished();
      events.push({ type: "agent.tool.finished", id, ok, ...(output !== undefined ? { output } : {}) });
    }
    return events;
  }

  function item(phase: ItemPhase, line: unknown, raw: z.infer<typeof ItemLine>["item"]): AgentEvent[] {
    const { id, type } = raw;
    const shaped = <T>(schema: z.ZodType<T>, use: (value: T) => AgentEvent[]): AgentEvent[] => {
      const parsed = schema.safeParse(raw);
      return parsed.success ? use(parsed.data) : [shapeDiagnostic(`item.${phase} ${type}`, parsed.error, line)];
    };
    switch (type) {
      case "agent_message":
        // 0.171 sends it only completed; an update would be a partial text.
        if (phase !== "completed") return [];
        return shaped(AgentMessage, (value) => {
          finalMessage = value.text;
          return [{ type: "agent.message", text: value.text }];
        });
      case "reasoning":
        if (phase !== "completed") return [];
        return shaped(AgentMessage, (value) => [{ type: "agent.reasoning", text: value.text }]);
      case "command_execution":
        return shaped(CommandExecution, (value) =>
          tool(phase, id, "shell", { command: value.command }, () => ({
            ok: value.status === "completed" && (value.exit_code ?? 0) === 0,
            output: commandOutput(value),
          })),
        );
      case "file_change":
        return shaped(FileChange, (value) => {
          const events = tool(phase, id, "apply_patch", { changes: value.changes }, () => ({
            ok: value.status === "completed",
            output: `${value.status}: ${value.changes.map((change) => `${change.kind} ${change.path}`).join(", ")}`,
          }));
          // A failed patch changed nothing (Codex applies a patch whole or not at all).
          if (phase === "completed" && value.status === "completed") {
            for (const change of value.changes) events.push({ type: "agent.file.changed", path: change.path, change: change.kind });
          }
          return events;
        });
      case "mcp_tool_call":
        return shaped(McpToolCall, (value) =>
          tool(phase, id, `mcp:${value.server}/${value.tool}`, value.arguments, () => ({
            ok: value.status === "completed" && !value.error,
            output: mcpOutput(value),
          })),
        );
      case "web_search":
        return shaped(WebSearch, (value) => tool(phase, id, "web_search", { query: value.query }, () => ({ ok: true })));
      case "collab_tool_call":
        return shaped(CollabToolCall, (value) =>
          tool(phase, id, `collab:${value.tool}`, undefined, () => ({ ok: value.status === "completed" })),
        );
      case "todo_list":
        return shaped(TodoList, (value) => [{ type: "agent.json", data: { todo_list: value.items } }]);
      case "error":
        // Non-fatal by itself (e.g. "Model metadata … not found"); a fatal error ends with turn.failed.
        if (phase !== "completed") return [];
        return shaped(WithMessage, (value) => [{ type: "agent.error", message: value.message }]);
      default:
        return [unknownTypeDiagnostic(`item.${phase} ${type}`, line)];
    }
  }

  return {
    push(text: string): AgentEvent[] {
      if (text.trim() === "") return [];
      const read = readJsonLine(text);
      if (!read.ok) return [read.event];
      const line = read.value;
      const type = typeof line === "object" && line !== null && "type" in line ? line.type : undefined;
      switch (type) {
        case "thread.started": {
          const parsed = ThreadStarted.safeParse(line);
          if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
          if (parsed.data.thread_id === sessionId) return [];
          sessionId = parsed.data.thread_id;
          return [{ type: "agent.session", sessionId }];
        }
        case "turn.started":
          return [];
        case "turn.completed": {
          terminal = { kind: "finished" };
          const parsed = TurnCompleted.safeParse(line);
          if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
          if (!parsed.data.usage) return [];
          const now = { inputTokens: parsed.data.usage.input_tokens, outputTokens: parsed.data.usage.output_tokens };
          const turn = {
            inputTokens: Math.max(0, now.inputTokens - reported.inputTokens),
            outputTokens: Math.max(0, now.outputTokens - reported.outputTokens),
          };
          reported = now;
          usage = {
            inputTokens: (usage?.inputTokens ?? 0) + turn.inputTokens,
            outputTokens: (usage?.outputTokens ?? 0) + turn.outputTokens,
          };
          return [{ type: "agent.usage", ...turn, costUsd: null }];
        }
        case "turn.failed": {
          const parsed = TurnFailed.safeParse(line);
          if (!parsed.success) {
            terminal = { kind: "failed", detail: "agent_reported_error", message: "codex reported a failed turn", hint: null };
            return [shapeDiagnostic(type, parsed.error, line)];
          }
          const message = parsed.data.error.message;
          terminal = { kind: "failed", detail: classifyCodexError(message), message, hint: null };
          // Codex sends the same text as a top-level `error` just before; say it once.
          return message === lastError ? [] : [{ type: "agent.error", message }];
        }
        case "error": {
          // Also sent for every retry ("Reconnecting... 2/5 …"): not the end of the turn.
          const parsed = WithMessage.safeParse(line);
          if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
          lastError = parsed.data.message;
          if (/waiting for network/i.test(parsed.data.message)) networkWaits += 1;
          return [{ type: "agent.error", message: parsed.data.message }];
        }
        case "item.started":
        case "item.updated":
        case "item.completed": {
          const parsed = ItemLine.safeParse(line);
          if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
          return item(type.slice("item.".length) as ItemPhase, line, parsed.data.item);
        }
        default:
          return [unknownTypeDiagnostic(type, line)];
      }
    },
    settledFailure() {
      // With its provider unreachable Codex never gives up (backoff 5, 15, 35 s… even with retries at 0).
      if (networkWaits < CODEX_NETWORK_WAITS) return null;
      return {
        kind: "failed",
        detail: "network_unreachable",
        message: `codex could not reach its model provider: ${lastError ?? "waiting for network"}`,
        hint: null,
      };
    },
    finish() {
      const result: ExternalAgentResult["usage"] = usage ? { ...usage, costUsd: null } : null;
      return { verdict: terminal ?? { kind: "incomplete" }, sessionId, finalMessage, usage: result };
    },
  };
}
