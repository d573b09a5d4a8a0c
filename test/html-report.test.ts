import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { REPORT_CSP, renderHtml } from "../src/review/html-report.js";
import { html } from "../src/review/html/escape.js";
import { DIFF_LINES_SHOWN } from "../src/review/html/diff-view.js";
import { TOOL_CALLS_SHOWN, timelineView } from "../src/review/html/timeline.js";
import { loadRun } from "../src/run-dir/run-lookup.js";
import { chromium, dumpDom, pageRequests, screenshot, viewPage } from "./helpers/chromium.js";
import { commandRunArgs, runCli } from "./helpers/cli.js";
import { readPng } from "./helpers/png.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, delegate } from "./helpers/run.js";
import { artifactPath } from "./helpers/artifacts.js";
import { REPORT_RUNS } from "./helpers/reports.js";

/** What a hostile task, patch or agent says to break out of the page: each must stay text. */
const HOSTILE = `</pre><script>document.title="pwned"</script><img src="http://127.0.0.1:9/leak.png" onerror="document.title='pwned'">`;

/** An agent script in a temp dir: fixes add() and runs `body` in the clone. */
function agentScript(body: string): string {
  const path = join(tempDir("handoff-html-agent"), "agent.sh");
  writeFileSync(path, `#!/bin/sh\nsed -i 's/a - b/a + b/' math.js\n${body}\n`, { mode: 0o755 });
  return path;
}

/** A verified run whose task, patch and agent message all carry HOSTILE. */
async function hostileRun() {
  const repo = await makeRepo(FAILING_ADD_PROJECT);
  const quoted = `'${HOSTILE.replaceAll("'", "'\\''")}'`;
  const script = agentScript(
    `printf '%s\\n' ${quoted} > notes.html\nprintf '{"type":"message","text":%s}\\n' "$(printf '%s' ${quoted} | sed 's/"/\\\\"/g; s/^/"/; s/$/"/')"`,
  );
  return delegate(repo, script, { verify: ["npm test"], task: `make add() return the sum ${HOSTILE}` });
}

/**
 * Every start tag of the page that could load something (src, href, srcset, action, a url() in style); a link to a
 * file of the run, relative to the run directory (`<a href="test.log">`), loads nothing until it is followed.
 */
