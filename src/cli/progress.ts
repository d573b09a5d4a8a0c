import { escapeControls } from "../vocabulary/display.js";
import type { RecordedEvent } from "../vocabulary/events.js";

/** The gist of a tool call's input for one progress line: its command or path. */
function toolSummary(input: unknown): string {
  if (typeof input !== "object" || input === null) return "";
  const record = input as Record<string, unknown>;
  const gist = [record.command, record.cmd, record.file_path, record.filePath, record.path].find((value) => typeof value === "string");
  return typeof gist === "string" ? ` ${gist.split("\n")[0]!.slice(0, 120)}` : "";
}

/** The progress lines on stderr: one per gate event, and the agent's words and tools unless --json keeps stderr quiet. */
export function progressPrinter(json: boolean, prefix = ""): (event: RecordedEvent) => void {
  // Agent text and paths can carry terminal controls (OSC 52, cursor moves): escaped before they reach stderr.
  const write = (line: string) => process.stderr.write(`handoff: ${prefix}${escapeControls(line)}\n`);
  return (event) => {
    switch (event.type) {
      case "run.started":
        write(`run ${event.runId}: ${event.backend} on ${event.repo} at ${event.baseCommit.slice(0, 12)}`);
        break;
      case "sandbox.chosen":
        write(
          event.sandbox === "bwrap"
            ? `sandbox: bubblewrap (the agent sees only its clone; verification ${event.verifyNetwork ? "with" : "without"} network)`
            : `NO SANDBOX: ${event.reason}; the agent can reach everything you can (result.json lists what was left open)`,
        );
        break;
      case "phase.started":
        if (event.phase === "agent") write("agent working in the disposable clone…");
        if (event.phase === "verify") write("verifying in a fresh checkout…");
        if (event.phase === "held") write("verifying again, with the changed verification inputs held to the base…");
        if (event.phase === "cleanup") write("removing the workspaces…");
        break;
      case "phase.finished":
        write(`${event.phase} ${event.ok ? "done" : "FAILED"} in ${event.durationMs} ms${event.note ? `: ${event.note}` : ""}`);
        break;
      case "command.started":
        write(`  [${event.phase}] $ ${event.command}`);
        break;
      case "verification.inputs_changed":
        write(
          `the patch changes verification inputs (--test-edits ${event.policy}): ${event.paths.slice(0, 5).join(", ")}${event.paths.length > 5 ? ", …" : ""}`,
        );
        break;
      case "egress.blocked":
        write(
          `network: ${event.role === "agent" ? "the agent" : `setup \`${event.label}\``} was refused ${event.host}:${event.port} (${event.reason}); --allow-net ${event.host} would allow it`,
        );
        break;
      case "source.changed":
        write(`the source repository changed: ${event.changed.slice(0, 5).join(", ")}`);
        break;
      case "attempt.started":
        if (event.resumed) write(`attempt ${event.attempt}: resuming the agent's session with handoff's feedback…`);
        break;
      case "attempt.finished":
        write(`attempt ${event.attempt}: ${event.terminalReason}${event.detail ? ` (${event.detail})` : ""}`);
        break;
      case "attempts.stopped":
        write(`no further attempt: ${event.reason}`);
        break;
      case "environment.reused":
        write(
          `setup: reusing the base environment ${event.key.slice(0, 12)} (built by run ${event.builtBy}; its setup took ${event.setupMs} ms)`,
        );
        break;
      case "agent.message":
        if (!json) write(`  agent: ${event.text.split("\n")[0]!.slice(0, 160)}`);
        break;
      case "agent.session":
        if (!json) write(`  agent session ${event.sessionId}`);
        break;
      case "agent.tool.started":
        if (!json) write(`  agent tool: ${event.name}${toolSummary(event.input)}`);
        break;
      case "agent.error":
        if (!json) write(`  agent error: ${event.message.split("\n")[0]!.slice(0, 160)}`);
        break;
      default:
        break;
    }
  };
}
