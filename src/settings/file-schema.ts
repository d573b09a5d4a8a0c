import { z } from "zod";
import { RUN_ID_PATTERN } from "../run-dir/run-dir.js";
import { setPath } from "./dotted-path.js";
import { fromFileUnit } from "./option-values.js";
import { type FileValue, MAX_SIZE_MIB } from "./setting.js";
import { SETTINGS, type Setting } from "./settings.js";

/** Each way a value is written in `.handoff.json`, as a schema. Values with a range of their own are checked with the option. */
const FILE_VALUES = {
  text: z.string().min(1),
  texts: z.array(z.string().min(1)),
  boolean: z.boolean(),
  number: z.number(),
  positive: z.number().positive(),
  count: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  mebibytes: z.number().int().positive().max(MAX_SIZE_MIB),
} as const satisfies Record<FileValue, z.ZodType>;

type FileValueOf<V extends FileValue> = z.infer<(typeof FILE_VALUES)[V]>;
type FileRow = Extract<Setting, { file: object }>;
type ConfigRow = Exclude<FileRow, { file: { lineOnly: true } }>;
type LineOnlyRow = Extract<FileRow, { file: { lineOnly: true } }>;

/** `.handoff.json`: one optional key per setting the file may set (SETTINGS rows with `file`). */
export type HandoffConfig = { readonly [R in ConfigRow as R["file"]["key"]]?: FileValueOf<R["file"]["schema"]> };

/** One line of a batch file: the keys of `.handoff.json`, the keys only a line has, the task and its id. */
export type BatchTask = HandoffConfig & { readonly [R in LineOnlyRow as R["file"]["key"]]?: FileValueOf<R["file"]["schema"]> } & {
  readonly task: string;
  readonly id?: string;
};

function fileShape(rows: readonly FileRow[]): Record<string, z.ZodOptional<z.ZodType>> {
  return Object.fromEntries(rows.map((row) => [row.file.key, FILE_VALUES[row.file.schema].optional().describe(described(row))]));
}

/** A key's description for an editor (the JSON Schema): its help line, in the file's unit. */
function described(row: FileRow): string {
  const unit = "unit" in row ? ({ seconds: " (seconds)", mebibytes: " (MiB)", count: "", text: "" } as const)[row.unit] : "";
  return `${row.help.run.join(" ")}${unit}; the command line's --${row.flag}`;
}

const fileRows = SETTINGS.filter((row): row is FileRow => "file" in row);

/**
 * `.handoff.json`'s schema: keys mirror the run options; an unknown key is an error, never ignored. `$schema` names
 * the file's JSON Schema for an editor (schemas/handoff-config.schema.json) and means nothing to a run.
 */
export const HandoffConfig: z.ZodType<HandoffConfig> = z.strictObject({
  $schema: z.string().optional().describe("the JSON Schema an editor checks this file against"),
  ...fileShape(fileRows.filter((row) => !("lineOnly" in row.file))),
}) as unknown as z.ZodType<HandoffConfig>;

/**
 * A batch line's schema (JSON Lines): the keys of `.handoff.json`, plus `task` (the task text), `repo` (default: the
 * current directory; relative to it), `id` (default: `task-<line>`; names the task's run directory) and `agentCmd`
 * (the `command` backend's shell command; it implies `backend: "command"`). Unknown keys are an error: a misspelt
 * `verfy` must not run a task unverified.
 */
export const BatchTask: z.ZodType<BatchTask> = z.strictObject({
  ...fileShape(fileRows),
  task: z.string().min(1).describe("the task text"),
  id: z
    .string()
    .regex(RUN_ID_PATTERN, "an id is one path segment of letters, digits, '.', '_' or '-' (at most 128)")
    .optional()
    .describe("names the task's run directory (default: task-<line>): one path segment of letters, digits, '.', '_' or '-'"),
}) as unknown as z.ZodType<BatchTask>;

/**
 * The `RunOptions` fields a batch line sets: each key it has, in the library's unit (seconds → milliseconds,
 * MiB → bytes), at its setting's field; as the command line would give them.
 */
export function optionsFromLine(line: BatchTask): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const row of fileRows) {
    const value = (line as Record<string, unknown>)[row.file.key];
    if (value === undefined || row.option === null) continue;
    const unit = "unit" in row ? row.unit : undefined;
    setPath(options, row.option, typeof value === "number" ? fromFileUnit(unit, value) : value);
  }
  return options;
}
