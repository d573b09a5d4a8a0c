import type { OfferedTool } from "./tools.js";

/** What the scripted model needs from one request, whatever its wire protocol. */
export interface Conversation {
  readonly model: string | null;
  readonly stream: boolean;
  /** The call id of every tool result already in the conversation, in order ("" when a result names none). */
  readonly toolResultIds: readonly string[];
  readonly tools: readonly OfferedTool[];
  /** System prompt and user-side text in order, searched for the agent's working directory. */
  readonly texts: readonly string[];
  /** The user's messages only (no system prompt, no tool results), searched for a later turn's `when` (script.ts). */
  readonly userTexts: readonly string[];
}

/** The text of a message content: a string, or the `text` fields of an array of parts. */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const parts: string[] = [];
  for (const part of content) {
    if (typeof part === "string") parts.push(part);
    else if (isRecord(part) && typeof part.text === "string") parts.push(part.text);
  }
  return parts.join("\n");
}

export function stringOr(value: unknown, fallback = ""): string {
  return typeof value === "string" ? value : fallback;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Where each CLI names its working directory; an absolute path only, up to the end of the line. */
const CWD_PATTERNS: readonly RegExp[] = [
  /<cwd>(\/[^<\n]*)<\/cwd>/, // codex: <environment_context><cwd>…</cwd>
  /current working directory: '(\/[^'\n]*)'/i, // omp: <system-reminder>…current working directory: '…'
  /working directory: (\/[^\n]*)/i, // claude ("Primary working directory:"), opencode, pi
  /\*\*Workspace Directories:\*\*\n\s*- (\/[^\n]*)/, // gemini: <session_context>…- **Workspace Directories:**\n  - /…
];

/** The agent's working directory as its request states it, or null. */
export function findCwd(texts: readonly string[]): string | null {
  for (const pattern of CWD_PATTERNS) {
    for (const text of texts) {
      const match = pattern.exec(text);
      const found = match?.[1]?.trim().replace(/[.`'"]+$/, "");
      if (found) return found;
    }
  }
  return null;
}
