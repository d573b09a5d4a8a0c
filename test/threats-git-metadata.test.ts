import { join } from "node:path";
import { mkdirSync, writeFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { extractAfter } from "./helpers/extract.js";
import { agent, delegateWithoutSandbox, makeHarness } from "./helpers/run.js";
import { expectHiddenFromClone, keptWorkspace, markers, naiveGit, withProcessEnv, writePayload } from "./helpers/traps.js";
import { FIX_LINE, expectRejected, expectVerifiedFix } from "./helpers/verdicts.js";

/**
 * docs/threat-model.md, rows G: code execution in handoff's own git calls. Each hostile agent fixes add() and plants something
 * in its clone's git metadata (or around it) that would run a payload inside a careless runner's git call. handoff
 * must still see the fix, run nothing, and leave the source untouched. Where it matters, the test then springs the
 * trap with a plain git call in the kept workspace, to prove the plant was live and the test is not vacuous.
 */

const VERIFY = { verify: ["npm test"] };

async function runHostile(script: string, options: Parameters<typeof delegateWithoutSandbox>[2] = {}) {
  const repo = await makeRepo(FAILING_ADD_PROJECT);
  const harness = makeHarness();
  const run = await delegateWithoutSandbox(repo, agent(script), { ...VERIFY, harness, keepWorkspace: true, ...options });
  return { repo, harness, run };
}

describe("G1–G7: config in the agent's git dir never runs in handoff's git calls", () => {
  test("G1, G11: an fsmonitor planted in the clone's config (with safe.directory=*) does not run; the fix is still extracted and verified", async () => {
    const { harness, run } = await runHostile("plants-fsmonitor-hook.sh");
    expectVerifiedFix(run);
    await naiveGit(keptWorkspace(run).workTree, ["status"]);
    expect(markers(harness)).toContain("fsmonitor");
  });

  test("G2: hooks planted in the clone's hooks/ dir never fire, not even post-index-change", async () => {
    const { harness, run } = await runHostile("plants-git-hooks.sh");
    expectVerifiedFix(run);
    await naiveGit(keptWorkspace(run).workTree, ["add", "-A"]);
    expect(markers(harness)).toContain("post-index-change");
  });

  test("G2: a core.hooksPath the agent set never fires", async () => {
    const { harness, run } = await runHostile("plants-hooks-path.sh");
    expectVerifiedFix(run);
    await naiveGit(keptWorkspace(run).workTree, ["add", "-A"]);
    expect(markers(harness)).toContain("hookspath-post-index-change");
  });

  test("G3: diff.external, a diff driver command and a textconv never run; the patch is git's own text diff", async () => {
    const { harness, run } = await runHostile("plants-diff-drivers.sh");
    expectVerifiedFix(run);
    expect(run.patch).toContain("diff --git a/.gitattributes b/.gitattributes");
    expect(run.result.policy.warnings).toContainEqual(expect.objectContaining({ path: ".gitattributes", rule: "git_config_file" }));
    await naiveGit(keptWorkspace(run).workTree, ["diff"]);
    expect(markers(harness).some((name) => name.startsWith("diff-"))).toBe(true);
  });

  test("G4: a filter driver with any name stays inert: staged bytes are the workspace bytes, nothing runs", async () => {
    const { harness, run } = await runHostile("plants-filter-driver.sh");
    expectVerifiedFix(run);
    expect(run.result.policy.violations).toEqual([]);
    await naiveGit(keptWorkspace(run).workTree, ["add", "-A"]);
    expect(markers(harness).some((name) => name.startsWith("filter-"))).toBe(true);
  });

  test("G5: signing turned on with a payload gpg program never signs or verifies anything", async () => {
    const { harness, run } = await runHostile("plants-gpg-program.sh");
    expectVerifiedFix(run);
    await naiveGit(keptWorkspace(run).workTree, ["commit", "-qam", "x"]);
    expect(markers(harness)).toContain("gpg-program");
  });

  test("G6: a planted pager, editor, ssh command, credential helper and askpass never run", async () => {
    const { harness, run } = await runHostile("plants-pager-editor-credential-programs.sh");
    expectVerifiedFix(run);
    await naiveGit(keptWorkspace(run).workTree, ["commit", "--allow-empty", "-q"]);
    expect(markers(harness)).toContain("core-editor");
  });

  test("G7: an ext:: remote the agent enabled is never contacted", async () => {
    const { harness, run } = await runHostile("plants-ext-transport.sh");
    expectVerifiedFix(run);
    await naiveGit(keptWorkspace(run).workTree, ["fetch", "-q", "origin"]);
    expect(markers(harness).length).toBeGreaterThan(0);
  });
});

describe("G8–G9: git metadata below the top level of the workspace", () => {
  test("G8: a nested repository with its own fsmonitor is rejected as nested_repository and its fsmonitor never runs", async () => {
    const { harness, run } = await runHostile("adds-nested-repo-with-fsmonitor.sh");
    expectRejected(run, "nested_repository", "vendor/lib");
    expect(run.patch).not.toContain("Subproject commit");
    await naiveGit(keptWorkspace(run).workTree, ["status"]);
    expect(markers(harness)).toContain("nested-fsmonitor");
  });

  test("G9: a .git dir and a .git gitfile (aimed at the source) planted in subdirectories are rejected, never used", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, "src/util.js": "export const util = 1;\n" });
    const harness = makeHarness();
    const run = await delegateWithoutSandbox(repo, agent("plants-git-dir-in-subdirectory.sh"), { ...VERIFY, harness, keepWorkspace: true });
    expectRejected(run, "nested_repository", "src");
    const nested = run.result.policy.violations.filter((v) => v.rule === "nested_repository").map((v) => v.path);
    expect(nested.sort()).toEqual(["docs", "src"]);
    await naiveGit(join(keptWorkspace(run).workTree, "src"), ["status"]);
    expect(markers(harness)).toContain("subdir-fsmonitor");
  });
});

