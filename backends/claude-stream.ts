import { z } from "zod";
import { lazySchema } from "../src/lib/lazy-schema.js";
import type { StreamParser, StreamVerdict } from "../src/agent/stream-contract.js";
import type { ExternalAgentResult } from "../src/agent/backend.js";
import type { AgentEvent } from "../src/vocabulary/events.js";
import { type AgentFailureDetail, classifyProviderError } from "../src/agent/cli-failures.js";
import { readJsonLine, shapeDiagnostic, unknownTypeDiagnostic } from "./json-line.js";
import { clip } from "../src/lib/clip.js";

/** The stream of `claude -p --output-format stream-json --verbose` (tested with 2.1.197); docs/backends/claude.md. */

/**
 * The `error` code Claude puts on its synthetic assistant message and on `system/api_retry` (authentication_failed,
 * rate_limit, billing_error, server_error, overloaded, …), as a detail; null for codes that say nothing actionable.
 */
export function detailOfErrorCode(code: string | null): AgentFailureDetail | null {
  switch (code) {
    case "authentication_failed":
      return "auth_failed";
    case "rate_limit":
    case "billing_error":
      return "rate_limited";
    case "server_error":
    case "overloaded":
      return "provider_error";
    default:
      return null;
  }
}

/**
 * What a failed result means: the HTTP status when Claude gives one (`api_error_status`), else the words ("Unable to
 * connect to API (ConnectionRefused)", "Not logged in · Please run /login"), else the error code of the synthetic
 * assistant message (a connection lost mid-stream is "Connection to the API was lost (ECONNRESET)" + server_error).
 */
export function classifyClaudeError(message: string, status: number | null, code: string | null): AgentFailureDetail {
  const detail = classifyProviderError(message, status);
  if (detail !== "agent_reported_error") return detail;
  return detailOfErrorCode(code) ?? detail;
}

const Init = lazySchema(() =>
  z.looseObject({ session_id: z.string().min(1), model: z.string().optional(), claude_code_version: z.string().optional() }),
);
const ApiRetry = lazySchema(() =>
  z.looseObject({
    attempt: z.number().optional(),
    max_retries: z.number().optional(),
    error_status: z.number().nullish(),
    error: z.string().nullish(),
  }),
);
const ApiError = lazySchema(() => z.looseObject({ error: z.unknown().optional(), message: z.string().optional() }));

const Block = lazySchema(() => z.looseObject({ type: z.string() }));
const TextBlock = lazySchema(() => z.looseObject({ text: z.string() }));
const ThinkingBlock = lazySchema(() => z.looseObject({ thinking: z.string() }));
const ToolUseBlock = lazySchema(() => z.looseObject({ id: z.string(), name: z.string(), input: z.unknown().optional() }));
const ToolResultBlock = lazySchema(() =>
  z.looseObject({ tool_use_id: z.string(), content: z.unknown().optional(), is_error: z.boolean().nullish() }),
);

const Assistant = lazySchema(() =>
  z.looseObject({
    message: z.looseObject({ content: z.array(Block) }),
    parent_tool_use_id: z.string().nullish(),
    error: z.string().nullish(),
  }),
);
const User = lazySchema(() =>
  z.looseObject({
    message: z.looseObject({ content: z.union([z.string(), z.array(Block)]) }),
    parent_tool_use_id: z.string().nullish(),
    tool_use_result: z.unknown().optional(),
  }),
);
/** The tools whose structured result names a file they changed. */
const FILE_TOOLS = new Set(["Write", "Edit", "MultiEdit"]);
/** Write: `{type: "create"|"update", filePath}`; Edit: `{filePath, structuredPatch, …}` without a type. */
const FileToolResult = lazySchema(() => z.looseObject({ filePath: z.string(), type: z.string().optional() }));

const Result = lazySchema(() =>
  z.looseObject({
    subtype: z.string(),
    is_error: z.boolean(),
    result: z.string().optional(),
    errors: z.array(z.string()).optional(),
    api_error_status: z.number().nullish(),
    total_cost_usd: z.number().nullish(),
    usage: z
      .looseObject({
        input_tokens: z.number(),
        output_tokens: z.number(),
        cache_creation_input_tokens: z.number().nullish(),
        cache_read_input_tokens: z.number().nullish(),
      })
      .optional(),
    permission_denials: z.array(z.looseObject({ tool_name: z.string(), tool_input: z.unknown().optional() })).optional(),
    session_id: z.string().optional(),
  }),
);

/**
 * Lines handoff reads nothing from, on purpose (no event, no diagnostic): progress and bookkeeping that repeats what
 * the assistant/user/result lines say. `stream_event` and `system/status` only come with --include-partial-messages.
 */
const SKIPPED_TYPES = new Set(["stream_event", "rate_limit_event", "tool_progress", "prompt_suggestion"]);
const SKIPPED_SYSTEM = new Set([
  "status",
  "hook_started",
  "hook_progress",
  "hook_response",
  "task_started",
  "task_progress",
  "task_updated",
  "task_notification",
  "task_summary",
  "compact_boundary",
  "session_state_changed",
  "thinking_tokens",
]);

