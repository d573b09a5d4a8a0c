import { type LoadedRun, loadPatch } from "../run-dir/run-lookup.js";
import { agentStderrTail } from "./agent-stderr.js";
import { ownFilesPrefix, runRequest } from "./run-files.js";
import { EXIT_CODES } from "../vocabulary/terminal-reasons.js";
import { writeAttempts } from "./attempts-story.js";
import { candidatesTableCells } from "./candidates-table.js";
import { writeEnvironment } from "./environment-story.js";
import { type RunFileLinks, proseHtml } from "./report-prose.js";
import { storyView } from "./html/story-view.js";
import { ms, usageText } from "./format.js";
import { diffView } from "./html/diff-view.js";
import { type Html, html } from "./html/escape.js";
import { readRunEvents } from "./html/run-events.js";
import { STYLES } from "./html/styles.js";
import { timelineView } from "./html/timeline.js";
import { verificationView } from "./html/verification-view.js";
import { summaryView } from "./html/summary-view.js";
import { networkHeadline } from "./network-story.js";
import { plainText } from "../lib/plain-text.js";

/** Nothing is loaded from anywhere: no script, no fetch, no font; styles inline, images only as data: URLs. */
export const REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

function verdictView(run: LoadedRun, links: RunFileLinks): Html {
  const r = run.result;
  const network = networkHeadline(r);
  return html`<section class="verdict ${r.terminalReason}">
<div><span class="reason">${r.terminalReason}</span> <span class="exit">exit ${EXIT_CODES[r.terminalReason]}${r.detail ? html` · ${r.detail}` : null}</span></div>
<div class="summary">${proseHtml(r.summary, links)}</div>
${r.hint ? html`<div class="muted">hint: ${proseHtml(r.hint, links)}</div>` : null}
${network ? html`<div class="bad-text">network: ${proseHtml(network, links)}</div>` : null}
</section>`;
}

/** A candidates run's candidates side by side, the winner's row marked, then why it won and which agree. */
function candidatesView(run: LoadedRun): Html | null {
  if (!run.result.candidates) return null;
  const { header, rows, winners, notes } = candidatesTableCells(run.result);
  return html`<h2>Candidates</h2>
<div class="scroll"><table class="candidates"><thead><tr>${header.map((title) => html`<th>${title}</th>`)}</tr></thead><tbody>${rows.map(
    (cells, i) => html`<tr${winners[i] ? html` class="winner"` : null}>${cells.map((cell) => html`<td>${cell}</td>`)}</tr>`,
  )}</tbody></table></div>
<ul class="notes">${notes.map((note) => html`<li>${note}</li>`)}</ul>`;
}

function factsView(run: LoadedRun): Html {
  const r = run.result;
  const b = r.backend;
  const files = r.patch?.files ?? [];
  const adds = files.reduce((sum, f) => sum + f.additions, 0);
  const dels = files.reduce((sum, f) => sum + f.deletions, 0);
  return html`<dl class="facts">
<dt>source</dt><dd><code>${r.repo.path}</code> at <code>${r.repo.baseCommit}</code>; ${
    r.sourceInvariant.matched
      ? "unchanged during the run"
      : html`<b class="bad-text">CHANGED during the run: ${r.sourceInvariant.changed.slice(0, 20).join(", ")}</b>`
  }</dd>
<dt>agent</dt><dd>${b.name}${b.version ? ` ${b.version}` : ""}${b.executable ? html` (<code>${b.executable}</code>)` : null}; exit ${b.exitCode ?? (b.signal ? `signal ${b.signal}` : "none")}${r.agent.usage ? `; ${usageText(r.agent.usage)}` : ""}</dd>
<dt>patch</dt><dd>${r.patch ? (files.length === 0 ? "no changes" : html`${files.length} file(s), <span class="add">+${adds}</span> <span class="del">−${dels}</span>, sha256 <code>${r.patch.sha256}</code>`) : "not extracted"}</dd>
<dt>time</dt><dd>${ms(r.timings.durationMs)} to the verdict, started ${r.timings.startedAt}</dd>
<dt>run directory</dt><dd><code>${run.dir}</code></dd>
</dl>`;
}

