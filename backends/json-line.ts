import type { z } from "zod";
import { clip } from "../src/lib/clip.js";
import type { AgentEvent } from "../src/vocabulary/events.js";

const RAW_LIMIT = 2000;

/** One stdout line as JSON, or the diagnostic event that keeps it (a bad line is never fatal, never dropped). */
export function readJsonLine(
  line: string,
): { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly event: AgentEvent } {
  try {
    return { ok: true, value: JSON.parse(line) };
  } catch {
    return { ok: false, event: { type: "diagnostic", message: "a line that is not JSON", raw: clip(line, RAW_LIMIT) } };
  }
}

/** A JSON line whose shape did not match what its `type` promises. */
export function shapeDiagnostic(type: string, error: z.ZodError, line: unknown): AgentEvent {
  const issue = error.issues[0];
  return {
    type: "diagnostic",
    message: `a '${type}' event of an unexpected shape (${issue ? `${issue.path.join(".") || "root"}: ${issue.message}` : "invalid"})`,
    raw: clip(JSON.stringify(line), RAW_LIMIT),
  };
}

export function unknownTypeDiagnostic(type: unknown, line: unknown): AgentEvent {
  return {
    type: "diagnostic",
    message: `an event type handoff does not know: ${JSON.stringify(type)}`,
    raw: clip(JSON.stringify(line), RAW_LIMIT),
  };
}
