import type { RunResult } from "../../verdict/result.js";
import { runnerSummaryLines } from "../summary-lines.js";
import { codeSpan } from "../../lib/markdown-fence.js";
import { proseHtml } from "../report-prose.js";
import { type Html, html } from "./escape.js";

/** The test runners' summaries of each verify command, and the findings they gave, as the text report words them. */
export function summaryView(r: RunResult): Html | null {
  const summaries = r.verification.summaries;
  if (!summaries) return null;
  const lines = runnerSummaryLines(summaries, codeSpan);
  return html`<ul class="summaries">${lines.map((line) => html`<li class="${line.startsWith("SUMMARY FINDING") ? "bad-text" : "muted"}">${proseHtml(line, { ownFilesPrefix: "" })}</li>`)}</ul>`;
}
