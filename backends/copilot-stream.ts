import { z } from "zod";
import { lazySchema } from "../src/lib/lazy-schema.js";
import type { StreamParser, StreamVerdict } from "../src/agent/stream-contract.js";
import type { AgentEvent } from "../src/vocabulary/events.js";
import { type AgentFailureDetail, classifyProviderError } from "../src/agent/cli-failures.js";
import { readJsonLine, shapeDiagnostic, unknownTypeDiagnostic } from "./json-line.js";
import { clip } from "../src/lib/clip.js";

/**
 * The `--output-format json` stream of the GitHub Copilot CLI (`@github/copilot` 1.0.102): one session event per
 * line, `{type, data, id, timestamp, parentId, ephemeral?}` (the CLI's schemas/session-events.schema.json), and a
 * last line `{type:"result", sessionId, exitCode, usage}` that it writes whatever the outcome. The CLI itself leaves
 * `assistant.usage` and `session.shutdown` out of this stream, so it carries no token counts.
 * docs/backends/copilot.md explains every decision below.
 */

/**
 * Lines read for nothing, on purpose: streaming deltas (the whole message follows as `assistant.message`), progress,
 * state notifications, and the retry notices `model.call_failure` already reports.
 */
export const COPILOT_SKIPPED_TYPES: ReadonlySet<string> = new Set([
  "user.message",
  "system.message",
  "assistant.turn_start",
  "assistant.turn_end",
  "assistant.turn_retry",
  "assistant.message_start",
  "assistant.message_delta",
  "assistant.reasoning_delta",
  "assistant.streaming_delta",
  "assistant.tool_call_delta",
  "assistant.intent",
  "assistant.idle",
  "model.call_start",
  "model.call_finished",
  "model.call_final_result",
  "tool.execution_partial_result",
  "tool.execution_progress",
  "tool.shell_output",
  "session.info",
  "session.idle",
  "session.skills_loaded",
  "session.mcp_servers_loaded",
  "session.mcp_server_status_changed",
  "session.tools_updated",
  "session.background_tasks_changed",
  "session.title_changed",
  "session.usage_info",
  "session.todos_changed",
  "session.custom_agents_updated",
  "session.extensions_loaded",
  "session.context_changed",
  "session.truncation",
  "session.compaction_start",
  "session.compaction_complete",
  "skill.invoked",
  "subagent.started",
  "subagent.completed",
]);

/** Lines passed on whole as `agent.json`: warnings and notices for the record. */
export const COPILOT_PASSED_ON_TYPES: ReadonlySet<string> = new Set(["session.warning", "session.task_complete", "system.notification"]);

const AssistantMessage = lazySchema(() =>
  z.looseObject({
    data: z.looseObject({ content: z.string(), reasoningText: z.string().nullish() }),
  }),
);
const AssistantReasoning = lazySchema(() => z.looseObject({ data: z.looseObject({ content: z.string() }) }));
const ToolStart = lazySchema(() =>
  z.looseObject({
    data: z.looseObject({ toolCallId: z.string(), toolName: z.string(), arguments: z.unknown().optional() }),
  }),
);
const ToolComplete = lazySchema(() =>
  z.looseObject({
    data: z.looseObject({
      toolCallId: z.string(),
      success: z.boolean(),
      result: z.looseObject({ content: z.string().optional() }).nullish(),
      error: z.looseObject({ message: z.string().optional(), code: z.string().optional() }).nullish(),
      fileEdits: z.array(z.looseObject({ path: z.string(), kind: z.string().optional() })).nullish(),
    }),
  }),
);
const CallFailure = lazySchema(() =>
  z.looseObject({
    data: z.looseObject({
      statusCode: z.number().nullish(),
      retryAttempt: z.number().nullish(),
      errorMessage: z.string().nullish(),
    }),
  }),
);
const SessionError = lazySchema(() =>
  z.looseObject({
    data: z.looseObject({ errorType: z.string(), message: z.string(), statusCode: z.number().nullish() }),
  }),
);
const Result = lazySchema(() => z.looseObject({ sessionId: z.string().min(1), exitCode: z.number() }));

interface SessionFailure {
  readonly errorType: string;
  readonly message: string;
  readonly statusCode: number | null;
}

/** Copilot's own `errorType` first (it says `authentication` and `rate_limit` outright), then the status and words. */
export function copilotFailureDetail(failure: SessionFailure): AgentFailureDetail {
  if (failure.errorType === "authentication") return "auth_failed";
  if (failure.errorType === "rate_limit") return "rate_limited";
  // Its native HTTP client's words for a response that broke off (the scripted model's `cut`).
  if (/error decoding response body|unexpected EOF/i.test(failure.message)) return "provider_error";
  return classifyProviderError(failure.message, failure.statusCode);
}

/** A tool call as the report names it: the tool and its command, path or URL. */
function describeCall(toolName: string, input: unknown): string {
  const args = typeof input === "object" && input !== null ? (input as Record<string, unknown>) : {};
  const target = ["command", "path", "url"].map((key) => args[key]).find((value) => typeof value === "string");
  return typeof target === "string" ? `${toolName} ${clip(target, 200)}` : toolName;
}

/** A hint more precise than the detail's own, where copilot's message allows one. */
function copilotHint(failure: SessionFailure): string | null {
  if (failure.statusCode === 404 && /not found/i.test(failure.message)) {
    return "the provider does not serve this model: set COPILOT_MODEL (passed with --env) or --model to one it has";
  }
  return null;
}

