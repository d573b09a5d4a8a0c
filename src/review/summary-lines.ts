import { escapeControls } from "../vocabulary/display.js";
import type { RunnerSummary } from "../verify/runner-summary.js";
import type { SummaryEvidence } from "../verify/summary-evidence.js";

/**
 * The test runners' summaries of each verify command (result.json `verification.summaries`), as every report shows
 * them: the findings first, then each command's counts on the base, held to the base and with the patch.
 */

const counts = (s: RunnerSummary) => `${s.runner} ${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped, ${s.todo} todo`;
const side = (where: string, list: readonly RunnerSummary[] | null) =>
  list === null ? [] : [`${where} ${list.length === 0 ? "no summary" : list.map(counts).join("; ")}`];

export function runnerSummaryLines(s: SummaryEvidence, code: (text: string) => string): string[] {
  const how = s.informational ? "shown only, --junit decides" : "the runners' own, compared";
  const lines = s.findings.map((finding) => `${s.informational ? "summary" : "SUMMARY FINDING"}: ${escapeControls(finding)}`);
  const printed = s.commands.filter((c) => [c.base, c.held, c.patched].some((list) => list !== null && list.length > 0));
  if (printed.length === 0) lines.push(`test summaries (${how}): no verify command printed one handoff reads`);
  for (const c of printed) {
    const sides = [...side("on the base", c.base), ...side("held to the base", c.held), ...side("with the patch", c.patched)];
    lines.push(`test summary of ${code(escapeControls(c.command))} (${how}): ${sides.join("; ")}`);
  }
  return lines;
}
