import { displayText } from "../patch/rules/path-names.js";
import { escapeControls } from "../vocabulary/display.js";
import { hunkCounts, parsePatch } from "../patch/patch.js";
import { type LoadedRun, loadPatch } from "../run-dir/run-lookup.js";
import { EXIT_CODES } from "../vocabulary/terminal-reasons.js";
import { agentStderrTail, hiddenPathsTheAgentNamed } from "./agent-stderr.js";
import { type ReportWriter, writeAttempts } from "./attempts-story.js";
import { candidatesTable } from "./candidates-table.js";
import { firstFailureOutput } from "./command-output.js";
import { writeEnvironment } from "./environment-story.js";
import { networkHeadline } from "./network-story.js";
import { writeAgentFacts, writeContainment, writePolicy, writeSource, writeTimings, writeVerification } from "./report-sections.js";

/** `handoff show` in a terminal: every section, indented, then the whole patch. Everything printed is escaped once, at the end. */
export function renderTextReport(run: LoadedRun): string {
  const r = run.result;
  const patch = loadPatch(run);
  // Hunks per file, for the summary table: read from the patch, which stays bytes on disk.
  const hunks = hunkCounts(parsePatch(patch));
  const out: string[] = [];
  const w: ReportWriter = {
    heading: (text) => out.push(`\n${text}`),
    item: (text, depth = 0) => out.push(`${"  ".repeat(depth + 1)}${text}`),
    code: (text) => text,
    // Lines shown as they are, indented.
    block: (lines) => out.push(...lines.map((line) => (line === "" ? "" : `      ${line}`))),
    // The run's prose as recorded: its code spans keep their backticks, which read as code in a terminal too.
    prose: escapeControls,
    localPaths: true,
  };

  out.push(`handoff run ${r.runId}`);
  out.push(`verdict: ${r.terminalReason}${r.detail ? ` (${r.detail})` : ""}, exit ${EXIT_CODES[r.terminalReason]}`);
  out.push(`summary: ${escapeControls(r.summary)}`);
  if (r.hint) out.push(`hint:    ${escapeControls(r.hint)}`);
  const network = networkHeadline(r);
  if (network) out.push(`network: ${network}`);
  if (r.candidates) {
    w.heading(`Candidates (${r.candidates.length}; each a run of its own in candidates/<k>/)`);
    out.push(...candidatesTable(r, "text"));
  }

  writeSource(r, w);
  w.heading("Agent");
  writeAgentFacts(r, w);
  for (const path of hiddenPathsTheAgentNamed(r))
    w.item(`the sandbox hid ${path} from the agent, which named it: it saw an empty place there`);
  const stderr = agentStderrTail(run);
  if (stderr) {
    w.item(`the end of its stderr${stderr.omitted > 0 ? ` (last ${stderr.lines.length} lines)` : ""} (backend-result.json):`);
    w.block(stderr.lines);
  }
  writeAttempts(run, w);
  writeContainment(r, w);

  w.heading("Patch");
  if (!r.patch) w.item("not extracted");
  else if (r.patch.files.length === 0) w.item("no changes");
  else {
    const adds = r.patch.files.reduce((sum, f) => sum + f.additions, 0);
    const dels = r.patch.files.reduce((sum, f) => sum + f.deletions, 0);
    w.item(`${r.patch.files.length} file(s), +${adds} -${dels}, sha256 ${r.patch.sha256.slice(0, 16)}…`);
    r.patch.files.forEach((file, i) => {
      const letter = file.change === "added" ? "A" : file.change === "deleted" ? "D" : "M";
      w.item(`${letter} ${file.path} +${file.additions} -${file.deletions}${hunks[i] !== undefined ? `, ${hunks[i]} hunk(s)` : ""}`);
    });
  }

  writePolicy(r, w);
  w.heading("Verification (run by handoff, not the agent)");
  writeVerification(r, w);
  const failure = firstFailureOutput(run);
  if (failure?.kind === "lines") {
    w.item(`output of ${escapeControls(failure.command.command)}${failure.extent ? ` (${failure.extent})` : ""} (test.log):`);
    w.block(failure.lines);
  } else if (failure) w.item(`output of ${escapeControls(failure.command.command)}: ${failure.why}`);

  writeEnvironment(r, w);
  writeTimings(r, w);
  w.heading("Run directory");
  w.item(run.dir);
  if (r.workspace) w.item(`workspace kept at ${r.workspace}`);

  if (patch.length > 0) {
    w.heading("changes.patch");
    // As bytes decoded: the one escape below covers the patch too, newlines and tabs kept.
    out.push(patch.toString("utf8"));
  }
  // Everything printed passes through one escape: agent text, paths and messages can carry terminal controls.
  return `${displayText(out.join("\n"))}\n`;
}