describe("G10: the workspace's .git entry", () => {
  test("G10: a gitfile repointed at the source is git_metadata_tampered, and handoff's staging never writes the source", async () => {
    const { run } = await runHostile("repoints-gitdir-at-source.sh");
    expectRejected(run, "git_metadata_tampered", ".git"); // the patch is extracted from handoff's own git dir all the same
    expect(run.result.policy.violations[0]).toMatchObject({ path: ".git", rule: "git_metadata_tampered" });
    expect(run.result.sourceInvariant).toEqual({ matched: true, changed: [] });
  });

  test("G10: when the agent's own git add writes the source's index through a repointed gitfile, the run ends source_repository_changed", async () => {
    const { run } = await runHostile("repoints-gitdir-at-source-and-stages.sh");
    expect(run.result.terminalReason).toBe("source_repository_changed");
    expect(run.result.detail).toBe("source_modified");
    expect(run.result.sourceInvariant.matched).toBe(false);
    expect(run.result.sourceInvariant.changed).toContain(".git/index");
    expect(run.sourceChanged).toContain(".git/index");
    expect(run.result.verification.ran).toBe(false);
    expect(run.payloadsRan).toEqual([]);
  });

  test("G10: a .git replaced by a symbolic link to the source's git dir is git_metadata_tampered", async () => {
    // The rule on extraction alone; the repointed gitfile above runs it end to end.
    const run = await extractAfter(await makeRepo(FAILING_ADD_PROJECT), agent("replaces-gitfile-with-symlink-to-source.sh"));
    expect(run.extraction.violations).toContainEqual(expect.objectContaining({ rule: "git_metadata_tampered", path: ".git" }));
    expect(run.extraction.violations[0]?.message).toContain("symbolic link");
    expect(run.patch).toContain(FIX_LINE);
    expect(run.payloadsRan).toEqual([]);
  });

  test("G10: a .git replaced by a hostile git directory is git_metadata_tampered and its fsmonitor never runs", async () => {
    const { harness, run } = await runHostile("replaces-gitfile-with-hostile-git-dir.sh");
    expectRejected(run, "git_metadata_tampered", ".git");
    expect(run.result.policy.violations[0]?.message).toContain("directory");
    await naiveGit(keptWorkspace(run).workTree, ["status"]);
    expect(markers(harness)).toContain("replaced-gitdir-fsmonitor");
  });
});

