import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { VIOLATION_RULES } from "../src/patch/rules/findings.js";
import { AGENT_DETAILS, FAILABLE_PHASES, RUN_DETAILS, exitCodeDetail, phaseFailedDetail } from "../src/verdict/detail.js";

const gates = readFileSync(new URL("../docs/gates.md", import.meta.url), "utf8");

/** The table rows under a heading, up to the next heading. */
function sectionRows(heading: string): string[][] {
  const start = gates.indexOf(`\n${heading}\n`);
  expect(start, heading).toBeGreaterThan(-1);
  const rest = gates.slice(start + heading.length + 2);
  const end = rest.search(/\n#/);
  return (end === -1 ? rest : rest.slice(0, end))
    .split("\n")
    .filter((line) => line.startsWith("| ") && !line.startsWith("| ---"))
    .slice(1)
    .map((line) => line.split(" | ").map((cell) => cell.replace(/^\| |\s*\|$/g, "")));
}

const codes = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);
/** A documented template (`exit_code_<n>`) as a pattern a value of it matches. */
const pattern = (template: string) => new RegExp(`^${template.replace(/<[a-z]+>/g, "[a-z0-9-]+")}$`);

const detailRows = sectionRows("## Detail values");
const documented = detailRows.flatMap((row) => codes(row[1]!)).filter((value) => value !== "null");
const templates = documented.filter((value) => value.includes("<"));

describe("docs/gates.md's detail values are the ones a verdict can carry", () => {
  it("lists every fixed detail of the run and of the agent, and no other", () => {
    const fixed = documented.filter((value) => !value.includes("<"));
    expect([...new Set(fixed)].sort()).toEqual([...new Set([...RUN_DETAILS, ...AGENT_DETAILS])].sort());
  });

  it("has the templates the union has: an exit code, a failed phase", () => {
    expect(templates.sort()).toEqual(["<phase>_failed", "exit_code_<n>"]);
    expect(exitCodeDetail(3)).toMatch(pattern("exit_code_<n>"));
    for (const phase of FAILABLE_PHASES) expect(phaseFailedDetail(phase)).toMatch(pattern("<phase>_failed"));
  });

  it("names every phase whose failure is a detail", () => {
    const row = detailRows.find((cells) => cells[1] === "`<phase>_failed`")!;
    const listed = codes(row[2]!.slice(row[2]!.indexOf("("), row[2]!.indexOf(")") + 1));
    expect(listed.sort()).toEqual([...FAILABLE_PHASES].sort());
  });

  it("points a violation's detail at the violations table, which lists every violation rule", () => {
    expect(detailRows.some((cells) => cells[1] === "a violation rule")).toBe(true);
    const rules = sectionRows("### Violations (the patch is rejected)").flatMap((row) => codes(row[0]!));
    expect(rules.sort()).toEqual([...VIOLATION_RULES].sort());
  });

  it("says a library backend's own detail passes through", () => {
    expect(detailRows.some((cells) => cells[0] === "`external_agent_error`" && cells[1] === "any other string")).toBe(true);
  });
});
