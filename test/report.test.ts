import { readFileSync } from "node:fs";
import { join } from "node:path";
import { XMLParser } from "fast-xml-parser";
import { describe, expect, test } from "vitest";
import { loadRun } from "../src/run-dir/run-lookup.js";
import { REPORT_LIMIT } from "../src/review/markdown-report.js";
import { renderReport } from "../src/review/report.js";
import { REPORT_FORMATS } from "../src/review/report-formats.js";
import { COMMAND_HELP } from "../src/cli/help.js";
import { hiddenPathsNamed } from "../src/containment/hidden-paths.js";
import { diffLinesOf, isCrlfDiff } from "../src/review/line-endings.js";
import { FAILING_ADD_PROJECT, makeRepo } from "./helpers/repo.js";
import { agent, delegate } from "./helpers/run.js";

/** The markdown outside any fenced block: a fence opens with 3+ backticks and closes only with a run at least as long. */
function outsideFences(markdown: string): { prose: string[]; open: boolean } {
  const prose: string[] = [];
  let open: number | null = null;
  for (const line of markdown.split("\n")) {
    const run = /^(`{3,})(.*)$/.exec(line);
    if (open === null) {
      if (run) open = run[1]!.length;
      else prose.push(line);
    } else if (run && run[1]!.length >= open && run[2]!.trim() === "") open = null;
  }
  return { prose, open: open !== null };
}

/** A patch line of three backticks, then a line that would be a heading if it escaped its fence. */
const WRITES_A_FENCE = `${agent("fixes-add.sh")} && printf 'intro\\n\`\`\`\\n# escaped into the report\\n\`\`\`\\n' > notes.md`;

describe("markdown report", () => {
  test("a patch line of three backticks does not end the diff block early: the rest of the diff stays in its fence", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, WRITES_A_FENCE, { verify: ["npm test"] });
    const markdown = renderReport(loadRun(runDir), "markdown");
    const { prose, open } = outsideFences(markdown);
    expect(open).toBe(false);
    expect(markdown).toContain("+# escaped into the report");
    expect(prose).not.toContain("# escaped into the report");
    expect(markdown).toMatch(/<details><summary>notes\.md \+4 −0<\/summary>\n\n````diff\n/);
  });

  test("a CRLF file edited in place is shown without its CRs and says so once; a file whose line endings changed shows each CR", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, "win.txt": "one\r\ntwo\r\nthree\r\n", "unix.txt": "a\nb\n" });
    const edits = `${agent("fixes-add.sh")} && sed -i 's/two/TWO/' win.txt && printf 'a\\r\\nb\\r\\n' > unix.txt`;
    const { result, runDir } = await delegate(repo, edits, { verify: ["npm test"] });
    expect(result.terminalReason, result.summary).toBe("verified");
    const markdown = renderReport(loadRun(runDir), "markdown");
    expect(markdown).toContain("<summary>win.txt +1 −1 (CRLF line endings, shown without the CRs)</summary>");
    expect(markdown).toMatch(/\n one\n-two\n\+TWO\n three\n/);
    expect(markdown).toContain("<summary>unix.txt +2 −2</summary>");
    expect(markdown).toMatch(/\n-a\n-b\n\+a\\x0d\n\+b\\x0d\n/);
    expect(markdown).not.toContain("\r");
  });

  test("a CRLF file whose last line has no line ending is still CRLF; a file of no diff lines is not", () => {
    const header = "diff --git a/w.txt b/w.txt\n--- a/w.txt\n+++ b/w.txt\n@@ -1,2 +1,2 @@\n";
    expect(isCrlfDiff(diffLinesOf(`${header} one\r\n-two\n\\ No newline at end of file\n+TWO\n\\ No newline at end of file\n`))).toBe(true);
    expect(isCrlfDiff(diffLinesOf(`${header} one\r\n-two\r\n+TWO\n`))).toBe(false);
    expect(isCrlfDiff(diffLinesOf(`${header}-two\n\\ No newline at end of file\n`))).toBe(false);
    expect(isCrlfDiff(diffLinesOf("diff --git a/w.txt b/w.txt\nold mode 100644\nnew mode 100755\n"))).toBe(false);
  });

  test("leads with the verdict and why, then the task, then each command with the end of the first failing one's output", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, agent("breaks-add.sh"), { verify: ["npm test"], task: "fix add()\n```\n# not a heading" });
    const markdown = renderReport(loadRun(runDir), "markdown");
    const lines = markdown.split("\n");
    expect(lines[0]).toMatch(/^# handoff run `/);
    expect(lines[2]).toMatch(/^❌ \*\*verification_failed\*\* \(`command_failed`\), exit 1: /);
    const at = (text: string) => markdown.indexOf(text);
    expect(at("## Task")).toBeLessThan(at("## Verification"));
    expect(at("## Verification")).toBeLessThan(at("## Patch"));
    expect(markdown).toMatch(/\| ❌ \| verify \| `npm test` \| exit 1 \| (?:\d+ ms|\d+\.\d s) \|/);
    expect(markdown).toContain("Output of the first failing command, `npm test`");
    expect(markdown).toContain("FAIL: add(2, 2) =");
    const { prose, open } = outsideFences(markdown);
    expect(open).toBe(false);
    expect(prose).not.toContain("# not a heading");
  });

  test("an agent that guts the failing test: the run held to the base is in the table, and its failing output is the excerpt", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir, result } = await delegate(repo, agent("guts-the-test.sh"), { verify: ["npm test"] });
    expect(result.terminalReason).toBe("verification_failed");
    const markdown = renderReport(loadRun(runDir), "markdown");
    expect(markdown).toMatch(/\| ✅ \| verify \| `npm test` \| exit 0 \| [^|]+ \|\n\| ❌ \| held \| `npm test` \| exit 1 \|/);
    expect(markdown).toContain("Output of the first failing command, `npm test`");
    expect(markdown).toContain("FAIL: add(2, 2) =");
    expect(markdown).toMatch(/\n {2}- FAIL \[held\] `npm test`: exit 1/);
    // The HTML page and the JUnit report list the held run's command too, with its output.
    const page = renderReport(loadRun(runDir), "html");
    expect(page).toMatch(/<span class="mark">ok<\/span> <span class="muted">\[verify\]<\/span> <code>npm test<\/code>: exit 0/u);
    expect(page).toMatch(
      /<details class="command bad" open><summary><span class="mark">FAIL<\/span> <span class="muted">\[held\]<\/span> <code>npm test<\/code>: exit 1[^<]*<\/summary><pre class="log">[^<]*FAIL: add\(2, 2\) =/u,
    );
    const xml = renderReport(loadRun(runDir), "junit");
    const cases = new XMLParser({ ignoreAttributes: false }).parse(xml).testsuites.testsuite.testcase as Record<string, unknown>[];
    expect(cases.map((c) => c["@_name"])).toEqual(["verdict", "[verify] npm test", "[held] npm test"]);
    expect((cases[2]!.failure as Record<string, string>)["#text"]).toContain("FAIL: add(2, 2) =");
  });

  test("a 374 KB patch gives a report under 60,000 characters whose fences all balance, naming the diffs it left out", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    // 11 files of 1,240 lines: about 370 KB of patch, plus a small file whose diff fits.
    const writesMany = `${agent("fixes-add.sh")} && mkdir lib && for i in $(seq 1 11); do seq 1 1240 | sed "s/^/line $i of a big file: /" > lib/f$i.txt; done`;
    const { runDir, result } = await delegate(repo, `${writesMany} && printf 'a\\n\`\`\`\\n' > lib/fence.md`, { verify: ["npm test"] });
    const patchBytes = readFileSync(join(runDir, "changes.patch")).length;
    expect(patchBytes).toBeGreaterThan(350 * 1024);
    expect(result.terminalReason).toBe("verified");
    const markdown = renderReport(loadRun(runDir), "markdown");
    expect(markdown.length).toBeLessThan(REPORT_LIMIT);
    expect(outsideFences(markdown).open).toBe(false);
    expect(markdown.split("<details>").length).toBe(markdown.split("</details>").length);
    expect(markdown).toMatch(/\*\*Diffs of \d+ file\(s\) not shown \(\d+ KB\)\*\*/);
    expect(markdown).toContain("`lib/f1.txt`");
    expect(markdown).toContain("`changes.patch` in the run directory");
    // The small diffs fit: math.js and the fence are shown whole.
    expect(markdown).toContain("<details><summary>math.js +1 −1</summary>");
    expect(markdown).toContain("<details><summary>lib/fence.md +2 −0</summary>");
    // Every file is in the list with its counts.
    expect(markdown).toContain("| `lib/f11.txt` | added | 1240 | 0 | 1 |");
  });

  test("a setup's node_modules/ is a routine warning, folded away; a changed test file needs review", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, `${agent("fixes-add.sh")} && echo '// touched' >> test.js`, {
      setup: ["mkdir -p node_modules/dep && echo x > node_modules/dep/index.js"],
      workspaceMode: "copy",
      verify: ["npm test"],
    });
    const markdown = renderReport(loadRun(runDir), "markdown");
    expect(markdown).toMatch(/\*\*Needs review\*\* \(1\)\n\n- `test_file_changed` `test\.js`: /);
    expect(markdown).toMatch(
      /<details><summary>Routine \(what a setup or the tests leave behind, such as node_modules\/ or __pycache__\/\) \(1\)<\/summary>\n\n- `ignored_files_added`/,
    );
  });
});

