import { assertNever } from "../lib/assert-never.js";
import type { LoadedRun } from "../run-dir/run-lookup.js";
import { renderVerdictJunit } from "../verify/junit-verdict.js";
import { firstFailureOutput } from "./command-output.js";
import { renderMarkdownReport } from "./markdown-report.js";
import { renderTextReport } from "./text-report.js";
import { renderHtml } from "./html-report.js";

import type { ReportFormat } from "./report-formats.js";

export type { ReportFormat } from "./report-formats.js";

/** `handoff show`: a run in one format (text for a terminal, markdown for a PR, result.json as it is, JUnit for CI, one HTML page). */
export function renderReport(run: LoadedRun, format: ReportFormat): string {
  switch (format) {
    case "json":
      return `${JSON.stringify(run.result, null, 2)}\n`;
    case "text":
      return renderTextReport(run);
    case "markdown":
      return renderMarkdownReport(run);
    case "junit": {
      const failure = firstFailureOutput(run);
      return renderVerdictJunit(run.result, failure?.kind === "lines" ? failure : null);
    }
    case "html":
      return renderHtml(run);
    default:
      return assertNever(format);
  }
}
