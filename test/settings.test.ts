import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { RequestJson } from "../src/run-dir/artifacts/request.js";
import { RUN_OPTION_INPUTS } from "../src/settings/action-inputs.js";
import { helpLines, optionsFromFlags, settingsOf } from "../src/settings/command-line.js";
import { optionTable } from "../src/settings/option-table.js";
import { BatchTask, HandoffConfig, optionsFromLine } from "../src/settings/file-schema.js";
import { inheritedSettings, recordedSettings } from "../src/settings/request-fields.js";
import { settle } from "../src/settings/resolve-setting.js";
import { FLAG_NAMES } from "../src/settings/setting-names.js";
import type { UsageError } from "../src/lib/errors.js";
import { SETTINGS } from "../src/settings/settings.js";
import { getPath } from "../src/settings/dotted-path.js";
import { COMMAND_HELP, HELP } from "../src/cli/help.js";
import { backendNamesText } from "../backends/index.js";
import type { Command } from "../src/cli/command-names.js";
import { COMMAND_OPTIONS } from "./helpers/option-tables.js";

/** What the CLI, `.handoff.json`, batch lines and the Action accepted before the settings table (recorded from that code). */
const before = JSON.parse(readFileSync(new URL("./fixtures/settings/before-the-table.json", import.meta.url), "utf8"));

/** Settings added since, each a row of the table: everything else must be as it was. */
const ADDED = { flags: ["setup-timeout", "allow-net", "egress-blocked"], keys: ["setupTimeout", "allowNet", "egressBlocked"] };
/** The backends and commands added since: their words in the help are taken out before comparing. */
const BACKENDS_BEFORE = "codex, claude, opencode, pi, omp or command";
const ADDED_OVERVIEW_LINES = [/^ {2}handoff mcp .*\n/m];
const asBeforeText = (text: string) =>
  ADDED_OVERVIEW_LINES.reduce((rest, line) => rest.replace(line, ""), text.replaceAll(backendNamesText(), BACKENDS_BEFORE));
const asBefore = <T extends { flag: string }>(rows: readonly T[]) => rows.filter((row) => !ADDED.flags.includes(row.flag));
function schemaAsBefore(schema: z.ZodType) {
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as { properties: Record<string, Record<string, unknown>> };
  // Issue 31: `$schema` names the file's JSON Schema for an editor; each key has a description; a batch line's id check
  // (the same as before) is a pattern the JSON Schema can say.
  for (const key of [...ADDED.keys, "$schema"]) delete json.properties[key];
  for (const property of Object.values(json.properties)) delete property.description;
  delete json.properties.id?.pattern;
  return json;
}