/** What the agent said last (a claim, not evidence), and the end of its stderr when that matters (agentStderrTail). */
function agentView(run: LoadedRun): Html | null {
  const r = run.result;
  const tail = agentStderrTail(run);
  const stderr = tail ? tail.lines.join("\n") : "";
  if (!r.agent.finalMessage && !r.agent.claim && !stderr) return null;
  return html`<h2>The agent</h2>
${r.agent.finalMessage ? html`<p class="muted">Its last word (a claim, not evidence):</p><pre class="task">${plainText(r.agent.finalMessage).slice(0, 2000)}</pre>` : null}
${
  r.agent.claim &&
  r.verification.ran &&
  r.agent.claim.tests !== "not_run" &&
  (r.agent.claim.tests === "pass") !== (r.verification.passed === true)
    ? html`<p class="bad-text">It claimed the tests ${r.agent.claim.tests === "pass" ? "pass" : "fail"}: that does NOT match handoff's own verification.</p>`
    : null
}
${stderr ? html`<p class="muted">The end of its stderr:</p><pre class="log">${stderr}</pre>` : null}`;
}

function findingsView(run: LoadedRun, links: RunFileLinks): Html {
  const { violations, warnings } = run.result.policy;
  const uncontained = run.result.containment?.uncontained ?? [];
  if (violations.length + warnings.length + uncontained.length === 0) return html`<p class="muted">None.</p>`;
  const finding = (kind: string, f: { rule: string; path: string; message: string }) =>
    html`<li class="${kind}"><span class="rule">${kind === "violation" ? "REJECTED " : ""}${f.rule}</span>${f.path ? html` <code>${f.path}</code>` : null}: ${proseHtml(f.message, links)}</li>`;
  return html`<ul class="findings">${violations.map((v) => finding("violation", v))}${warnings.map((w) => finding("warning", w))}${uncontained.map(
    (open) => html`<li class="warning"><span class="rule">no sandbox</span>: ${open}</li>`,
  )}</ul>`;
}

/**
 * `handoff show --format html`: the run as one self-contained page (inline styles, no script, nothing fetched, a CSP
 * that forbids loading anything). Every string from the run reaches it only through the `html` template's escape.
 */
export function renderHtml(run: LoadedRun): string {
  const r = run.result;
  const folder = ownFilesPrefix(run) ?? "";
  const links: RunFileLinks = { ownFilesPrefix: folder };
  const task = runRequest(run)?.task ?? null;
  const page = html`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>handoff run ${r.runId}: ${r.terminalReason}</title>
<style>${STYLES}</style>
</head>
<body>
<h1>handoff run <code>${r.runId}</code></h1>
${verdictView(run, links)}
<h2>Task</h2>
${task !== null ? html`<pre class="task">${task}</pre>` : html`<p class="muted">Not recorded (no request.json was read).</p>`}
${factsView(run)}
${candidatesView(run)}
<h2>Warnings and violations</h2>
${findingsView(run, links)}
<h2 id="verification">Verification (run by handoff, not the agent)</h2>
${verificationView(run)}
${summaryView(r)}
${storyView((w) => writeAttempts(run, w), links)}
${agentView(run)}
${storyView((w) => writeEnvironment(r, w), links)}
<h2>Changes</h2>
${diffView(loadPatch(run), r, run.dir)}
<h2>Timeline${folder ? html` (candidate <code>${folder}</code>)` : null}</h2>
${timelineView(readRunEvents(run, folder), folder)}
<footer>Written by <code>handoff show --format html</code> from <code>${run.dir}</code>: ${proseHtml("result.json, events.jsonl, test.log and changes.patch", links)} hold everything in full. Their links are relative to the run directory: they open when this page is saved there.</footer>
</body>
</html>
`;
  return page.toString();
}
