import { homedir } from "node:os";
import { describe, expect, test } from "vitest";
import { loadRun } from "../src/run-dir/run-lookup.js";
import { renderReport } from "../src/review/report.js";
import { proseMarkdown } from "../src/review/report-prose.js";
import { REPORT_RUNS, headingAnchor, proseOf, renderGfm } from "./helpers/reports.js";

/**
 * Issue 31: the markdown report is a pull request's body and a workflow's step summary, read as GitHub renders it.
 * Each real run's report is rendered with micromark and its GFM extensions, as GitHub does.
 */
describe("the markdown report, rendered as GitHub renders it", () => {
  for (const [kind, makeRun] of Object.entries(REPORT_RUNS)) {
    test(`${kind}: no path of this machine, no stray backtick, every table a <table>, every link to a heading of the report`, async () => {
      const runDir = await makeRun();
      const run = loadRun(runDir);
      const markdown = renderReport(run, "markdown");
      for (const local of ["/tmp/", "/root/", homedir(), runDir, run.result.repo.path]) expect(markdown).not.toContain(local);
      const rendered = renderGfm(markdown);
      expect(proseOf(rendered)).not.toContain("`");
      expect(rendered).not.toContain("<del>");
      // Each table of the markdown (a header row, then its |---| row) is a table once rendered.
      const tables = markdown.match(/^\|.*\|\n\|(?: ?-+ ?\|)+$/gmu) ?? [];
      expect(tables.length).toBeGreaterThan(0);
      expect(rendered.match(/<table>/gu)?.length).toBe(tables.length);
      const anchors = new Set([...rendered.matchAll(/<h\d>(.*?)<\/h\d>/gu)].map((m) => headingAnchor(m[1]!)));
      for (const link of rendered.matchAll(/href="#([^"]*)"/gu)) expect(anchors).toContain(link[1]);
      // The attempts are told in the open, never in the folded details.
      const folded = rendered.slice(rendered.indexOf("<details><summary>Run details"));
      expect(folded).not.toContain("Attempts");
    }, 120_000);
  }

  test("a repair run: its attempts are a section of their own, each attempt's summary with its command as code", async () => {
    const rendered = renderGfm(renderReport(loadRun(await REPORT_RUNS.repair!()), "markdown"));
    expect(rendered).toContain("<h2>Attempts (2; the last one decided)</h2>");
    expect(rendered).toContain("<li>attempt 1: verification_failed (command_failed): <code>npm test</code> failed (exit 1)");
    expect(rendered.indexOf("<h2>Attempts")).toBeLessThan(rendered.indexOf("<details><summary>Run details"));
  }, 120_000);

  test("a candidates run: the candidates are a table, the winner's row marked, why it won a list item", async () => {
    const rendered = renderGfm(renderReport(loadRun(await REPORT_RUNS.candidates!()), "markdown"));
    const table = rendered.slice(rendered.indexOf("<h2>Candidates</h2>"), rendered.indexOf("<h2>Task</h2>"));
    expect(table).toMatch(/<table>\n<thead>\n<tr>\n<th>k<\/th>\n<th>backend<\/th>/u);
    expect(table).toContain("<td>*2</td>\n<td>command</td>\n<td>verified</td>");
    expect(table).toContain("<li>winner: candidate 2 (*): the only one verified</li>");
  }, 120_000);

  test("a setup that fails: the summary's command is code, and the hint sends the reader to the Verification section", async () => {
    const markdown = renderReport(loadRun(await REPORT_RUNS["setup failure"]!()), "markdown");
    const rendered = renderGfm(markdown);
    expect(rendered).toContain("setup command <code>echo installing; exit 3</code> failed on the base before the agent started");
    expect(rendered).toContain('<strong>What to do:</strong> see the output under <a href="#verification">Verification</a>; fix the setup');
    expect(markdown).not.toContain("test.log");
  }, 120_000);
});

describe("the run's prose in markdown (proseMarkdown)", () => {
  test("a span holding a backtick gets a longer fence; plain words are escaped, never a literal \\`", () => {
    expect(proseMarkdown("``a ` b`` failed, *not* <b>")).toBe("``a ` b`` failed, \\*not\\* &lt;b&gt;");
    expect(renderGfm(proseMarkdown("``a ` b`` failed"))).toBe("<p><code>a ` b</code> failed</p>");
    expect(proseMarkdown("a lone ` stays")).toBe("a lone \\` stays");
  });

  test("pointers to the run's other files and to handoff's docs are dropped; what is left still reads", () => {
    expect(proseMarkdown("see events.jsonl for the failing step")).toBe("");
    expect(
      proseMarkdown("codex refused one of the agent's tool calls (see agent.tool.finished in events.jsonl); handoff lets it edit"),
    ).toBe("codex refused one of the agent's tool calls; handoff lets it edit");
    expect(proseMarkdown("see verification.tests.diagnostics in result.json; a patch must not stop the tests from reporting")).toBe(
      "a patch must not stop the tests from reporting",
    );
    expect(proseMarkdown("show its directory with `--expose PATH` (read-only; see docs/containment.md)")).toBe(
      "show its directory with `--expose PATH` (read-only)",
    );
    expect(proseMarkdown("the agent tried to reach 1 host that was blocked: a.example (port 80) (result.json network.blocked)")).toBe(
      "the agent tried to reach 1 host that was blocked: a.example (port 80)",
    );
    expect(proseMarkdown("run the command on the untouched base by hand (see the baseline's output in test.log)")).toBe(
      "run the command on the untouched base by hand (see the baseline's output under [Verification](#verification))",
    );
  });
});