/** A tool result's text: a string, or the text blocks of a content array (images are named, not inlined). */
function resultText(content: unknown): string | undefined {
  if (typeof content === "string") return clip(content);
  if (!Array.isArray(content)) return undefined;
  const parts = content.map((part: unknown) => {
    if (typeof part !== "object" || part === null) return "";
    if ("text" in part && typeof part.text === "string") return part.text;
    return "type" in part && typeof part.type === "string" ? `[${part.type}]` : "";
  });
  return clip(parts.filter(Boolean).join("\n"));
}

function describeDenials(denials: ReadonlyArray<{ tool_name: string; tool_input?: unknown }>): string {
  const named = denials.map((denial) => {
    const input = denial.tool_input;
    const target =
      typeof input === "object" && input !== null
        ? (["file_path", "command", "path", "url", "notebook_path"] as const)
            .map((key) => (input as Record<string, unknown>)[key])
            .find((value) => typeof value === "string")
        : undefined;
    return typeof target === "string" ? `${denial.tool_name} ${clip(target, 200)}` : denial.tool_name;
  });
  return `claude refused ${denials.length === 1 ? "a tool call" : `${denials.length} tool calls`}: ${named.join("; ")}`;
}

/**
 * The stream of one `claude -p` run. handoff chose the session id (`--session-id`), so it is announced with the first
 * line; `system/init` confirms it. The `result` line is the end: success is read from `is_error`, `subtype` and
 * `permission_denials`, never from the exit code (an API failure is `subtype: "success"` with `is_error: true`).
 */