describe("the settings table accepts exactly what the hand-written tables accepted", () => {
  it("`.handoff.json`: the same keys, each with the same schema", () => {
    expect(schemaAsBefore(HandoffConfig)).toEqual(before.handoffConfig);
  });

  it("a batch line: the same keys, each with the same schema", () => {
    expect(schemaAsBefore(BatchTask)).toEqual(before.batchLine);
  });

  it("`handoff run` and `handoff resume`: the same options, short letters and kinds", () => {
    expect(optionTable(asBefore(settingsOf("run")))).toEqual(before.optionTables.run);
    expect(optionTable(asBefore(settingsOf("resume")))).toEqual(before.optionTables.resume);
  });

  it("`handoff run --help`: the same option lines, in the same order (their words: the help is filled to 100 columns since)", () => {
    const help: string = before.commandHelp.run;
    const section = help.slice(help.indexOf("Run options:\n") + "Run options:\n".length, help.indexOf("\nExit codes"));
    const words = (text: string) => text.replace(/\s+/g, " ");
    expect(words(asBeforeText(helpLines("run", asBefore(settingsOf("run")))))).toBe(words(section));
  });

  it("every command parses the same options as before but -C, and prints the same help but for the added settings' lines", () => {
    const withoutAdded = (table: object) => Object.fromEntries(Object.entries(table).filter(([flag]) => !ADDED.flags.includes(flag)));
    // Issue 31: -C on every command that reads a repository.
    const withoutRepo = (command: Command, table: object) =>
      ["show", "list", "batch", "enqueue"].includes(command)
        ? Object.fromEntries(Object.entries(table).filter(([flag]) => flag !== "repo"))
        : table;
    for (const command of Object.keys(before.optionTables) as Command[])
      expect(withoutRepo(command, withoutAdded(COMMAND_OPTIONS[command])), command).toEqual(before.optionTables[command]);
    const added = SETTINGS.filter((row) => ADDED.flags.includes(row.flag));
    const withoutAddedLines = (text: string) =>
      asBeforeText(
        (["run", "resume"] as const).reduce(
          (help, command) => added.reduce((rest, row) => rest.replace(helpLines(command, [row]), ""), help),
          text,
        ),
      );
    // Issue 31 filled every help to 100 columns and rewrote the overview and the prose: each option line of run,
    // resume, batch and worker is still there, word for word.
    const words = (text: string) => text.replace(/\s+/g, " ");
    const optionLines = (text: string) =>
      text
        .split(/\n(?= {2}(?:-\w, | {4})--)/)
        .filter((part) => /^ {2}(?:-\w, | {4})--/.test(part))
        .map((part) => words(part.split("\n\n")[0]!).trim());
    for (const command of ["run", "resume", "batch", "worker"] as const) {
      const now = words(withoutAddedLines(COMMAND_HELP[command]));
      for (const line of optionLines(before.commandHelp[command])) expect(now, `${command}: ${line}`).toContain(line);
    }
    expect(words(withoutAddedLines(HELP))).toContain(words(withoutAddedLines(helpLines("run", settingsOf("run")))).trim());
  });

  it("the Action: the same inputs, each passed as the same flag the same way", () => {
    const sorted = (inputs: readonly { input: string }[]) => [...inputs].sort((a, b) => a.input.localeCompare(b.input));
    expect(sorted(RUN_OPTION_INPUTS.filter((input) => !ADDED.flags.includes(input.input)))).toEqual(sorted(before.actionRunInputs));
  });
});

