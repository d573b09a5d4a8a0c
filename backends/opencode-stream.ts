import { z } from "zod";
import { lazySchema } from "../src/lib/lazy-schema.js";
import type { StreamParser, StreamVerdict } from "../src/agent/stream-contract.js";
import type { AgentEvent } from "../src/vocabulary/events.js";
import { type AgentFailureDetail, classifyProviderError } from "../src/agent/cli-failures.js";
import { readJsonLine, shapeDiagnostic, unknownTypeDiagnostic } from "./json-line.js";
import { clip } from "../src/lib/clip.js";

/** The stream of `opencode run --format json` (tested with 1.18.33); docs/backends/opencode.md. */

// ---------------------------------------------------------------------------------------------------------------
// The stream: one JSON object per line, `{type, timestamp, sessionID, part | error}`.

const Envelope = lazySchema(() => z.looseObject({ type: z.string(), sessionID: z.string().optional() }));

const TextLine = lazySchema(() => z.looseObject({ part: z.looseObject({ text: z.string() }) }));

const ToolLine = lazySchema(() =>
  z.looseObject({
    part: z.looseObject({
      tool: z.string(),
      callID: z.string().optional(),
      id: z.string().optional(),
      state: z.looseObject({
        status: z.string(),
        input: z.unknown().optional(),
        output: z.unknown().optional(),
        error: z.unknown().optional(),
      }),
    }),
  }),
);

const count = lazySchema(() => z.number().nonnegative().catch(0));

const StepFinishLine = lazySchema(() =>
  z.looseObject({
    part: z.looseObject({
      reason: z.string().optional(),
      tokens: z
        .looseObject({
          input: count.optional(),
          output: count.optional(),
          reasoning: count.optional(),
          cache: z.looseObject({ read: count.optional(), write: count.optional() }).optional(),
        })
        .optional(),
      cost: z.number().optional(),
    }),
  }),
);

const ErrorLine = lazySchema(() =>
  z.looseObject({
    error: z.looseObject({
      name: z.string().optional(),
      data: z
        .looseObject({
          message: z.unknown().optional(),
          statusCode: z.number().int().optional(),
          metadata: z.looseObject({ code: z.unknown().optional() }).optional(),
        })
        .optional(),
    }),
  }),
);

/** The words OpenCode puts in a tool's error when it auto-rejected a permission ask (run mode without --auto). */
const REJECTED = /rejected permission/i;

/** What OpenCode says when it keeps the cause to its log (seen for `-m mock/nope` and `-m nope/nope`). */
const HIDDEN_CAUSE = /^Unexpected server error\b/i;

const HIDDEN_CAUSE_HINT =
  "OpenCode did not say why (an unknown --model or provider is the usual cause): check `opencode models` lists the model, or run `opencode run --print-logs` yourself to see the cause";

/** Reads an OpenCode `error` event: the HTTP status when it relays one, then its name and words. */
export function classifyOpencodeError(name: string, message: string, status: number | null, code: string | null): AgentFailureDetail {
  if (name === "ProviderAuthError") return "auth_failed";
  // OpenCode's own catch-all (an unknown model or provider, a broken config…): its words are not the provider's.
  if (HIDDEN_CAUSE.test(message)) return "agent_reported_error";
  const detail = classifyProviderError(code ? `${message} (${code})` : message, status);
  if (detail !== "agent_reported_error") return detail;
  // An APIError is by definition the provider call failing (e.g. "Connection reset by server" on a cut stream).
  if (name === "APIError") return "provider_error";
  if (/operation timed out/i.test(message)) return "provider_error";
  return detail;
}

function stringOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined || value === null) return "";
  return JSON.stringify(value);
}