export function createClaudeParser(chosenSessionId: string | null = null): StreamParser {
  let sessionId: string | null = null;
  let announced = false;
  let finalMessage: string | null = null;
  /** The error code of the last synthetic (error) assistant message. */
  let lastErrorCode: string | null = null;
  let terminal: StreamVerdict | null = null;
  let usage: ExternalAgentResult["usage"] = null;
  /** Tool names by call id, to know which results changed a file. */
  const toolNames = new Map<string, string>();

  function announce(id: string | null): AgentEvent[] {
    if (!id || id === sessionId) return [];
    sessionId = id;
    return [{ type: "agent.session", sessionId: id }];
  }

  function assistant(line: unknown): AgentEvent[] {
    const parsed = Assistant.safeParse(line);
    if (!parsed.success) return [shapeDiagnostic("assistant", parsed.error, line)];
    const { message, error } = parsed.data;
    const topLevel = !parsed.data.parent_tool_use_id;
    const events: AgentEvent[] = [];
    for (const block of message.content) {
      switch (block.type) {
        case "text": {
          const text = TextBlock.safeParse(block);
          if (!text.success) {
            events.push(shapeDiagnostic("assistant text", text.error, line));
            break;
          }
          if (error) {
            // Claude's own words about a failed API call ("Invalid API key · …"), not the model's.
            lastErrorCode = error;
            events.push({ type: "agent.error", message: text.data.text });
            break;
          }
          if (text.data.text.trim() === "") break;
          events.push({ type: "agent.message", text: text.data.text });
          // A subagent's words are its report to the main agent, not the answer to the user.
          if (topLevel) finalMessage = text.data.text;
          break;
        }
        case "thinking": {
          const thinking = ThinkingBlock.safeParse(block);
          if (!thinking.success) events.push(shapeDiagnostic("assistant thinking", thinking.error, line));
          else if (thinking.data.thinking.trim() !== "") events.push({ type: "agent.reasoning", text: thinking.data.thinking });
          break;
        }
        case "redacted_thinking":
          break; // encrypted: nothing to show
        case "tool_use":
        case "server_tool_use":
        case "mcp_tool_use": {
          const tool = ToolUseBlock.safeParse(block);
          if (!tool.success) events.push(shapeDiagnostic(`assistant ${block.type}`, tool.error, line));
          else {
            toolNames.set(tool.data.id, tool.data.name);
            events.push({ type: "agent.tool.started", id: tool.data.id, name: tool.data.name, input: tool.data.input });
          }
          break;
        }
        default:
          events.push(unknownTypeDiagnostic(`assistant ${block.type}`, line));
      }
    }
    if (error && events.length === 0) {
      lastErrorCode = error;
      events.push({ type: "agent.error", message: `claude reported ${error}` });
    }
    return events;
  }

  function user(line: unknown): AgentEvent[] {
    const parsed = User.safeParse(line);
    if (!parsed.success) return [shapeDiagnostic("user", parsed.error, line)];
    const { content } = parsed.data.message;
    // A plain user text is a prompt (the task, or the main agent's prompt to a subagent): nothing new.
    if (typeof content === "string") return [];
    const events: AgentEvent[] = [];
    for (const block of content) {
      if (block.type === "text" || block.type === "image") continue;
      if (block.type !== "tool_result" && block.type !== "web_search_tool_result" && block.type !== "mcp_tool_result") {
        events.push(unknownTypeDiagnostic(`user ${block.type}`, line));
        continue;
      }
      const result = ToolResultBlock.safeParse(block);
      if (!result.success) {
        events.push(shapeDiagnostic(`user ${block.type}`, result.error, line));
        continue;
      }
      const ok = result.data.is_error !== true;
      const output = resultText(result.data.content);
      events.push({ type: "agent.tool.finished", id: result.data.tool_use_id, ok, ...(output !== undefined ? { output } : {}) });
      const file = FileToolResult.safeParse(parsed.data.tool_use_result);
      const toolName = toolNames.get(result.data.tool_use_id) ?? "";
      toolNames.delete(result.data.tool_use_id); // a call has one result: the map stays as small as the calls in flight
      if (ok && content.length === 1 && FILE_TOOLS.has(toolName) && file.success) {
        events.push({ type: "agent.file.changed", path: file.data.filePath, change: file.data.type === "create" ? "create" : "update" });
      }
    }
    return events;
  }

  function system(line: unknown, subtype: unknown): AgentEvent[] {
    if (typeof subtype === "string" && SKIPPED_SYSTEM.has(subtype)) return [];
    switch (subtype) {
      case "init": {
        const parsed = Init.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic("system/init", parsed.error, line)];
        return announce(parsed.data.session_id);
      }
      case "api_retry": {
        const parsed = ApiRetry.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic("system/api_retry", parsed.error, line)];
        const { attempt, max_retries: max, error_status: status, error } = parsed.data;
        const what = [status ? `HTTP ${status}` : null, error ?? null].filter(Boolean).join(" ") || "an API error";
        const count = attempt !== undefined ? ` (attempt ${attempt}${max !== undefined ? ` of ${max}` : ""})` : "";
        return [{ type: "agent.error", message: `claude is retrying after ${what}${count}` }];
      }
      case "api_error": {
        const parsed = ApiError.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic("system/api_error", parsed.error, line)];
        const said =
          parsed.data.message ?? (typeof parsed.data.error === "string" ? parsed.data.error : JSON.stringify(parsed.data.error ?? line));
        return [{ type: "agent.error", message: clip(said, 2000) }];
      }
      default:
        return [unknownTypeDiagnostic(`system/${String(subtype)}`, line)];
    }
  }

  function result(line: unknown): AgentEvent[] {
    const parsed = Result.safeParse(line);
    if (!parsed.success) {
      terminal = {
        kind: "failed",
        detail: "malformed_event_stream",
        message: "claude's final result line had an unexpected shape",
        hint: null,
      };
      return [shapeDiagnostic("result", parsed.error, line)];
    }
    const value = parsed.data;
    const events: AgentEvent[] = [...announce(value.session_id ?? null)];
    if (value.usage) {
      const { input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens } = value.usage;
      usage = {
        // Anthropic counts cached prompt tokens apart; the prompt's size is their sum.
        inputTokens: input_tokens + (cache_creation_input_tokens ?? 0) + (cache_read_input_tokens ?? 0),
        outputTokens: output_tokens,
        costUsd: value.total_cost_usd ?? null,
      };
      events.push({ type: "agent.usage", ...usage });
    }
    const said = value.errors?.length ? value.errors.join("; ") : (value.result ?? "");
    const denials = value.permission_denials ?? [];
    const answered = !value.is_error && value.subtype === "success";
    // The result text is the last top-level assistant text: the answer even if no text line was seen.
    if (answered && finalMessage === null && value.result) finalMessage = value.result;
    if (value.subtype === "error_max_turns") {
      terminal = { kind: "failed", detail: "max_turns", message: said || "claude reached its maximum number of turns", hint: null };
    } else if (!answered) {
      const message = said || `claude ended with ${value.subtype}`;
      terminal = {
        kind: "failed",
        detail: classifyClaudeError(message, value.api_error_status ?? null, lastErrorCode),
        message,
        hint: null,
      };
    } else if (denials.length > 0) {
      terminal = { kind: "failed", detail: "permission_denied", message: describeDenials(denials), hint: null };
    } else {
      terminal = { kind: "finished" };
    }
    return events;
  }

  return {
    push(text: string): AgentEvent[] {
      if (text.trim() === "") return [];
      const events: AgentEvent[] = [];
      if (!announced) {
        // handoff chose the id: the session exists as soon as claude writes anything.
        announced = true;
        events.push(...announce(chosenSessionId));
      }
      const read = readJsonLine(text);
      if (!read.ok) return [...events, read.event];
      const line = read.value;
      const type = typeof line === "object" && line !== null && "type" in line ? line.type : undefined;
      const subtype = typeof line === "object" && line !== null && "subtype" in line ? line.subtype : undefined;
      if (typeof type === "string" && SKIPPED_TYPES.has(type)) return events;
      switch (type) {
        case "system":
          return [...events, ...system(line, subtype)];
        case "assistant":
          return [...events, ...assistant(line)];
        case "user":
          return [...events, ...user(line)];
        case "result":
          return [...events, ...result(line)];
        default:
          return [...events, unknownTypeDiagnostic(type, line)];
      }
    },
    finish() {
      return { verdict: terminal ?? { kind: "incomplete" }, sessionId, finalMessage, usage };
    },
  };
}