describe("G12–G14: config outside any repository", () => {
  test("G12: the user's global config and GIT_* variables do not shape handoff's patch or run anything", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const harness = makeHarness();
    const hostile = tempDir("handoff-hostile-user");
    const payloads = join(hostile, "payloads");
    const hooks = join(hostile, "hooks");
    writePayload(hooks, harness.markerDir, "post-index-change");
    const config = [
      "[core]",
      `\tfsmonitor = ${writePayload(payloads, harness.markerDir, "global-fsmonitor")}`,
      `\thooksPath = ${hooks}`,
      `\tpager = ${writePayload(payloads, harness.markerDir, "global-pager")}`,
      "[diff]",
      "\tnoprefix = true",
      "\tmnemonicPrefix = true",
      "\trenames = copies",
      `\texternal = ${writePayload(payloads, harness.markerDir, "global-diff-external")}`,
      "[color]",
      "\tui = always",
      "\tdiff = always",
      "[init]",
      `\ttemplateDir = ${hostile}/template`,
      "",
    ].join("\n");
    writeFileSync(join(hostile, "gitconfig"), config);
    mkdirSync(join(hostile, "template", "hooks"), { recursive: true });
    writePayload(join(hostile, "template", "hooks"), harness.markerDir, "post-index-change");
    const env = { HOME: hostile, GIT_CONFIG_GLOBAL: join(hostile, "gitconfig") };
    withProcessEnv({
      ...env,
      GIT_CONFIG_SYSTEM: join(hostile, "gitconfig"),
      GIT_CONFIG_PARAMETERS: `'core.fsmonitor'='${writePayload(payloads, harness.markerDir, "env-fsmonitor")}'`,
      GIT_CONFIG_COUNT: "1",
      GIT_CONFIG_KEY_0: "diff.external",
      GIT_CONFIG_VALUE_0: writePayload(payloads, harness.markerDir, "env-diff-external"),
      GIT_EXTERNAL_DIFF: writePayload(payloads, harness.markerDir, "env-external-diff"),
      GIT_PAGER: writePayload(payloads, harness.markerDir, "env-pager"),
      GIT_EDITOR: writePayload(payloads, harness.markerDir, "env-editor"),
      GIT_SSH_COMMAND: writePayload(payloads, harness.markerDir, "env-ssh"),
      GIT_TEMPLATE_DIR: join(hostile, "template"),
      GIT_TRACE: join(harness.markerDir, "git-trace"),
      GIT_TRACE2_EVENT: join(harness.markerDir, "git-trace2"),
      GIT_INDEX_FILE: join(hostile, "bogus.index"),
      GIT_OBJECT_DIRECTORY: join(hostile, "bogus-objects"),
      GIT_ALTERNATE_OBJECT_DIRECTORIES: join(hostile, "bogus-alternates"),
      GIT_NAMESPACE: "bogus",
    });
    const run = await delegateWithoutSandbox(repo, agent("fixes-add.sh"), { ...VERIFY, harness });
    expectVerifiedFix(run);
    expect(run.patch.startsWith("diff --git a/math.js b/math.js\n")).toBe(true);
    expect(run.patch).toContain("--- a/math.js\n+++ b/math.js\n");
    expect(run.patch).not.toContain("\x1b");
    await naiveGit(repo, ["status"], env);
    expect(markers(harness)).toContain("global-fsmonitor");
  });

  test("G13: $XDG_CONFIG_HOME/git/ignore and attributes neither hide a new file nor turn code into a binary diff", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const harness = makeHarness();
    const xdg = tempDir("handoff-hostile-xdg");
    mkdirSync(join(xdg, "git"));
    writeFileSync(join(xdg, "git", "ignore"), "helper.js\n");
    writeFileSync(join(xdg, "git", "attributes"), "*.js -diff filter=xdgfilter\n");
    const clean = writePayload(join(xdg, "payloads"), harness.markerDir, "xdg-filter-clean");
    writeFileSync(join(xdg, "git", "config"), `[filter "xdgfilter"]\n\tclean = ${clean}\n`);
    withProcessEnv({ XDG_CONFIG_HOME: xdg, HOME: tempDir("handoff-empty-home") });
    const run = await delegateWithoutSandbox(repo, agent("fixes-add-with-new-helper.sh"), { ...VERIFY, harness, keepWorkspace: true });
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    expect(run.result.patch?.files).toContainEqual({ path: "helper.js", change: "added", additions: 3, deletions: 0 });
    expect(run.patch).toContain("+  return plus(a, b);");
    expect(run.patch).not.toContain("Binary files");
    expect(run.sourceChanged).toEqual([]);
    expect(run.payloadsRan).toEqual([]);
    const shown = await naiveGit(keptWorkspace(run).workTree, ["status", "--porcelain", "--untracked-files=all"], { XDG_CONFIG_HOME: xdg });
    expect(shown.stdout).not.toContain("helper.js");
    expect(markers(harness)).toContain("xdg-filter-clean");
  });

  test("G14: git config the agent writes in its HOME (~/.gitconfig, ~/.config/git) never reaches handoff's git calls", async () => {
    const { harness, run } = await runHostile("plants-git-config-in-home.sh");
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    expect(run.result.patch?.files.map((f) => f.path).sort()).toEqual(["helper.js", "math.js"]);
    expect(run.patch).toContain("diff --git a/helper.js b/helper.js");
    expect(run.patch).not.toContain("Binary files");
    expect(run.patch).not.toContain("\x1b");
    expect(run.sourceChanged).toEqual([]);
    expect(run.payloadsRan).toEqual([]);
    const { workTree, home } = keptWorkspace(run);
    const status = await naiveGit(workTree, ["status", "--porcelain"], { HOME: home });
    expect(status.stdout).not.toContain("helper.js");
    expect(markers(harness)).toContain("home-fsmonitor");
  });
});

