import { escapeControls } from "../vocabulary/display.js";
import type { RecordedEvent } from "../vocabulary/events.js";
import type { EventHook } from "../run/run-recorder.js";

/** The gist of a tool call's input for one progress line: its command or path. */
function toolSummary(input: unknown): string {
  if (typeof input !== "object" || input === null) return "";
  const record = input as Record<string, unknown>;
  const gist = [record.command, record.cmd, record.file_path, record.filePath, record.path].find((value) => typeof value === "string");
  return typeof gist === "string" ? ` ${gist.split("\n")[0]!.slice(0, 120)}` : "";
}

/** The progress lines on stderr: one per gate event, and the agent's words and tools unless --json keeps stderr quiet. */
export function progressPrinter(json: boolean, prefix = ""): EventHook {
  const show = { agent: !json };
  const print = (event: RecordedEvent) => {
    const line = progressLine(event, show);
    // Agent text and paths can carry terminal controls (OSC 52, cursor moves): escaped before they reach stderr.
    if (line !== null) process.stderr.write(`handoff: ${prefix}${escapeControls(line)}\n`);
  };
  return Object.assign(print, { wants: progressWants(show) });
}

/** The agent's events that have a progress line (with `agent`); no other `agent.*` event has one. */
const AGENT_PROGRESS: ReadonlySet<string> = new Set<RecordedEvent["type"]>([
  "agent.message",
  "agent.session",
  "agent.tool.started",
  "agent.error",
]);

/**
 * The event types `progressLine` may make a line of: every type but the agent's own, and of those only the few
 * above when `agent`. The rest of an agent's flood can then be left out of the log unredacted (src/run/run-recorder.ts).
 */
export function progressWants(show: { readonly agent: boolean }): (type: RecordedEvent["type"]) => boolean {
  return (type) => !type.startsWith("agent.") || (show.agent && AGENT_PROGRESS.has(type));
}

/**
 * One event as a progress line, unescaped; null for an event that has none. `agent`: also the agent's words, tools
 * and session. The CLI's stderr and `handoff mcp`'s progress notifications say the same.
 */
export function progressLine(event: RecordedEvent, show: { readonly agent: boolean }): string | null {
  switch (event.type) {
    case "run.started":
      return `run ${event.runId}: ${event.backend} on ${event.repo} at ${event.baseCommit.slice(0, 12)}`;
    case "sandbox.chosen":
      return event.sandbox === "bwrap"
        ? `sandbox: bubblewrap (the agent sees only its clone; verification ${event.verifyNetwork ? "with" : "without"} network)`
        : `NO SANDBOX: ${event.reason}; the agent can reach everything you can (result.json lists what was left open)`;
    case "phase.started":
      if (event.phase === "agent") return "agent working in the disposable clone…";
      if (event.phase === "verify") return "verifying in a fresh checkout…";
      if (event.phase === "held") return "verifying again, with the changed verification inputs held to the base…";
      if (event.phase === "cleanup") return "removing the workspaces…";
      return null;
    case "phase.finished":
      return `${event.phase} ${event.ok ? "done" : "FAILED"} in ${event.durationMs} ms${event.note ? `: ${event.note}` : ""}`;
    case "command.started":
      return `  [${event.phase}] $ ${event.command}`;
    case "verification.inputs_changed":
      return `the patch changes verification inputs (--test-edits ${event.policy}): ${event.paths.slice(0, 5).join(", ")}${event.paths.length > 5 ? ", …" : ""}`;
    case "egress.blocked":
      return `network: ${event.role === "agent" ? "the agent" : `setup \`${event.label}\``} was refused ${event.host}:${event.port} (${event.reason}); --allow-net ${event.host} would allow it`;
    case "source.changed":
      return `the source repository changed: ${event.changed.slice(0, 5).join(", ")}`;
    case "attempt.started":
      return event.resumed ? `attempt ${event.attempt}: resuming the agent's session with handoff's feedback…` : null;
    case "attempt.finished":
      return `attempt ${event.attempt}: ${event.terminalReason}${event.detail ? ` (${event.detail})` : ""}`;
    case "attempts.stopped":
      return `no further attempt: ${event.reason}`;
    case "environment.reused":
      return `setup: reusing the base environment ${event.key.slice(0, 12)} (built by run ${event.builtBy}; its setup took ${event.setupMs} ms)`;
    case "agent.message":
      return show.agent ? `  agent: ${event.text.split("\n")[0]!.slice(0, 160)}` : null;
    case "agent.session":
      return show.agent ? `  agent session ${event.sessionId}` : null;
    case "agent.tool.started":
      return show.agent ? `  agent tool: ${event.name}${toolSummary(event.input)}` : null;
    case "agent.error":
      return show.agent ? `  agent error: ${event.message.split("\n")[0]!.slice(0, 160)}` : null;
    default:
      return null;
  }
}
