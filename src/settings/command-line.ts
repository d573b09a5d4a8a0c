import { fill } from "../lib/fill.js";
import { seconds, wholeNumber } from "./option-values.js";
import type { OptionRow, SettingCommand, Unit } from "./setting.js";
import { SETTINGS, type Setting } from "./settings.js";
import { setPath } from "./dotted-path.js";

/** The rows a command takes, as types: those with help for it. */
export type RowsOf<C extends SettingCommand> = Extract<Setting, { readonly help: { readonly [K in C]: readonly string[] } }>;

/** What `parseArgs` gives back for an option table: a flag's text, texts (repeated) or switch. */
export type FlagValues = Readonly<Record<string, string | boolean | (string | boolean)[] | undefined>>;

/** The settings a command takes: the rows with help for it, in the table's order. */
export function settingsOf<C extends SettingCommand>(command: C): readonly RowsOf<C>[] {
  return SETTINGS.filter((row): row is RowsOf<C> => row.help[command as keyof typeof row.help] !== undefined);
}

/** The width of the help: every line of `handoff --help` and `handoff <command> --help` fits in it. */
export const HELP_WIDTH = 100;
/** The column an option's help text starts at, and its further lines. */
const HELP_TEXT_COLUMN = 26;

/** A command's option lines in its help: `  -C, --repo DIR          the source…`, the text from column 26, filled to HELP_WIDTH. */
export function helpLines(command: SettingCommand, rows: readonly OptionRow[]): string {
  const entries: [string, string][] = [];
  for (const row of rows) {
    const help = row.help[command];
    if (help === undefined || help.length === 0) continue;
    entries.push([
      `${row.short === undefined ? "    " : `-${row.short}, `}--${row.flag}${row.meta === undefined ? "" : ` ${row.meta}`}`,
      help.join(" "),
    ]);
  }
  return labelledLines(entries);
}

/** Labelled help lines (`  list    one line per…`): each label indented 2, its text from column 26 (or after a long label), filled to HELP_WIDTH. */
export function labelledLines(entries: readonly (readonly [label: string, text: string])[]): string {
  const lines: string[] = [];
  for (const [label, text] of entries) {
    const head = `  ${label}`;
    const padded = head.length < HELP_TEXT_COLUMN ? head.padEnd(HELP_TEXT_COLUMN) : `${head}  `;
    const [first, ...more] = fill(text, HELP_WIDTH - padded.length, HELP_WIDTH - HELP_TEXT_COLUMN);
    lines.push(`${padded}${first}`);
    for (const line of more) lines.push(`${" ".repeat(HELP_TEXT_COLUMN)}${line}`);
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
