/** The commands whose options come from the settings table (each row says which of them take it, by its help). */
export type SettingCommand = "run" | "resume" | "batch" | "worker";

/** How an option is written: a value once, a repeatable value (a list), or a switch that takes none. */
export type OptionKind = "value" | "list" | "switch";

/**
 * What a value means, the one way the command line, `.handoff.json` and a batch line read it: text as given, seconds
 * (milliseconds in the library), a positive whole number, or mebibytes (bytes in the library).
 */
export type Unit = "text" | "seconds" | "count" | "mebibytes";

/** The largest size a file-set limit takes, in MiB: handoff holds a changed file and the patch in memory. */
export const MAX_SIZE_MIB = 1024;

/** The checks a setting can have (src/settings/checks.ts), by name. */
export type CheckName =
  | "argument"
  | "arguments"
  | "globs"
  | "envNames"
  | "runId"
  | "junitPaths"
  | "configPaths"
  | "testEdits"
  | "workspaceMode"
  | "sandbox"
  | "allowNet"
  | "egressBlocked"
  | "timeout"
  | "attempts"
  | "processes"
  | "memory"
  | "count"
  | "size";

/** How a `handoff mcp` tool call may set a setting (SettingRow.delegate). */
export type DelegateRule = "adds" | "chooses" | "first";

/** How a value is written in `.handoff.json` and a batch line. */
export type FileValue = "text" | "texts" | "boolean" | "number" | "positive" | "count" | "mebibytes";

/** One command-line option: its flag, how it is written, and its help line for each command that takes it. */
export interface OptionRow {
  /** The long flag without its dashes: `verify-timeout`. */
  readonly flag: string;
  readonly short?: string;
  readonly kind: OptionKind;
  /** The value's name in the help (`SEC`, `DIR`); none for a switch. */
  readonly meta?: string;
  /** The help text, per command that takes the option: one string a line, the first beside the flag. */
  readonly help: Partial<Record<SettingCommand, readonly string[]>>;
}

/**
 * One setting: everything about it that is not its behaviour. The CLI's option tables and help lines, `.handoff.json`'s
 * and a batch line's schemas, resume's overrides and what it inherits, the request.json record and the Action's inputs
 * are all derived from these rows (src/settings/*.ts).
 */
export interface SettingRow extends OptionRow {
  /**
   * Its `RunOptions` field, dotted when nested (`limits.maxFileBytes`): the library's word for it. null for an
   * option the command reads itself (`--json`, `--task-file`).
   */
  readonly option: string | null;
  /** What the value means (default: text). */
  readonly unit?: Unit;
  /** Its own check (src/settings/checks.ts), which gives the value the run uses; cross-setting rules are resolveOptions'. */
  readonly check?: CheckName;
  /** What a message calls it (default: its flag), and whether it says that the value came from `.handoff.json`. */
  readonly words?: string;
  readonly namesFile?: true;
  /** Its value when neither the caller nor `.handoff.json` gives one, in the library's unit; a function when it depends on the machine. */
  readonly default?: string | number | boolean | readonly [] | (() => string | number);
  /**
   * `.handoff.json`'s key for it and how its value is written there, in its unit (src/settings/file-schema.ts). A batch
   * line takes every key of the file; `lineOnly`: a batch line's alone (`repo`, `agentCmd`).
   */
  readonly file?: { readonly key: string; readonly schema: FileValue; readonly lineOnly?: true };
  /**
   * The Action has an input of the flag's name for it (action.yml declares it; a test checks), a list of lines for a
   * list; `one`: a single value even where the flag repeats (one backend per workflow step).
   */
  readonly action?: true | "one";
  /**
   * What a calling agent may do with it through `handoff mcp`'s `delegate` tool, never more than the user allowed
   * (docs/mcp.md): `adds` to the user's list (a switch: only turns it on), `chooses` it unless the server's command line
   * fixed it, or sets it `first` where neither that command line nor `.handoff.json` has. Absent: the user's alone.
   */
  readonly delegate?: DelegateRule;
  /**
   * Where request.json records the resolved value (dotted), where `ResolvedOptions` holds it when that is not the
   * option's own field, and whether `handoff resume` inherits it from there.
   */
  readonly request?: { readonly path: string; readonly resolved?: string; readonly inherit: boolean };
}
