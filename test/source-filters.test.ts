import { execFileSync } from "node:child_process";
import { appendFileSync, chmodSync, existsSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { FAILING_ADD_PROJECT, gitIn, makeRepo, tempDir } from "./helpers/repo.js";
import { runCli, commandRunArgs } from "./helpers/cli.js";
import { type Harness, agent, delegateWithoutSandbox, makeHarness } from "./helpers/run.js";
import { expectVerifiedFix } from "./helpers/verdicts.js";

/**
 * Issue 11 item 6: the source's own git filters. handoff's reads of your repository (`git status` for the dirty
 * check and the source invariant) run no program from its config: every `filter.<driver>` it defines is switched
 * off for those calls (src/clone/source-filters.ts, threat-model.md G18). A repository that uses filters the git-lfs way
 * is neither refused nor changed, and a real change to a filtered file is still caught (the stat walk sees it).
 */
const VERIFY = { verify: ["npm test"] };

/** A filter program that leaves a marker in the harness's marker dir (which must stay empty) and then does `body`. */
function filterScript(harness: Harness, name: string, body: string): string {
  const path = join(tempDir("handoff-filters"), name);
  writeFileSync(path, `#!/bin/sh\n: > "${harness.markerDir}/${name}-$$"\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

/** Forgets the markers the fixture's own git calls left (the test's `git add` runs the filters, as it should). */
function clearMarkers(harness: Harness): void {
  for (const name of readdirSync(harness.markerDir)) rmSync(join(harness.markerDir, name));
}

/** Dates the files a second into the future, as an editor's save or a checkout in the same second would leave them to git. */
function touch(repo: string, ...paths: string[]): void {
  const later = Date.now() / 1000 + 1;
  for (const path of paths) utimesSync(join(repo, path), later, later);
}

/**
 * The failing-add project plus `count` `data/N.bin` files under `filter=<driver>`, committed while the driver
 * was `clean` (so the index holds what it made), then the driver's config set to `config`, and the files touched
 * so that any `git status` must read them again.
 */
async function filteredRepo(driver: string, clean: string, config: Record<string, string>, count = 20): Promise<string> {
  const repo = await makeRepo(FAILING_ADD_PROJECT);
  gitIn(repo, "config", `filter.${driver}.clean`, clean);
  writeFileSync(join(repo, ".gitattributes"), `*.bin filter=${driver} -text\n`);
  execFileSync("mkdir", [join(repo, "data")]);
  const files = Array.from({ length: count }, (_, i) => `data/${i}.bin`);
  for (const file of files) writeFileSync(join(repo, file), `payload ${file}\n`);
  gitIn(repo, "add", "-A");
  gitIn(repo, "commit", "-q", "-m", "filtered data");
  gitIn(repo, "config", "--unset", `filter.${driver}.clean`);
  for (const [key, value] of Object.entries(config)) gitIn(repo, "config", `filter.${driver}.${key}`, value);
  touch(repo, ...files);
  return repo;
}

describe("the source's own git filters", () => {
  test("G18: a clean filter in the source's .git/config never runs during handoff's reads of the source (it ran about 20 times a run)", async () => {
    const harness = makeHarness();
    const clean = filterScript(harness, "clean-filter", "exec cat");
    const repo = await filteredRepo("log", clean, { clean, smudge: "cat" });

    clearMarkers(harness);
    const run = await delegateWithoutSandbox(repo, agent("fixes-add.sh"), { ...VERIFY, harness });

    expect(run.payloadsRan).toEqual([]);
    expectVerifiedFix(run);
  });

  test("G18: a driver whose name holds '=' (which a -c override would cut short) is switched off too", async () => {
    const harness = makeHarness();
    const clean = filterScript(harness, "clean-filter", "exec cat");
    const repo = await filteredRepo("a=b", clean, { clean, smudge: "cat" }, 3);

    clearMarkers(harness);
    const run = await delegateWithoutSandbox(repo, agent("fixes-add.sh"), { ...VERIFY, harness });

    expect(run.payloadsRan).toEqual([]);
    expectVerifiedFix(run);
  });

  test("G18: a filter driver whose name is not UTF-8 (handoff cannot name it to git to switch it off) is a one-line error, exit 2, nothing created", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    appendFileSync(
      join(repo, ".git", "config"),
      Buffer.concat([Buffer.from('[filter "'), Buffer.from([0xff]), Buffer.from('"]\n\tclean = cat\n')]),
    );
    const runsDir = join(tempDir("handoff-runs"), "runs");

    const outcome = await runCli(
      commandRunArgs(repo, agent("fixes-add.sh"), ["--verify", "npm test", "--yes", "--runs-dir", runsDir], "fix it"),
    );

    expect(outcome.code, outcome.stderr).toBe(2);
    expect(outcome.stderr).toMatch(/^handoff: the repository's config names a filter driver whose name is not UTF-8 .*\n$/);
    expect(existsSync(runsDir)).toBe(false);
  });

  test("G18: a broken required .process filter in the source's config neither crashes handoff (exit 70) nor stops the run", async () => {
    const harness = makeHarness();
    const clean = filterScript(harness, "clean-filter", "exec cat");
    const broken = filterScript(harness, "process-filter", "echo garbage; exit 0");
    const repo = await filteredRepo("broken", clean, { process: broken, required: "true" });

    clearMarkers(harness);
    const outcome = await runCli(
      commandRunArgs(
        repo,
        agent("fixes-add.sh"),
        ["--verify", "npm test", "--yes", "--sandbox", "none", "--runs-dir", harness.runsDir],
        "fix the failing test",
      ),
    );

    expect(outcome.stderr).not.toContain("internal error");
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stdout).toContain("verified");
    expect(readdirSync(harness.markerDir)).toEqual([]);
  });

  test("G18: a git-lfs style repository (pointer blobs in the index, filter required) is not refused as dirty; files git cannot judge without the filter are flagged filtered_source_unverified", async () => {
    const harness = makeHarness();
    const pointer = filterScript(
      harness,
      "lfs-clean",
      `printf 'version https://git-lfs.github.com/spec/v1\\noid sha256:%s\\n' "$(sha256sum | cut -c1-64)"`,
    );
    const repo = await filteredRepo(
      "lfs",
      pointer,
      { clean: pointer, smudge: "cat", process: `${pointer} --process`, required: "true" },
      3,
    );
    expect(gitIn(repo, "cat-file", "-p", "HEAD:data/0.bin")).toContain("git-lfs.github.com/spec/v1");

    clearMarkers(harness);
    const run = await delegateWithoutSandbox(repo, agent("fixes-add.sh"), { ...VERIFY, harness });

    expectVerifiedFix(run);
    const warning = run.result.policy.warnings.find((finding) => finding.rule === "filtered_source_unverified");
    expect(warning?.message).toContain("data/0.bin");
    expect(run.result.policy.warnings.some((finding) => finding.rule === "dirty_source_not_cloned")).toBe(false);
  });

  test("G18: with the source's filters off, the source invariant still catches a write to a filtered file of the source", async () => {
    const harness = makeHarness();
    const clean = filterScript(harness, "clean-filter", "exec cat");
    const repo = await filteredRepo("log", clean, { clean, smudge: "cat" }, 2);

    clearMarkers(harness);
    const run = await delegateWithoutSandbox(repo, `${agent("fixes-add-and-writes-source.sh")} data/1.bin`, { ...VERIFY, harness });

    expect(run.result.terminalReason).toBe("source_repository_changed");
    expect(run.result.sourceInvariant.changed).toContain("data/1.bin");
    expect(run.payloadsRan).toEqual([]);
  });

  test("G18: a submodule's own filter does not run through handoff's status of the source, even with submodule.<name>.ignore=none", async () => {
    const harness = makeHarness();
    const clean = filterScript(harness, "submodule-filter", "exec cat");
    const sub = await makeRepo({ "a.txt": "in the submodule\n", ".gitattributes": "*.txt filter=sublog\n" });
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    gitIn(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sub");
    gitIn(repo, "commit", "-q", "-m", "a submodule");
    gitIn(repo, "config", "submodule.sub.ignore", "none");
    gitIn(join(repo, "sub"), "config", "filter.sublog.clean", clean);
    touch(repo, "sub/a.txt");

    clearMarkers(harness);
    const run = await delegateWithoutSandbox(repo, agent("fixes-add.sh"), { ...VERIFY, harness });

    expect(run.payloadsRan).toEqual([]);
    expectVerifiedFix(run);
  });

  test("G18: a source whose index git cannot read is a one-line error (exit 2) before anything is created, not a crash (exit 70)", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    writeFileSync(join(repo, ".git", "index"), "DIRC not an index");
    const runsDir = join(tempDir("handoff-runs"), "runs");

    const outcome = await runCli(
      commandRunArgs(repo, agent("fixes-add.sh"), ["--verify", "npm test", "--yes", "--runs-dir", runsDir], "fix it"),
    );

    expect(outcome.code, outcome.stderr).toBe(2);
    expect(outcome.stderr.trim().split("\n")).toHaveLength(1);
    expect(outcome.stderr).toMatch(/^handoff: git cannot read the status of .*: /);
    expect(existsSync(runsDir)).toBe(false);
  });
});
