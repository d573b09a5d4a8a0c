import type { OptionKind } from "./setting.js";
import { SETTINGS, type Setting } from "./settings.js";

type ActionRow = Extract<Setting, { action: unknown }>;

/** An Action input that is a `handoff run` option: the input, its flag, and how its text becomes arguments. */
interface RunOptionInput {
  readonly input: ActionRow["flag"];
  readonly flag: `--${ActionRow["flag"]}`;
  readonly kind: OptionKind;
}

/** The inputs that are `handoff run` options (rows with `action`), in the table's order; the CLI judges their values. */
export const RUN_OPTION_INPUTS: readonly RunOptionInput[] = SETTINGS.filter((row): row is ActionRow => "action" in row).map((row) => ({
  input: row.flag,
  flag: `--${row.flag}` as const,
  kind: row.action === "one" ? "value" : row.kind,
}));
