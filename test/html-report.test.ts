import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { REPORT_CSP, renderHtml } from "../src/review/html-report.js";
import { html } from "../src/review/html/escape.js";
import { DIFF_LINES_SHOWN } from "../src/review/html/diff-view.js";
import { TOOL_CALLS_SHOWN, timelineView } from "../src/review/html/timeline.js";
import { loadRun } from "../src/run-dir/run-lookup.js";
import { chromium, dumpDom, pageRequests, screenshot } from "./helpers/chromium.js";
import { commandRunArgs, runCli } from "./helpers/cli.js";
import { readPng } from "./helpers/png.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, delegate } from "./helpers/run.js";

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

/** Every start tag of the page that could load something (src, href, srcset, action, a url() in style). */
function loadingAttributes(page: string): string[] {
  return [...page.matchAll(/<[a-z][^>]*?\s(?:src|href|srcset|action|poster|data)\s*=[^>]*>|url\(/giu)].map((match) => match[0]);
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

  test(`the agent's tool calls are listed up to ${TOOL_CALLS_SHOWN}, with "and N more"`, () => {
    const time = (ms: number) => new Date(Date.parse("2026-12-01T10:00:00Z") + ms).toISOString();
    const events = Array.from({ length: TOOL_CALLS_SHOWN + 5 }, (_, i) => [
      { type: "agent.tool.started" as const, id: `t${i}`, name: "Bash", input: { command: `echo ${i} <b>` }, time: time(i * 10) },
      { type: "agent.tool.finished" as const, id: `t${i}`, ok: i !== 2, time: time(i * 10 + 5) },
    ]).flat();
    const view = timelineView({ kind: "events", events, startedAt: time(0) }).toString();
    expect(view).toContain(`The agent's tool calls (${TOOL_CALLS_SHOWN + 5})`);
    expect(view.match(/<b>Bash<\/b>/gu)).toHaveLength(TOOL_CALLS_SHOWN);
    expect(view).toContain("and 5 more (all in events.jsonl)");
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
