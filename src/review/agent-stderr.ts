import { BackendResultJson } from "../run-dir/artifacts/backend-result.js";
import { type LoadedRun, readRunJson } from "../run-dir/run-lookup.js";
import { escapeControls } from "../vocabulary/display.js";
import type { RunResult } from "../verdict/result.js";
import { ownFilesPrefix, tailLines } from "./run-files.js";
import { plainText } from "../lib/plain-text.js";

const STDERR_TAIL_LINES = 30;
const STDERR_LINE_CHARS = 240;
const BACKEND_RESULT_MAX_BYTES = 1024 * 1024;

/** The run ended on the agent, or without a patch a verdict can stand on: what the agent said on stderr matters. */
function agentStderrMatters(r: RunResult): boolean {
  switch (r.terminalReason) {
    case "external_agent_error":
    case "timeout":
    case "no_changes":
      return true;
    default:
      return r.patch === null && r.terminalReason !== "user_cancelled";
  }
}

/**
 * The end of the agent's stderr (backend-result.json `stderrTail`, the last 4 KiB), plain text, escaped and cut to its last lines,
 * when the agent failed or the run ended without a verdict-worthy patch; null otherwise, or when it said nothing.
 */
export function agentStderrTail(run: LoadedRun): { lines: string[]; omitted: number } | null {
  if (!agentStderrMatters(run.result)) return null;
  const prefix = ownFilesPrefix(run);
  if (prefix === null) return null;
  const parsed = readRunJson(run, `${prefix}backend-result.json`, BackendResultJson, BACKEND_RESULT_MAX_BYTES);
  const said = parsed && "stderrTail" in parsed && typeof parsed.stderrTail === "string" ? parsed.stderrTail : "";
  if (said.trim() === "") return null;
  const { lines, omitted } = tailLines(plainText(said), STDERR_TAIL_LINES, STDERR_LINE_CHARS);
  return { lines: lines.map(escapeControls), omitted };
}

/** The paths the sandbox hid that the agent's stderr named (`hidden_path_named` containment events), escaped. */
export function hiddenPathsTheAgentNamed(r: RunResult): string[] {
  return (r.containment?.events ?? []).flatMap((event) =>
    event.kind === "hidden_path_named" && typeof event.path === "string" ? [escapeControls(event.path)] : [],
  );
}