function loadingAttributes(page: string): string[] {
  return [...page.matchAll(/<[a-z][^>]*?\s(?:src|href|srcset|action|poster|data)\s*=[^>]*>|url\(/giu)]
    .map((match) => match[0])
    .filter((tag) => !RUN_FILE_LINK.test(tag));
}

const RUN_FILE_LINK = /^<a href="(?:(?:attempts|candidates)\/\d+\/)?[a-z-]+\.(?:log|jsonl|json|patch|md)">$/u;

/** The phase names of the page's timeline, in order. */
function timelineRows(page: string): string[] {
  const table = page.slice(page.indexOf('<table class="timeline">'), page.indexOf("</table>", page.indexOf('<table class="timeline">')));
  return [...table.matchAll(/<tr class="(?:ok|bad)"><td>([^<]*)<\/td>/gu)].map((m) => m[1]!);
}

describe("the HTML report (handoff show --format html)", () => {
  test("a task, a patch and an agent message carrying </pre><script> or <img onerror> stay text", async () => {
    const { result, runDir } = await hostileRun();
    expect(result.terminalReason).toBe("verified");
    const page = renderHtml(loadRun(runDir));
    expect(page).not.toMatch(/<script|<img|onerror="/iu);
    expect(page).toContain(
      "&lt;/pre&gt;&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;&lt;img src=&quot;http://127.0.0.1:9/leak.png&quot;",
    );
    // In the task, in the diff (notes.html's added line) and in the agent's last word.
    expect(page.split("&lt;/pre&gt;&lt;script&gt;").length - 1).toBeGreaterThanOrEqual(3);
    expect(page).toContain(
      `<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; style-src &#39;unsafe-inline&#39;; img-src data:">`,
    );
    expect(loadingAttributes(page)).toEqual([]);
  });

  test("the verdict comes first, then the task; verification passed, the diff has numbered rows, the timeline its phases", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test"], task: "make add() return the sum" });
    const page = renderHtml(loadRun(runDir));
    const verdict = page.indexOf('<span class="reason">verified</span>');
    expect(verdict).toBeGreaterThan(0);
    expect(page.indexOf("make add() return the sum")).toBeGreaterThan(verdict);
    expect(page).toContain("exit 0");
    expect(page).toMatch(
      /<tr class="del"><td class="ln">2<\/td><td class="ln"><\/td><td class="code"><span class="sign">−<\/span> {2}return a - b;<\/td><\/tr>/u,
    );
    expect(page).toMatch(
      /<tr class="add"><td class="ln"><\/td><td class="ln">2<\/td><td class="code"><span class="sign">\+<\/span> {2}return a \+ b;<\/td><\/tr>/u,
    );
    expect(page).toMatch(/<span class="mark">ok<\/span> <span class="muted">\[verify\]<\/span> <code>npm test<\/code>: exit 0/u);
    expect(page).toMatch(/<pre class="log">[^<]*\nok\n/u);
    for (const phase of ["clone", "agent", "extract", "verify"]) expect(page).toContain(`<tr class="ok"><td>${phase}</td>`);
  });

  test("a CRLF file edited in place has rows without CRs and one note; a file whose line endings changed shows each CR", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, "win.txt": "one\r\ntwo\r\n", "unix.txt": "a\n" });
    const { runDir } = await delegate(repo, agentScript("sed -i 's/two/TWO/' win.txt\nprintf 'a\\r\\n' > unix.txt"), { noVerify: true });
    const page = renderHtml(loadRun(runDir));
    const file = (name: string) =>
      page.slice(page.indexOf(`<code>${name}</code>`), page.indexOf("</details>", page.indexOf(`<code>${name}</code>`)));
    expect(file("win.txt")).toContain('<p class="muted">CRLF line endings, shown without the CRs.</p>');
    expect(file("win.txt")).toContain('<td class="code"><span class="sign">+</span>TWO</td>');
    expect(file("unix.txt")).not.toContain("CRLF");
    expect(file("unix.txt")).toContain('<td class="code"><span class="sign">+</span>a\\x0d</td>');
    expect(page).not.toContain("\r");
  });

  test("a failed verification shows the failing command open, with its output from test.log", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { result, runDir } = await delegate(repo, agent("breaks-add.sh"), { verify: ["npm test"] });
    expect(result.terminalReason).toBe("verification_failed");
    const page = renderHtml(loadRun(runDir));
    expect(page).toMatch(
      /<details class="command bad" open><summary><span class="mark">FAIL<\/span>[\s\S]*?<code>npm test<\/code>: exit 1/u,
    );
    expect(page).toMatch(/<pre class="log">[^<]*FAIL: add\(2, 2\) = 5/u);
    expect(page).toContain("It claimed the tests pass: that does NOT match handoff's own verification.");
  });

  test("a huge patch shows the first files up to the bound, and names the files left out and where changes.patch is", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, agentScript("seq 1 2000 > a.txt\nseq 1 2000 > b.txt\nseq 1 2000 > c.txt"), { noVerify: true });
    const page = renderHtml(loadRun(runDir));
    const rows = page.match(/<tr class="(add|del|ctx|hunk)">/gu) ?? [];
    expect(rows.length).toBe(DIFF_LINES_SHOWN);
    expect(page).toContain("<code>a.txt</code>");
    expect(page).toMatch(/… \d+ more lines of this file are not shown/u);
    expect(page).toContain("2 more file(s) are not shown here");
    expect(page).toMatch(/<li><code>c\.txt<\/code><\/li><li><code>math\.js<\/code><\/li>/u);
    expect(page).toContain(`<code>${join(runDir, "changes.patch")}</code>`);
  });

  test("a file whose type changed (two sections of the patch, one entry of result.json) does not shift the names of the files after it", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { result, runDir } = await delegate(repo, agentScript("rm test.js && ln -s math.js test.js\necho new > zz.txt"), {
      noVerify: true,
    });
    expect(result.patch?.files.map((f) => f.path)).toEqual(["math.js", "test.js", "zz.txt"]);
    const page = renderHtml(loadRun(runDir));
    const names = [...page.matchAll(/<summary><span class="letter">([AMD])<\/span> <code>([^<]*)<\/code>/gu)].map((m) => `${m[1]} ${m[2]}`);
    expect(names).toEqual(["M math.js", "D test.js", "A test.js", "A zz.txt"]);
  });

  test("of a candidates run, the task, the verification output and the timeline are the winner's (the run's own folder has none)", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runsDir = join(tempDir("handoff-html-runs"), "runs");
    const fixesOnlyAsSecond = `if [ "$HANDOFF_CANDIDATE" = 2 ]; then sed -i 's/a - b/a + b/' math.js; else sed -i 's/a - b/b - a/' math.js; fi`;
    const args = ["--yes", "--runs-dir", runsDir, "--run-id", "r", "--verify", "npm test", "--candidates", "2"];
    const outcome = await runCli(commandRunArgs(repo, fixesOnlyAsSecond, args, "make add() return the sum"));
    expect(outcome.code, outcome.stderr).toBe(0);
    const page = renderHtml(loadRun(join(runsDir, "r")));
    expect(page).toContain('<pre class="task">make add() return the sum</pre>');
    expect(page).toContain("<h2>Candidates</h2>");
    expect(page).toMatch(/<pre class="log">[^<]*\nok\n/u);
    expect(page).toContain("<h2>Timeline (candidate <code>candidates/2/</code>)</h2>");
    expect(page).toContain('<tr class="ok"><td>agent</td>');
  });

  test("a repair run tells its attempts as the text and markdown reports do, and its timeline names each phase once", async () => {
    const page = renderHtml(loadRun(await REPORT_RUNS.repair!()));
    expect(page).toContain("<h2>Attempts (2; the last one decided)</h2>");
    expect(page).toContain(
      '<div class="story depth-0">attempt 1: verification_failed (command_failed): <code>npm test</code> failed (exit 1)</div>',
    );
    expect(page).toContain('feedback sent (<a href="attempts/1/feedback.md"><code>attempts/1/feedback.md</code></a>, 16 lines):');
    expect(page).toMatch(/<pre class="log story-block">Your change \(attempt 1 of 3\)[^<]*FAIL: add\(2, 2\) = 5/u);
    expect(page).toContain('<div class="story depth-0">attempt 2: verified</div>');
    const rows = timelineRows(page);
    expect(new Set(rows).size).toBe(rows.length);
    expect(rows).toEqual(
      expect.arrayContaining(["clone", "workspace", "agent (attempt 1)", "verify (attempt 1)", "agent (attempt 2)", "verify (attempt 2)"]),
    );
  }, 120_000);

  test("code spans of the summary and the hint are code, and the file the hint names is a link to it", async () => {
    const page = renderHtml(loadRun(await REPORT_RUNS["setup failure"]!()));
    expect(page).toContain(
      '<div class="summary">setup command <code>echo installing; exit 3</code> failed on the base before the agent started</div>',
    );
    expect(page).toContain('hint: see <a href="test.log">test.log</a>; fix the setup command or the environment, then run again');
    expect(page).not.toMatch(/`echo installing/u);
  }, 120_000);

  test("the candidates are a table, the winner's row marked", async () => {
    const page = renderHtml(loadRun(await REPORT_RUNS.candidates!()));
    expect(page).toMatch(/<table class="candidates"><thead><tr><th>k<\/th><th>backend<\/th>/u);
    expect(page).toContain('<tr class="winner"><td>*2</td><td>command</td><td>verified</td>');
    expect(page).toContain("<li>winner: candidate 2 (*): the only one verified</li>");
    // The winner's own files are in its folder.
    expect(page).toContain('<a href="candidates/2/test.log">test.log</a> and <a href="changes.patch">changes.patch</a> hold everything');
  }, 120_000);

  test(`the agent's tool calls are listed up to ${TOOL_CALLS_SHOWN}, with "and N more"`, () => {
    const time = (ms: number) => new Date(Date.parse("2026-12-01T10:00:00Z") + ms).toISOString();
    const events = Array.from({ length: TOOL_CALLS_SHOWN + 5 }, (_, i) => [
      { type: "agent.tool.started" as const, id: `t${i}`, name: "Bash", input: { command: `echo ${i} <b>` }, time: time(i * 10) },
      { type: "agent.tool.finished" as const, id: `t${i}`, ok: i !== 2, time: time(i * 10 + 5) },
    ]).flat();
    const view = timelineView({ kind: "events", events, startedAt: time(0) }).toString();
    expect(view).toContain(`The agent's tool calls (${TOOL_CALLS_SHOWN + 5})`);
    expect(view.match(/<b>Bash<\/b>/gu)).toHaveLength(TOOL_CALLS_SHOWN);
    expect(view).toContain('and 5 more (all in <a href="events.jsonl">events.jsonl</a>)');
    expect(view).toContain("{&quot;command&quot;:&quot;echo 0 &lt;b&gt;&quot;}");
    expect(view).toMatch(/<tr class="bad">[\s\S]*?echo 2 [\s\S]*?failed<\/td><\/tr>/u);
  });
});

