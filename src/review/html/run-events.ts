import { z } from "zod";
import { type LoadedRun, readRunFile } from "../../run-dir/run-lookup.js";

/** events.jsonl is read whole up to this size; a larger one is named, not read (an agent's chatter can be huge). */
export const MAX_EVENTS_BYTES = 64 * 1024 * 1024;

const Timed = { time: z.string() };
const PhaseStarted = z.looseObject({ type: z.literal("phase.started"), phase: z.string(), ...Timed });
const PhaseFinished = z.looseObject({
  type: z.literal("phase.finished"),
  phase: z.string(),
  durationMs: z.number(),
  ok: z.boolean(),
  note: z.string().optional(),
  ...Timed,
});
const CommandStarted = z.looseObject({ type: z.literal("command.started"), phase: z.string(), command: z.string(), ...Timed });
const AttemptStarted = z.looseObject({ type: z.literal("attempt.started"), attempt: z.number(), resumed: z.boolean(), ...Timed });
const AttemptFinished = z.looseObject({
  type: z.literal("attempt.finished"),
  attempt: z.number(),
  terminalReason: z.string(),
  detail: z.string().nullable(),
  ...Timed,
});
const SourceChanged = z.looseObject({ type: z.literal("source.changed"), when: z.string(), changed: z.array(z.string()), ...Timed });
const ToolStarted = z.looseObject({
  type: z.literal("agent.tool.started"),
  id: z.string(),
  name: z.string(),
  input: z.unknown(),
  ...Timed,
});
const ToolFinished = z.looseObject({ type: z.literal("agent.tool.finished"), id: z.string(), ok: z.boolean(), ...Timed });
const RunFinished = z.looseObject({ type: z.literal("run.finished"), terminalReason: z.string(), detail: z.string().nullable(), ...Timed });
/** Only its time is read: the timeline's zero. */
const RunStarted = z.looseObject({ type: z.literal("run.started"), ...Timed });

/** The events the report's timeline shows (of src/vocabulary/events.ts); any other line is passed over. */
const TimelineEvent = z.discriminatedUnion("type", [
  PhaseStarted,
  PhaseFinished,
  CommandStarted,
  AttemptStarted,
  AttemptFinished,
  SourceChanged,
  ToolStarted,
  ToolFinished,
  RunFinished,
]);
export type TimelineEvent = z.infer<typeof TimelineEvent>;

export type RunEvents =
  | { readonly kind: "events"; readonly events: readonly TimelineEvent[]; readonly startedAt: string | null }
  /** No events.jsonl to read, and why (missing, not a file handoff wrote, too large). */
  | { readonly kind: "unread"; readonly why: string };

/** `<folder>events.jsonl` of the run, read with the run directory's checks (readRunFile), each line parsed on its own. */
export function readRunEvents(run: LoadedRun, folder: string): RunEvents {
  const read = readRunFile(run, `${folder}events.jsonl`, MAX_EVENTS_BYTES);
  switch (read.kind) {
    case "missing":
      return { kind: "unread", why: "the run directory has no events.jsonl" };
    case "untrusted":
      return { kind: "unread", why: `events.jsonl was not read: ${read.why}` };
    case "too_large":
      return { kind: "unread", why: `events.jsonl is ${read.size} bytes, more than the report reads (${MAX_EVENTS_BYTES})` };
    case "unreadable":
      return { kind: "unread", why: `events.jsonl cannot be read (${read.message})` };
    case "bytes":
      break;
  }
  const events: TimelineEvent[] = [];
  let startedAt: string | null = null;
  for (const line of read.bytes.toString("utf8").split("\n")) {
    if (line.trim() === "") continue;
    let data: unknown;
    try {
      data = JSON.parse(line);
    } catch {
      continue; // events are written whole or not at all; a line that is not JSON is not handoff's
    }
    const started = RunStarted.safeParse(data);
    if (started.success) startedAt ??= started.data.time;
    const parsed = TimelineEvent.safeParse(data);
    if (parsed.success) events.push(parsed.data);
  }
  return { kind: "events", events, startedAt };
}
