import type { OptionRow } from "./setting.js";

/** A command's options as `node:util` `parseArgs` takes them. */
export type OptionTable = Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }>;

/** One row as `parseArgs` takes it, typed so that the parsed values are: a switch a boolean, a list string[]. */
type ParseArgsOption<R extends OptionRow> = R["kind"] extends "switch"
  ? { type: "boolean"; short?: string }
  : R["kind"] extends "list"
    ? { type: "string"; multiple: true; short?: string }
    : { type: "string"; short?: string };

/** The `parseArgs` options of some rows, keyed by flag. */
export type OptionTableOf<R extends OptionRow> = { [Row in R as Row["flag"]]: ParseArgsOption<Row> };

/** `parseArgs` options for rows: a switch is a boolean, a list a repeatable string. */
export function optionTable<R extends OptionRow>(rows: readonly R[]): OptionTableOf<R> {
  const table: OptionTable = Object.fromEntries(
    rows.map((row) => [
      row.flag,
      {
        type: row.kind === "switch" ? "boolean" : "string",
        ...(row.short === undefined ? {} : { short: row.short }),
        ...(row.kind === "list" ? { multiple: true } : {}),
      },
    ]),
  );
  return table as OptionTableOf<R>;
}