describe.skipIf(!chromium.ok)(`the HTML report in headless Chromium (${chromium.reason})`, () => {
  test("renders: the DOM has the verdict, the diff rows and the timeline, and the hostile strings as text only", async () => {
    const { runDir } = await hostileRun();
    const shown = await runCli(["show", runDir, "--format", "html"]);
    expect(shown.code, shown.stderr).toBe(0);
    const file = join(tempDir("handoff-html"), "report.html");
    writeFileSync(file, shown.stdout);
    const dom = await dumpDom(file);
    expect(dom).toContain('<span class="reason">verified</span>');
    expect(dom).toMatch(
      /<tr class="add"><td class="ln"><\/td><td class="ln">2<\/td><td class="code"><span class="sign">\+<\/span> {2}return a \+ b;<\/td><\/tr>/u,
    );
    expect(dom).toContain('<tr class="ok"><td>agent</td>');
    expect(dom).toContain('<tr class="ok"><td>verify</td>');
    // The parser made no element of them: the DOM holds them as text, and the title is the report's.
    expect(dom).not.toMatch(/<script|<img/iu);
    expect(dom).toContain("&lt;/pre&gt;&lt;script&gt;");
    expect(dom).toMatch(/<title>handoff run [^<]+: verified<\/title>/u);
  }, 120_000);

  test("a screenshot is a PNG of the requested size, and not one colour", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test"] });
    const dir = tempDir("handoff-html");
    const file = join(dir, "report.html");
    writeFileSync(file, renderHtml(loadRun(runDir)));
    await screenshot(file, join(dir, "report.png"), 900, 700);
    const png = readPng(readFileSync(join(dir, "report.png")));
    expect({ width: png.width, height: png.height }).toEqual({ width: 900, height: 700 });
    expect(png.colours).toBeGreaterThan(16);
  }, 120_000);

  for (const kind of ["repair", "candidates", "setup failure"] as const)
    test(`${kind}: at 400 px, light and dark, and at 1000 px, nothing but a scrolling box is wider than the page; screenshots in .test-artifacts/`, async () => {
      const file = join(tempDir("handoff-html"), "report.html");
      writeFileSync(file, renderHtml(loadRun(await REPORT_RUNS[kind]!())));
      for (const view of [
        { width: 400, height: 1400, scheme: "light" },
        { width: 400, height: 1400, scheme: "dark" },
        { width: 1000, height: 1000, scheme: "light" },
      ] as const) {
        const png = artifactPath("html-report", `${kind.replace(/ /gu, "-")}-${view.width}-${view.scheme}.png`);
        const layout = await viewPage(file, view, png);
        expect(layout).toMatchObject({ viewportWidth: view.width, overflowing: [], prefersDark: view.scheme === "dark" });
        expect(layout.scrollWidth).toBeLessThanOrEqual(view.width);
        expect(layout.background).toBe(view.scheme === "dark" ? "rgb(13, 17, 23)" : "rgb(255, 255, 255)");
        const shot = readPng(readFileSync(png));
        expect({ width: shot.width, height: shot.height }).toEqual({ width: view.width, height: view.height });
      }
    }, 180_000);

  test("the layout check sees a page wider than 400 px: a table whose cells do not wrap, outside a scrolling box", async () => {
    const file = join(tempDir("handoff-html"), "wide.html");
    writeFileSync(
      file,
      `<!DOCTYPE html><body><table class="facts"><tr><td style="white-space: nowrap">${"wide ".repeat(100)}</td></tr></table></body>`,
    );
    const layout = await viewPage(file, { width: 400, height: 300, scheme: "light" });
    expect(layout.scrollWidth).toBeGreaterThan(400);
    expect(layout.overflowing).toContain("table.facts");
  }, 120_000);

  test("loading the report requests nothing from the network, where a page without the escape and the CSP does, and the CSP alone stops it", async () => {
    const { runDir } = await hostileRun();
    const dir = tempDir("handoff-html");
    const file = join(dir, "report.html");
    writeFileSync(file, renderHtml(loadRun(runDir)));
    expect(await pageRequests(file)).toEqual([]);
    // The same net log sees a page that does load something: the check above can fail.
    const control = join(dir, "control.html");
    writeFileSync(control, '<!DOCTYPE html><title>control</title><img src="http://127.0.0.1:9/leak.png">');
    expect(await pageRequests(control)).toEqual(["http://127.0.0.1:9/leak.png"]);
    // And the report's CSP alone, as the report writes it, stops that page's request.
    const fenced = join(dir, "fenced.html");
    writeFileSync(
      fenced,
      html`<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}"><img src="http://127.0.0.1:9/leak.png">`.toString(),
    );
    expect(await pageRequests(fenced)).toEqual([]);
  }, 120_000);
});
