import { readFileSync, readdirSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { USAGE_ERROR_CODES } from "../src/lib/errors.js";

const CLI_DOC = readFileSync(new URL("../docs/cli.md", import.meta.url), "utf8");

/** The codes in the first column of a docs table that starts after `heading`. */
function tableCodes(doc: string, heading: string): string[] {
  const section = doc.slice(doc.indexOf(heading));
  const table = section.slice(section.indexOf("| code |"), section.indexOf("\n\n", section.indexOf("| code |")));
  return [...table.matchAll(/^\| `([a-z_]+)` \|/gm)].map((match) => match[1]!);
}

describe("usage errors", () => {
  test("docs/cli.md lists every usage-error code, once, and no other", () => {
    const documented = tableCodes(CLI_DOC, "### Usage errors");
    expect(documented.length).toBeGreaterThan(80);
    expect([...documented].sort()).toEqual([...USAGE_ERROR_CODES].sort());
    expect(new Set(documented).size).toBe(documented.length);
  });

  test("every code is thrown somewhere: none is listed that no error carries", () => {
    const files = ["src", "backends"].flatMap((top) =>
      readdirSync(new URL(`../${top}/`, import.meta.url), { recursive: true, encoding: "utf8" })
        .filter((name) => name.endsWith(".ts"))
        .map((name) => readFileSync(new URL(`../${top}/${name}`, import.meta.url), "utf8")),
    );
    const errorsFile = readFileSync(new URL("../src/lib/errors.ts", import.meta.url), "utf8");
    const list = errorsFile.slice(errorsFile.indexOf("USAGE_ERROR_CODES"), errorsFile.indexOf("] as const"));
    const source = files.join("\n").replace(list, "");
    for (const code of USAGE_ERROR_CODES) expect(source, code).toContain(`"${code}"`);
  });
});
