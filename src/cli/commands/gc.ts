import { escapeControls } from "../../vocabulary/display.js";
import { UsageError } from "../../lib/errors.js";
import { type KeptSessionEntry, collectKeptSessions } from "../../repair/session-gc.js";
import { defaultRunsDir } from "../../run-dir/default-places.js";
import { parseOptions } from "../parse-options.js";

export const GC_OPTIONS = { "runs-dir": { type: "string" }, all: { type: "boolean" }, json: { type: "boolean" } } as const;

/** `handoff gc`: removes the expired kept sessions now (every kept one with --all), and says what it removed and kept. */
export function command(args: readonly string[]): number {
  const { values, positionals } = parseOptions("gc", args, GC_OPTIONS);
  if (positionals.length > 0) throw new UsageError("bad_arguments", "usage: handoff gc [--runs-dir DIR] [--all] [--json]");
  const collection = collectKeptSessions(values["runs-dir"] ?? defaultRunsDir(), { all: values.all === true });
  if (values.json) {
    process.stdout.write(`${JSON.stringify(collection, null, 2)}\n`);
    return 0;
  }
  const line = (what: string, entry: KeptSessionEntry, why = "") =>
    process.stdout.write(`${what} ${escapeControls(entry.runId)}  ${entry.keptUntil ?? "-"}  ${escapeControls(entry.home)}${why}\n`);
  for (const entry of collection.removed) line("removed  ", entry);
  for (const entry of collection.kept) line("kept     ", entry);
  for (const entry of collection.leftAlone) line("left     ", entry, `  (${escapeControls(entry.why)})`);
  if (collection.removed.length + collection.kept.length + collection.leftAlone.length === 0) process.stdout.write("no kept sessions\n");
  return 0;
}
