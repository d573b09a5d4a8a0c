import { UsageError } from "../../lib/errors.js";
import { assertNever } from "../../lib/assert-never.js";
import { renderBatchJunit } from "../../many/junit.js";
import type { NamedBatch } from "../../run-dir/batch-lookup.js";
import { renderReport } from "../../review/report.js";
import { REPORT_FORMATS, REPORT_FORMATS_IN_WORDS, type ReportFormat, isReportFormat } from "../../review/report-formats.js";
import { batchIsNotARun, renderBatchListing } from "../batch-listing.js";
import { REPO_OPTION } from "../repo-option.js";
import { parseOptions } from "../parse-options.js";
import { namedOrLatestRun } from "../run-ref.js";

export const SHOW_OPTIONS = {
  ...REPO_OPTION,
  format: { type: "string" },
  "runs-dir": { type: "string" },
  json: { type: "boolean" },
} as const;

export async function command(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseOptions("show", args, SHOW_OPTIONS);
  if (positionals.length > 1)
    throw new UsageError("bad_arguments", `usage: handoff show [<run-id|run-dir>] [-C DIR] [--format ${REPORT_FORMATS.join("|")}]`);
  const format = values.json ? "json" : (values.format ?? REPORT_FORMATS[0]);
  if (!isReportFormat(format)) throw new UsageError("bad_format", `--format must be ${REPORT_FORMATS_IN_WORDS}, not '${format}'`);
  const named = await namedOrLatestRun(positionals[0], values["runs-dir"], values.repo ?? process.cwd());
  switch (named.kind) {
    case "run":
      process.stdout.write(renderReport(named.run, format));
      return 0;
    case "batch":
      process.stdout.write(batchReport(named.batch, format));
      return 0;
    default:
      return assertNever(named);
  }
}

/** A batch shown: its runs listed (text), batch.json (json), its JUnit file (junit); a run's report formats are a run's. */
function batchReport(batch: NamedBatch, format: ReportFormat): string {
  switch (format) {
    case "text":
      return renderBatchListing(batch);
    case "json":
    case "junit":
      if (batch.record === null) throw batchIsNotARun(batch, "show");
      return format === "json" ? `${JSON.stringify(batch.record, null, 2)}\n` : renderBatchJunit(batch.record);
    case "markdown":
    case "html":
      throw batchIsNotARun(batch, "show");
    default:
      return assertNever(format);
  }
}
