import { z } from "zod";
import { UsageError } from "../lib/errors.js";
import { getPath, setPath } from "./dotted-path.js";
import type { HandoffConfig } from "./file-schema.js";
import { fromFileUnit } from "./option-values.js";
import { fileValue } from "./resolve-setting.js";
import type { DelegateRule } from "./setting.js";
import { SETTINGS, type Setting } from "./settings.js";

type DelegateRow = Extract<Setting, { delegate: DelegateRule }>;

/** The settings a `handoff mcp` tool call may set (rows with `delegate`), in the table's order. */
const DELEGATE_ROWS: readonly DelegateRow[] = SETTINGS.filter((row): row is DelegateRow => "delegate" in row);

/** The key a tool call writes a setting under: its `.handoff.json` key where it has one (`timeout`), else its field (`candidates`). */
function keyOf(row: DelegateRow): string {
  return "file" in row ? row.file.key : row.option;
}

const RULE_WORDS: Readonly<Record<DelegateRule, string>> = {
  adds: "added to what the user's configuration already says",
  chooses: "unless the user's `handoff mcp` command line fixed it",
  first: "only where the user's configuration sets none",
};

/** A setting's value in a tool call, as the table describes it; a repeated `-b` is one backend here. */
function schemaOf(row: DelegateRow): z.ZodType {
  const unit = "unit" in row ? row.unit : "text";
  const base =
    row.kind === "switch"
      ? z.boolean()
      : row.kind === "list" && row.delegate !== "chooses"
        ? z.array(z.string().min(1)).max(100)
        : unit === "count"
          ? z.number().int().positive()
          : unit === "seconds"
            ? z.number().positive()
            : z.string().min(1);
  const help = (row.help.run ?? []).join(" ");
  return base.optional().describe(`${help} (${RULE_WORDS[row.delegate]})`);
}

/** The settings part of the `delegate` tool's input: one optional key per delegate row. */
export const DELEGATE_SETTINGS_SHAPE: Readonly<Record<string, z.ZodType>> = Object.fromEntries(
  DELEGATE_ROWS.map((row) => [keyOf(row), schemaOf(row)]),
);

/** What the server's user fixed: its command line's `RunOptions` fields (optionsFromFlags), and the repository's `.handoff.json`. */
export interface UserSettings {
  readonly commandLine: Readonly<Record<string, unknown>>;
  readonly config: HandoffConfig;
}

/**
 * The `RunOptions` fields a tool call sets, each within its row's rule: never wider than the user's own settings.
 * A call that asks for more is a usage error naming the setting and who fixed it.
 */
export function delegateOptions(call: Readonly<Record<string, unknown>>, user: UserSettings): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const row of DELEGATE_ROWS) {
    const key = keyOf(row);
    const given = call[key];
    if (given === undefined) continue;
    const value = typeof given === "number" ? fromFileUnit("unit" in row ? row.unit : undefined, given) : given;
    const fromCommandLine = getPath(user.commandLine, row.option);
    const configured = fromCommandLine ?? fileValue(row, user.config);
    switch (row.delegate) {
      case "adds":
        if (row.kind === "switch") {
          if (value === true) setPath(options, row.option, true);
        } else {
          setPath(options, row.option, [...new Set([...((configured as string[] | undefined) ?? []), ...(value as string[])])]);
        }
        break;
      case "chooses": {
        // -b on the command line is a list; a call names one backend.
        if (fromCommandLine !== undefined && JSON.stringify(fromCommandLine) !== JSON.stringify(row.kind === "list" ? [value] : value))
          throw new UsageError(
            "fixed_by_user",
            `'${key}' is fixed by the handoff mcp command line (--${row.flag}); a call cannot change it`,
          );
        setPath(options, row.option, value);
        break;
      }
      case "first":
        if (configured !== undefined)
          throw new UsageError(
            "fixed_by_user",
            `'${key}' is already set by the user's ${fromCommandLine !== undefined ? `handoff mcp command line (--${row.flag})` : ".handoff.json"}; a call cannot widen it`,
          );
        setPath(options, row.option, value);
        break;
    }
  }
  return options;
}