/**
 * One parser per run. handoff chose the session id (`--session-id`, or `--resume` of a known one), so it is announced
 * with the first line; the `result` line confirms it.
 */
export function createCopilotStreamParser(options: { readonly cli: string; readonly chosenSessionId: string | null }): StreamParser {
  const { cli } = options;
  let sessionId: string | null = null;
  let finalMessage: string | null = null;
  let failure: SessionFailure | null = null;
  let exitCode: number | null = null;
  /** Tool calls copilot refused (`error.code: "denied"`: nobody to approve them headless), named for the verdict. */
  const denials: string[] = [];
  const toolTargets = new Map<string, string>();

  function announce(id: string | null): AgentEvent[] {
    if (!id || id === sessionId) return [];
    sessionId = id;
    return [{ type: "agent.session", sessionId: id }];
  }

  function handle(type: string, line: unknown): AgentEvent[] {
    switch (type) {
      case "assistant.message": {
        const parsed = AssistantMessage.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        const events: AgentEvent[] = [];
        const reasoning = parsed.data.data.reasoningText?.trim();
        if (reasoning) events.push({ type: "agent.reasoning", text: reasoning });
        const text = parsed.data.data.content.trim();
        // A message that only requests tools has empty content.
        if (text) {
          finalMessage = text;
          events.push({ type: "agent.message", text });
        }
        return events;
      }
      case "assistant.reasoning": {
        const parsed = AssistantReasoning.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        const text = parsed.data.data.content.trim();
        return text ? [{ type: "agent.reasoning", text }] : [];
      }
      case "tool.execution_start": {
        const parsed = ToolStart.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        const { toolCallId, toolName, arguments: input } = parsed.data.data;
        toolTargets.set(toolCallId, describeCall(toolName, input));
        return [{ type: "agent.tool.started", id: toolCallId, name: toolName, input }];
      }
      case "tool.execution_complete": {
        const parsed = ToolComplete.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        const { toolCallId, success, result, error, fileEdits } = parsed.data.data;
        const output = success ? result?.content : (error?.message ?? result?.content);
        if (!success && error?.code === "denied") denials.push(toolTargets.get(toolCallId) ?? toolCallId);
        toolTargets.delete(toolCallId);
        const events: AgentEvent[] = [
          { type: "agent.tool.finished", id: toolCallId, ok: success, ...(output !== undefined ? { output: clip(output) } : {}) },
        ];
        // The edit tools (`create`, `edit`, `apply_patch`) name the files they changed.
        if (success)
          for (const edit of fileEdits ?? []) events.push({ type: "agent.file.changed", path: edit.path, change: edit.kind ?? "edit" });
        return events;
      }
      case "model.call_failure": {
        const parsed = CallFailure.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        const { statusCode, retryAttempt, errorMessage } = parsed.data.data;
        const status = typeof statusCode === "number" ? `HTTP ${statusCode}` : "no response";
        const attempt = typeof retryAttempt === "number" ? `, attempt ${retryAttempt + 1}` : "";
        return [
          {
            type: "agent.error",
            message: `${cli}'s model request failed (${status}${attempt}): ${clip(errorMessage ?? "no message", 500)}`,
          },
        ];
      }
      case "session.error": {
        const parsed = SessionError.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        const { errorType, message, statusCode } = parsed.data.data;
        failure = { errorType, message, statusCode: statusCode ?? null };
        return [];
      }
      case "result": {
        const parsed = Result.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        exitCode = parsed.data.exitCode;
        return announce(parsed.data.sessionId);
      }
      default:
        return [unknownTypeDiagnostic(type, line)];
    }
  }

  function push(text: string): AgentEvent[] {
    if (text.trim() === "") return [];
    const read = readJsonLine(text);
    if (!read.ok) return [read.event];
    const line = read.value;
    const type = typeof line === "object" && line !== null ? (line as { type?: unknown }).type : undefined;
    if (typeof type !== "string") return [unknownTypeDiagnostic(type, line)];
    const first = sessionId === null && type !== "result" ? announce(options.chosenSessionId) : [];
    if (COPILOT_SKIPPED_TYPES.has(type)) return first;
    if (COPILOT_PASSED_ON_TYPES.has(type)) return [...first, { type: "agent.json", data: line }];
    return [...first, ...handle(type, line)];
  }

  function verdict(): StreamVerdict {
    if (exitCode === null) return { kind: "incomplete" };
    if (exitCode === 0 && denials.length > 0) {
      const what = denials.length === 1 ? "a tool call" : `${denials.length} tool calls`;
      return {
        kind: "failed",
        detail: "permission_denied",
        message: `${cli} refused ${what}: ${clip(denials.join("; "), 1000)}`,
        hint: null,
      };
    }
    if (exitCode === 0) return { kind: "finished" };
    const last = failure as SessionFailure | null;
    if (!last) {
      return {
        kind: "failed",
        detail: "agent_reported_error",
        message: `${cli} ended its run with exit code ${exitCode} and no error event`,
        hint: null,
      };
    }
    return { kind: "failed", detail: copilotFailureDetail(last), message: clip(last.message, 1000), hint: copilotHint(last) };
  }

  return {
    push,
    // `assistant.usage` never reaches this stream (docs/backends/copilot.md, Usage).
    finish: () => ({ verdict: verdict(), sessionId, finalMessage, usage: null }),
  };
}
