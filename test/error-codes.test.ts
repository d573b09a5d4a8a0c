import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { USAGE_ERROR_CODES } from "../src/lib/usage-error-codes.js";

const doc = (name: string) => readFileSync(new URL(`../docs/${name}`, import.meta.url), "utf8");

/** The first-column codes of the table under `heading` in `text`: rows like "| `code` | … |". */
function tableCodes(text: string, heading: string): string[] {
  const start = text.indexOf(`\n${heading}\n`);
  expect(start, heading).toBeGreaterThan(-1);
  const rest = text.slice(start + heading.length + 2);
  const end = rest.search(/\n#/);
  const section = end === -1 ? rest : rest.slice(0, end);
  return [...section.matchAll(/^\| `([^`]+)` \|/gm)].map((match) => match[1]!);
}

describe("usage error codes", () => {
  it("docs/cli.md's usage-error table lists exactly the codes a UsageError can carry", () => {
    const documented = tableCodes(doc("cli.md"), "### Usage errors");
    expect([...documented].sort()).toEqual([...USAGE_ERROR_CODES].sort());
  });

  it("names each code once", () => {
    expect(new Set(USAGE_ERROR_CODES).size).toBe(USAGE_ERROR_CODES.length);
  });
});
