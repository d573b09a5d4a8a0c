import { seconds, wholeNumber } from "./option-values.js";
import type { OptionRow, SettingCommand, Unit } from "./setting.js";
import { SETTINGS, type Setting } from "./settings.js";
import { setPath } from "./dotted-path.js";

/** A command's options as `node:util` `parseArgs` takes them. */
export type OptionTable = Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }>;

/** The rows a command takes, as types: those with help for it. */
export type RowsOf<C extends SettingCommand> = Extract<Setting, { readonly help: { readonly [K in C]: readonly string[] } }>;

/** One row as `parseArgs` takes it, typed so that the parsed values are: a switch a boolean, a list string[]. */
type ParseArgsOption<R extends OptionRow> = R["kind"] extends "switch"
  ? { type: "boolean"; short?: string }
  : R["kind"] extends "list"
    ? { type: "string"; multiple: true; short?: string }
    : { type: "string"; short?: string };

/** The `parseArgs` options of some rows, keyed by flag. */
export type OptionTableOf<R extends OptionRow> = { [Row in R as Row["flag"]]: ParseArgsOption<Row> };

/** What `parseArgs` gives back for an option table: a flag's text, texts (repeated) or switch. */
export type FlagValues = Readonly<Record<string, string | boolean | (string | boolean)[] | undefined>>;

/** The settings a command takes: the rows with help for it, in the table's order. */
export function settingsOf<C extends SettingCommand>(command: C): readonly RowsOf<C>[] {
  return SETTINGS.filter((row): row is RowsOf<C> => row.help[command as keyof typeof row.help] !== undefined);
}

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

/** A command's option lines in its help: `  -C, --repo DIR          the source…`, the text from column 26. */
export function helpLines(command: SettingCommand, rows: readonly OptionRow[]): string {
  const lines: string[] = [];
  for (const row of rows) {
    const [first, ...more] = row.help[command] ?? [];
    if (first === undefined) continue;
    const flag = `${row.short === undefined ? "    " : `-${row.short}, `}--${row.flag}${row.meta === undefined ? "" : ` ${row.meta}`}`;
    const head = `  ${flag}`;
    lines.push(`${head.length <= 25 ? head.padEnd(26) : `${head}  `}${first}`);
    for (const line of more) lines.push(`${" ".repeat(26)}${line}`);
  }
  return lines.map((line) => `${line}\n`).join("");
}

const MIB = 1024 * 1024;

/** One value from the command line in the library's unit; a bad one is a usage error that names the flag. */
export function commandLineValue(unit: Unit | undefined, flag: string, text: string): string | number {
  const name = `--${flag}`;
  switch (unit) {
    case undefined:
    case "text":
      return text;
    case "seconds":
      return seconds(name, text)!;
    case "count":
      return wholeNumber(name, text)!;
    case "mebibytes":
      return wholeNumber(name, text)! * MIB;
  }
}

/**
 * The `RunOptions` fields a command line sets: each given flag of the command's settings, in the library's unit, at
 * its field. Flags the command reads itself (`option: null`) are left to it.
 */
export function optionsFromFlags(command: SettingCommand, values: FlagValues): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const row of settingsOf(command) as readonly Setting[]) {
    const given = values[row.flag];
    if (given === undefined || row.option === null) continue;
    const unit: Unit | undefined = "unit" in row ? row.unit : undefined;
    const value =
      typeof given === "boolean"
        ? given
        : Array.isArray(given)
          ? given.map((text) => commandLineValue(unit, row.flag, String(text)))
          : commandLineValue(unit, row.flag, given);
    setPath(options, row.option, value);
  }
  return options;
}
