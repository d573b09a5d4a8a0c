import { z } from "zod";
import { lazySchema } from "../src/lib/lazy-schema.js";
import type { StreamParser } from "../src/agent/stream-contract.js";
import type { AgentEvent } from "../src/vocabulary/events.js";

/**
 * The command backend's stdout: JSON lines become events (a `{"type":"message","text":…}` line is its final message,
 * a `{"type":"session","id":…}` line its session), other lines text events. The exit code decides the ending.
 */
const MessageLine = lazySchema(() => z.looseObject({ type: z.literal("message"), text: z.string() }));
const SessionLine = lazySchema(() => z.looseObject({ type: z.literal("session"), id: z.string() }));

export function createCommandParser(): StreamParser {
  let finalMessage: string | null = null;
  let sessionId: string | null = null;
  return {
    push(line: string): AgentEvent[] {
      if (line.trim() === "") return [];
      let data: unknown;
      try {
        data = JSON.parse(line);
      } catch {
        return [{ type: "agent.text", stream: "stdout", text: line }];
      }
      const message = MessageLine.safeParse(data);
      if (message.success) {
        finalMessage = message.data.text;
        return [{ type: "agent.message", text: message.data.text }];
      }
      const session = SessionLine.safeParse(data);
      if (session.success && sessionId === null) {
        sessionId = session.data.id;
        return [{ type: "agent.session", sessionId }];
      }
      return [{ type: "agent.json", data }];
    },
    finish() {
      return { verdict: { kind: "exit_code_decides" }, sessionId, finalMessage, usage: null };
    },
  };
}