describe("a setting read the one way everywhere", () => {
  it("a command line, a batch line and `.handoff.json` give a limit in the library's unit", () => {
    expect(optionsFromFlags("run", { "max-file-size": "2", timeout: "1.5", verify: ["npm test"], yes: true })).toEqual({
      limits: { maxFileBytes: 2 * 1024 * 1024 },
      timeoutMs: 1500,
      verify: ["npm test"],
      yes: true,
    });
    expect(optionsFromLine({ task: "t", maxFileSize: 2, timeout: 1.5, agentCmd: "x" })).toEqual({
      limits: { maxFileBytes: 2 * 1024 * 1024 },
      timeoutMs: 1500,
      agentCmd: "x",
    });
    expect(settle("limits.maxFileBytes", {}, { maxFileSize: 2 })).toBe(2 * 1024 * 1024);
    expect(settle("timeoutMs", {}, { timeout: 1.5 })).toBe(1500);
  });

  it("the caller wins over `.handoff.json`, the file over the default; a message names where a value came from", () => {
    expect(settle("attempts", { attempts: 3 }, { attempts: 2 })).toBe(3);
    expect(settle("attempts", {}, { attempts: 2 })).toBe(2);
    expect(settle("attempts", {}, {})).toBe(1);
    expect(() => settle("testEdits", {}, { testEdits: "never" })).toThrow("testEdits (from .handoff.json) must be base");
    expect(() => settle("testEdits", { testEdits: "never" }, {})).toThrow(/^testEdits must be base/);
    expect(() => settle("attempts", { attempts: 21 }, {})).toThrow("attempts must be at most 20");
  });

  it("a bad value's message names the setting by its RunOptions field; the command line says the same with its flag", () => {
    const refusal = (option: Parameters<typeof settle>[0], given: object, config: object = {}) => {
      try {
        settle(option, given, config);
      } catch (error) {
        return error as UsageError;
      }
      throw new Error(`${option} was accepted`);
    };
    const timeout = refusal("timeoutMs", { timeoutMs: -1 });
    expect(timeout.message).toBe("timeoutMs must be a positive number");
    expect(timeout.saying(FLAG_NAMES)).toBe("--timeout must be a positive number");
    const size = refusal("limits.maxFileBytes", { limits: { maxFileBytes: 2 ** 40 } });
    expect(size.message).toMatch(/^limits\.maxFileBytes must be at most 1024 MiB/);
    expect(size.saying(FLAG_NAMES)).toMatch(/^--max-file-size must be at most 1024 MiB/);
    const fromFile = refusal("testEdits", {}, { testEdits: "never" });
    expect(fromFile.saying(FLAG_NAMES)).toBe("--test-edits (from .handoff.json) must be base, reject or allow, not 'never'");
    // A row's own words are the same on both surfaces.
    expect(refusal("model", { model: "a\0b" }).saying(FLAG_NAMES)).toMatch(/^the model holds a NUL byte/);
    for (const row of SETTINGS) if (row.option !== null) expect(FLAG_NAMES.name(row.option)).toBe(`--${row.flag}`);
  });

  it("a bad command-line value is a usage error that names the flag", () => {
    expect(() => optionsFromFlags("run", { "max-files": "0" })).toThrow("--max-files takes a positive whole number, not '0'");
    expect(() => optionsFromFlags("resume", { "idle-timeout": "soon" })).toThrow("--idle-timeout takes a positive number of seconds");
  });
});

describe("request.json and resume derive from the same rows", () => {
  it("every recorded setting's place is a field of request.json's schema", () => {
    const shape = RequestJson.shape as Record<string, unknown>;
    for (const row of SETTINGS) if ("request" in row) expect(Object.keys(shape), row.flag).toContain(row.request.path.split(".")[0]);
  });

  it("what a run records, a resumed run inherits, setting by setting", () => {
    const resolved = {
      backendName: "claude",
      agentCmd: null,
      bin: "/opt/claude",
      model: "m",
      verify: ["npm test"],
      noVerify: false,
      testEdits: "reject",
      junit: ["r.xml"],
      setup: ["npm ci"],
      setupInputs: ["*.lock"],
      workspaceMode: "copy",
      baseline: true,
      attempts: 3,
      totalTimeoutMs: null,
      keepSession: true,
      timeoutMs: 1,
      idleTimeoutMs: 2,
      verifyTimeoutMs: 3,
      setupTimeoutMs: 4,
      policy: { allow: ["src/**"], deny: [], maxFiles: 4, maxFileBytes: 5, maxPatchBytes: 6, maxWorkspaceEntries: 7, maxDepth: 8 },
      protect: ["a"],
      allowConfig: [".npmrc"],
      expose: ["/opt/tool"],
      envNames: ["KEY"],
      workspacesDir: "/w",
      cliHomesDir: "/h",
      keepWorkspace: true,
      allowDirty: true,
      sandbox: "bwrap",
      verifyNetwork: true,
      caps: { processes: 9, memoryBytes: 10 },
    };
    const recorded = recordedSettings(resolved);
    const inherited = inheritedSettings(recorded);
    for (const row of SETTINGS) {
      if (!("request" in row)) continue;
      const from = "resolved" in row.request ? row.request.resolved : row.option;
      expect(getPath(recorded, row.request.path), row.flag).toEqual(getPath(resolved, from));
      if (row.request.inherit && getPath(resolved, from) !== null)
        expect(getPath(inherited, row.option), row.flag).toEqual(getPath(resolved, from));
      else expect(getPath(inherited, row.option), row.flag).toBeUndefined();
    }
  });
});