export function createOpencodeParser(): StreamParser {
  let sessionId: string | null = null;
  let finalMessage: string | null = null;
  let usage: { inputTokens: number; outputTokens: number; costUsd: number | null } | null = null;
  let lastStepReason: string | null = null;
  let failure: { detail: string; message: string; hint: string | null } | null = null;
  let rejection: string | null = null;

  function handle(type: string, line: unknown): AgentEvent[] {
    switch (type) {
      case "step_start":
        return []; // a step boundary; its snapshot hash is OpenCode-internal
      case "text": {
        const parsed = TextLine.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        finalMessage = parsed.data.part.text;
        return [{ type: "agent.message", text: parsed.data.part.text }];
      }
      case "reasoning": {
        const parsed = TextLine.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        return [{ type: "agent.reasoning", text: parsed.data.part.text }];
      }
      case "tool_use": {
        const parsed = ToolLine.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        const { part } = parsed.data;
        const id = part.callID ?? part.id ?? part.tool;
        const ok = part.state.status === "completed";
        const said = stringOf(ok ? part.state.output : (part.state.error ?? part.state.output));
        if (!ok && REJECTED.test(said) && rejection === null) rejection = `${part.tool} ${clip(stringOf(part.state.input), 300)}`;
        return [
          { type: "agent.tool.started", id, name: part.tool, input: part.state.input },
          { type: "agent.tool.finished", id, ok, output: clip(said) },
        ];
      }
      case "step_finish": {
        const parsed = StepFinishLine.safeParse(line);
        if (!parsed.success) return [shapeDiagnostic(type, parsed.error, line)];
        const { part } = parsed.data;
        lastStepReason = part.reason ?? "unknown";
        const tokens = part.tokens;
        const input = (tokens?.input ?? 0) + (tokens?.cache?.read ?? 0) + (tokens?.cache?.write ?? 0);
        const output = (tokens?.output ?? 0) + (tokens?.reasoning ?? 0);
        const cost = part.cost ?? null;
        usage = {
          inputTokens: (usage?.inputTokens ?? 0) + input,
          outputTokens: (usage?.outputTokens ?? 0) + output,
          costUsd: cost === null ? (usage?.costUsd ?? null) : (usage?.costUsd ?? 0) + cost,
        };
        // This step's own numbers (as codex does per turn): the events add up to finish().usage.
        return [{ type: "agent.usage", inputTokens: input, outputTokens: output, costUsd: cost }];
      }
      case "error": {
        const parsed = ErrorLine.safeParse(line);
        if (!parsed.success) {
          failure ??= { detail: "agent_reported_error", message: "opencode reported an error of an unexpected shape", hint: null };
          return [shapeDiagnostic(type, parsed.error, line), { type: "agent.error", message: clip(JSON.stringify(line), 2000) }];
        }
        const { error } = parsed.data;
        const name = error.name ?? "Error";
        const message = stringOf(error.data?.message) || name;
        const status = error.data?.statusCode ?? null;
        const code = typeof error.data?.metadata?.code === "string" ? error.data.metadata.code : null;
        const text = `${name}${status !== null ? ` (HTTP ${status})` : ""}: ${message}`;
        failure ??= {
          detail: classifyOpencodeError(name, message, status, code),
          message: `opencode reported ${clip(text, 1000)}`,
          hint: HIDDEN_CAUSE.test(message) ? HIDDEN_CAUSE_HINT : null,
        };
        return [{ type: "agent.error", message: clip(text, 2000) }];
      }
      default:
        return [unknownTypeDiagnostic(type, line)];
    }
  }

  return {
    push(line: string): AgentEvent[] {
      if (line.trim() === "") return [];
      const read = readJsonLine(line);
      if (!read.ok) return [read.event];
      const envelope = Envelope.safeParse(read.value);
      if (!envelope.success) return [shapeDiagnostic("(no type)", envelope.error, read.value)];
      const events: AgentEvent[] = [];
      if (sessionId === null && envelope.data.sessionID) {
        sessionId = envelope.data.sessionID;
        events.push({ type: "agent.session", sessionId });
      }
      events.push(...handle(envelope.data.type, read.value));
      return events;
    },
    finish() {
      let verdict: StreamVerdict;
      if (failure) verdict = { kind: "failed", ...failure };
      else if (rejection !== null) {
        verdict = {
          kind: "failed",
          detail: "permission_denied",
          message: `opencode auto-rejected a permission request and stopped: ${rejection}`,
          hint: null,
        };
      } else if (lastStepReason !== null && lastStepReason !== "tool-calls") verdict = { kind: "finished" };
      else verdict = { kind: "incomplete" };
      return { verdict, sessionId, finalMessage, usage };
    },
  };
}