describe("text report", () => {
  test("an agent that failed: its stderr tail is shown as plain text, its colours taken out and other controls escaped", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const stderr = `printf 'bad \\033[31mthing\\033[0m \\302\\233!\\n' >&2`;
    const { runDir, result } = await delegate(repo, `${stderr}; ${agent("exits-nonzero.sh")}`, { noVerify: true });
    expect(result.terminalReason).toBe("external_agent_error");
    const text = renderReport(loadRun(runDir), "text");
    expect(text).toContain("the end of its stderr (backend-result.json):\n      bad thing \\x9b!\n      giving up");
    expect(renderReport(loadRun(runDir), "markdown")).toMatch(
      /## Agent\n\nThe end of the agent's stderr, from `backend-result\.json`:\n\n```text\nbad thing \\x9b!\ngiving up\n```/,
    );
  });

  test("a verified run does not show the agent's stderr", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, `echo 'chatter' >&2; ${agent("fixes-add.sh")}`, { verify: ["npm test"] });
    expect(renderReport(loadRun(runDir), "text")).not.toContain("the end of its stderr");
  });

  test("the sandbox's hidden paths the agent's stderr names are found, and the places shown to it again are not", () => {
    const hidden = ["/home/me", "/tmp", "/src/repo"];
    const stderr =
      "cat: /home/me/.npmrc: No such file or directory\nwrote /tmp/handoff/ws/x.js\nopen '/src/repo/a.js' failed.\n/home/me/.npmrc again";
    expect(hiddenPathsNamed(stderr, hidden, ["/tmp/handoff/ws"])).toEqual(["/home/me/.npmrc", "/src/repo/a.js"]);
  });
});

