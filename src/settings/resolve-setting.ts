import { CHECKS, type SettingName } from "./checks.js";
import { getPath } from "./dotted-path.js";
import { fromFileUnit } from "./option-values.js";
import type { HandoffConfig } from "./file-schema.js";
import { SETTINGS, type Setting } from "./settings.js";

type SettingOf<O> = Extract<Setting, { option: O }>;
type Named = Exclude<Setting, { option: null }>;
type Checked<R> = R extends { check: infer C extends keyof typeof CHECKS } ? ReturnType<(typeof CHECKS)[C]> : never;
type Given<R> = R extends { kind: "switch" } ? boolean : R extends { kind: "list" } ? readonly string[] : string;

/** A setting's value for one run: its check's result, or the value as given; undefined only for a row with no default. */
export type SettingValue<O extends Named["option"]> =
  | (SettingOf<O> extends { check: string } ? Checked<SettingOf<O>> : Given<SettingOf<O>>)
  | (SettingOf<O> extends { default: unknown } ? never : undefined);

const BY_OPTION = new Map<string, Named>(SETTINGS.filter((row): row is Named => row.option !== null).map((row) => [row.option, row]));

/**
 * The one precedence ladder of a setting: what the caller gave (the command line, a batch line, the library), else
 * `.handoff.json` (in the library's unit), else the row's default; then the row's own check, whose message names it
 * by its field (the CLI shows its flag) or the row's words, and says `(from .handoff.json)` where the row asks.
 */
export function settle<O extends Named["option"]>(option: O, given: object, config: HandoffConfig): SettingValue<O> {
  const row = BY_OPTION.get(option)!;
  const fromCaller = getPath(given, option);
  const fromFile = fileValue(row, config);
  const value = fromCaller ?? fromFile ?? defaultOf(row);
  if (value === undefined || !("check" in row)) return value as SettingValue<O>;
  const fromFileNamed = fromCaller === undefined && fromFile !== undefined && "namesFile" in row;
  const name: SettingName = (names) => `${"words" in row ? row.words : names.name(option)}${fromFileNamed ? " (from .handoff.json)" : ""}`;
  return (CHECKS[row.check] as (value: unknown, name: SettingName) => unknown)(value, name) as SettingValue<O>;
}

/** A setting's value in `.handoff.json`, in the library's unit; undefined where the file has none. */
export function fileValue(row: Named, config: HandoffConfig): unknown {
  if (!("file" in row) || "lineOnly" in row.file) return undefined;
  const value = (config as Record<string, unknown>)[row.file.key];
  if (typeof value !== "number") return value;
  return fromFileUnit("unit" in row ? row.unit : undefined, value);
}

function defaultOf(row: Named): unknown {
  if (!("default" in row)) return undefined;
  return typeof row.default === "function" ? row.default() : row.default;
}
