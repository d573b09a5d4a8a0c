import { UsageError } from "../../lib/errors.js";
import { renderReport } from "../../review/report.js";
import { REPORT_FORMATS, REPORT_FORMATS_IN_WORDS, isReportFormat } from "../../review/report-formats.js";
import { parseOptions } from "../parse-options.js";
import { namedOrLatestRun } from "../run-ref.js";

export const SHOW_OPTIONS = { format: { type: "string" }, "runs-dir": { type: "string" }, json: { type: "boolean" } } as const;

export async function command(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseOptions("show", args, SHOW_OPTIONS);
  if (positionals.length > 1)
    throw new UsageError("bad_arguments", `usage: handoff show [<run-id|run-dir>] [--format ${REPORT_FORMATS.join("|")}]`);
  const format = values.json ? "json" : (values.format ?? REPORT_FORMATS[0]);
  if (!isReportFormat(format)) throw new UsageError("bad_format", `--format must be ${REPORT_FORMATS_IN_WORDS}, not '${format}'`);
  process.stdout.write(renderReport(await namedOrLatestRun(positionals[0], values["runs-dir"], process.cwd()), format));
  return 0;
}