describe("G15: handoff's own git dirs", () => {
  test("G15: config, hooks and attributes planted in handoff's pristine store never run, and the write is git_metadata_tampered", async () => {
    const { run } = await runHostile("reaches-handoff-pristine-store.sh");
    expectRejected(run, "git_metadata_tampered", ""); // a write outside the clone has no workspace path
  });

  test("G15: a test object swapped in handoff's pristine store is caught before verification could run the forged test", async () => {
    const { run } = await runHostile("swaps-test-object-in-pristine-store.sh");
    // This agent does not fix add(), so its patch holds no FIX_LINE to look for.
    expectRejected(run, "git_metadata_tampered", "", { patchSaved: false });
  });

  test("G15: an agent whose git re-writes objects that already exist (stash, revert, commit) is not mistaken for tampering", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const script = [
      "echo '// scratch' >> math.js && git stash -q && git stash pop -q && git checkout -- math.js && git add -A",
      "git commit -q --allow-empty -m wip && git reset -q --soft HEAD~1 && sed -i 's/a - b/a + b/' math.js",
    ].join(" && ");
    const run = await delegateWithoutSandbox(repo, script, VERIFY);
    expectVerifiedFix(run);
  });
});

describe("G16–G17", () => {
  test("G16: a replace ref that makes the base look like the fixed tree does not hide the fix", async () => {
    const { run } = await runHostile("adds-replace-ref.sh");
    expectVerifiedFix(run);
    await expectHiddenFromClone(keptWorkspace(run).workTree);
  });

  test("G17: file names that look like git options or pathspec magic are staged as plain paths", async () => {
    const { run } = await runHostile("names-files-like-git-options-and-pathspecs.sh");
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    expect(run.result.patch?.files.map((f) => f.path).sort()).toEqual([
      "--exec=touch pwned",
      "--output=pwned.txt",
      "-n",
      ":(exclude)math.js",
      "math.js",
    ]);
    expect(run.patch).toContain(FIX_LINE);
    expect(run.sourceChanged).toEqual([]);
    expect(run.payloadsRan).toEqual([]);
  });
});
