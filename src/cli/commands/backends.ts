import { UsageError } from "../../lib/errors.js";
import { foundInText, listBackends } from "../backends-report.js";
import { parseOptions } from "../parse-options.js";

export const BACKENDS_OPTIONS = { json: { type: "boolean" }, backend: { type: "string", short: "b" }, bin: { type: "string" } } as const;

export async function command(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseOptions("backends", args, BACKENDS_OPTIONS);
  if (positionals.length > 0) throw new UsageError("bad_arguments", "usage: handoff backends [-b NAME [--bin PATH]] [--json]");
  const report = await listBackends(process.env.PATH, { only: values.backend, bin: values.bin });
  if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else {
    for (const entry of report) {
      const where = entry.foundIn ? ` (${foundInText(entry.foundIn)})` : "";
      process.stdout.write(
        `${entry.name.padEnd(9)} ${entry.usable ? "usable  " : "unusable"} ${entry.version ?? "-"}  ${entry.executable ?? "not found"}${where}${entry.hint ? `\n          ${entry.hint}` : ""}\n`,
      );
    }
  }
  return 0;
}
