import { ms } from "../format.js";
import { type Html, html } from "./escape.js";
import type { RunEvents, TimelineEvent } from "./run-events.js";
import { proseHtml } from "../report-prose.js";

/** Tool calls listed in full; the rest are counted ("and N more"). */
export const TOOL_CALLS_SHOWN = 40;
/** Other events (commands, attempts, the source changing) listed in full. */
const STEPS_SHOWN = 60;
/** Characters of a tool call's input shown. */
const INPUT_CHARS = 160;

interface PhaseSpan {
  readonly phase: string;
  readonly startMs: number;
  readonly durationMs: number;
  readonly ok: boolean;
  readonly note?: string;
}

interface ToolCall {
  readonly startMs: number;
  readonly name: string;
  readonly input: string;
  /** null while no agent.tool.finished named it (the agent stopped, or the CLI never said). */
  ok: boolean | null;
}

function offsetMs(time: string, zero: number): number {
  const at = Date.parse(time);
  return Number.isFinite(at) && Number.isFinite(zero) ? Math.max(0, at - zero) : 0;
}

function inputText(input: unknown): string {
  if (input === undefined) return "";
  const text = typeof input === "string" ? input : (JSON.stringify(input) ?? "");
  return text.length > INPUT_CHARS ? `${text.slice(0, INPUT_CHARS)}…` : text;
}

function step(event: TimelineEvent): string | null {
  switch (event.type) {
    case "command.started":
      return `[${event.phase}] $ ${event.command}`;
    case "attempt.started":
      return `attempt ${event.attempt} started${event.resumed ? " (the session resumed with handoff's feedback)" : ""}`;
    case "attempt.finished":
      return `attempt ${event.attempt} ended ${event.terminalReason}${event.detail ? ` (${event.detail})` : ""}`;
    case "source.changed":
      return `the source repository CHANGED (${event.when}): ${event.changed.slice(0, 10).join(", ")}${event.changed.length > 10 ? ", …" : ""}`;
    case "run.finished":
      return `run finished: ${event.terminalReason}${event.detail ? ` (${event.detail})` : ""}`;
    case "phase.started":
    case "phase.finished":
    case "agent.tool.started":
    case "agent.tool.finished":
      return null;
  }
}

/**
 * The phases as bars on one time axis, the agent's tool calls and handoff's other steps, each list bounded. Each row
 * names its phase once: of a run of several attempts, the phases of attempt k are named `agent (attempt k)`. `folder`:
 * where events.jsonl is, relative to the run directory (a candidates run's winner's).
 */
export function timelineView(read: RunEvents, folder = ""): Html {
  if (read.kind === "unread") return html`<p class="muted">No timeline: ${read.why}.</p>`;
  const zero = Date.parse(read.startedAt ?? read.events[0]?.time ?? "");
  const started = new Map<string, number>();
  const phases: PhaseSpan[] = [];
  const calls = new Map<string, ToolCall>();
  const order: ToolCall[] = [];
  const steps: { at: number; text: string }[] = [];
  const several = read.events.filter((event) => event.type === "attempt.started").length > 1;
  let attempt: number | null = null;
  for (const event of read.events) {
    const at = offsetMs(event.time, zero);
    if (event.type === "phase.started") started.set(event.phase, at);
    else if (event.type === "phase.finished") {
      // A phase whose work began before it was reached (run-environment.ts, lookAhead) is drawn from when it began.
      const fromEnd = Math.max(0, at - event.durationMs);
      const startMs = Math.min(started.get(event.phase) ?? fromEnd, fromEnd);
      const phase = several && attempt !== null ? `${event.phase} (attempt ${attempt})` : event.phase;
      phases.push({ phase, startMs, durationMs: event.durationMs, ok: event.ok, note: event.note });
    } else if (event.type === "agent.tool.started") {
      const call: ToolCall = { startMs: at, name: event.name, input: inputText(event.input), ok: null };
      calls.set(event.id, call);
      order.push(call);
    } else if (event.type === "agent.tool.finished") {
      const call = calls.get(event.id);
      if (call) call.ok = event.ok;
    } else {
      if (event.type === "attempt.started") attempt = event.attempt;
      if (event.type === "attempt.finished") attempt = null;
      const text = step(event);
      if (text !== null) steps.push({ at, text });
    }
  }
  const end = Math.max(1, ...phases.map((p) => p.startMs + p.durationMs));
  const percent = (value: number) => `${Math.min(100, (value / end) * 100).toFixed(2)}%`;
  const more = (total: number, shown: number) =>
    total > shown
      ? html`<p class="muted">and ${total - shown} more (all in ${proseHtml(`${folder}events.jsonl`, { ownFilesPrefix: "" })})</p>`
      : null;
  return html`<table class="timeline">
<thead><tr><th>phase</th><th>start</th><th>took</th><th class="bar-cell"></th></tr></thead>
<tbody>${phases.map(
    (
      p,
    ) => html`<tr class="${p.ok ? "ok" : "bad"}"><td>${p.phase}</td><td class="num">+${ms(p.startMs)}</td><td class="num">${ms(p.durationMs)}</td><td class="bar-cell"><div class="bar" style="margin-left:${percent(p.startMs)};width:${percent(Math.max(p.durationMs, end / 400))}"></div>${p.ok ? null : html`<span class="note">${p.note ?? "failed"}</span>`}</td></tr>
`,
  )}</tbody></table>
<h3>The agent's tool calls (${order.length})</h3>
${
  order.length === 0
    ? html`<p class="muted">None recorded (the backend reports no tool calls, or the agent made none).</p>`
    : html`<table class="calls"><tbody>${order.slice(0, TOOL_CALLS_SHOWN).map(
        (call, i) =>
          html`<tr class="${call.ok === false ? "bad" : "ok"}"><td class="num">${i + 1}</td><td class="num">+${ms(call.startMs)}</td><td><b>${call.name}</b></td><td><code>${call.input}</code></td><td>${call.ok === null ? "no result" : call.ok ? "ok" : "failed"}</td></tr>
`,
      )}</tbody></table>`
}
${more(order.length, TOOL_CALLS_SHOWN)}
${
  steps.length === 0
    ? null
    : html`<h3>Steps</h3><ul class="steps">${steps.slice(0, STEPS_SHOWN).map((s) => html`<li><span class="num">+${ms(s.at)}</span> <code>${s.text}</code></li>`)}</ul>${more(steps.length, STEPS_SHOWN)}`
}`;
}