describe("JUnit report", () => {
  test("one case per verification command, the failing one with its ending and the end of its output, plus the verdict", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, agent("breaks-add.sh"), { verify: ["node -e 1", "npm test"] });
    const xml = renderReport(loadRun(runDir), "junit");
    const suite = new XMLParser({ ignoreAttributes: false }).parse(xml).testsuites.testsuite;
    const cases = suite.testcase as Record<string, unknown>[];
    expect(cases.map((c) => c["@_name"])).toEqual(["verdict", "[verify] node -e 1", "[verify] npm test"]);
    expect(cases[1]!.failure).toBeUndefined();
    const failure = cases[2]!.failure as Record<string, string>;
    expect(failure["@_message"]).toBe("exit 1");
    expect(failure["#text"]).toContain("output, from test.log:");
    expect(failure["#text"]).toContain("FAIL: add(2, 2) =");
  });
});

describe("the report formats, named once", () => {
  test("handoff show's help and docs/cli.md name every format of REPORT_FORMATS", () => {
    const doc = readFileSync(new URL("../docs/cli.md", import.meta.url), "utf8");
    const show = doc.slice(doc.indexOf("## `handoff show`"), doc.indexOf("## `handoff apply`"));
    for (const format of REPORT_FORMATS) {
      expect(COMMAND_HELP.show).toContain(format);
      expect(show).toMatch(new RegExp(`--format ${format}\\b|The ${format} format`));
    }
  });
});
