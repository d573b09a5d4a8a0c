import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { RUN_OPTION_INPUTS } from "../src/settings/action-inputs.js";
import { settingsOf } from "../src/settings/command-line.js";
import { SETTINGS } from "../src/settings/settings.js";

const doc = (name: string) => readFileSync(new URL(`../docs/${name}`, import.meta.url), "utf8");
/** The rows of a doc's tables: lines that start with `|`. */
const tableRows = (text: string) => text.split("\n").filter((line) => line.startsWith("|"));

// The docs describe each setting where a user looks for it; a row added to the table must reach them too.
describe("every setting is documented where its users look", () => {
  it("docs/cli.md: every option of handoff run and resume, in a table row", () => {
    const rows = tableRows(doc("cli.md")).join("\n");
    for (const command of ["run", "resume"] as const)
      for (const row of settingsOf(command))
        expect(rows, `--${row.flag}`).toMatch(new RegExp(`\`(-${"short" in row ? row.short : "_"}, )?--${row.flag}\\b`));
  });

  it("docs/gates.md: every .handoff.json key, in the keys table", () => {
    const rows = tableRows(doc("gates.md"));
    for (const row of SETTINGS)
      if ("file" in row && !("lineOnly" in row.file))
        expect(
          rows.some((line) => line.startsWith(`| \`${row.file.key}\` |`)),
          row.file.key,
        ).toBe(true);
  });

  it("docs/many-tasks.md: the keys only a batch line has", () => {
    const text = doc("many-tasks.md");
    for (const row of SETTINGS) if ("file" in row && "lineOnly" in row.file) expect(text, row.file.key).toContain(`\`${row.file.key}\``);
  });

  it("docs/github.md: every Action input that is a run option", () => {
    const rows = tableRows(doc("github.md")).join("\n");
    for (const input of RUN_OPTION_INPUTS) expect(rows, input.input).toContain(`\`${input.input}\``);
  });

  it("docs/library.md: every RunOptions field a setting has", () => {
    const rows = tableRows(doc("library.md")).join("\n");
    for (const row of SETTINGS) if (row.option !== null) expect(rows, row.option).toContain(`\`${row.option.split(".")[0]}\``);
  });
});
