import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { DirtySourceError, UsageError } from "../src/lib/errors.js";
import { ExternalCodingRunner } from "../src/run/runner.js";
import { FAILING_ADD_PROJECT, gitIn, makeRepo } from "./helpers/repo.js";
import { agent, delegateWithoutSandbox, makeHarness } from "./helpers/run.js";

/** Plain git in the fixture repo, as the user would run it (the repo is ours). */
function sha256Of(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/** Sets a file's mtime 10 s back and refreshes the index, so git's racy-clean check cannot rescue a later write. */
function ageFile(repo: string, path: string): void {
  const past = new Date(Date.now() - 10_000);
  utimesSync(join(repo, path), past, past);
  gitIn(repo, "update-index", "--refresh");
}

function expectSourceChanged(
  result: { terminalReason: string; detail: string | null; status: string; sourceInvariant: { matched: boolean; changed: string[] } },
  ...paths: string[]
) {
  expect(result.terminalReason).toBe("source_repository_changed");
  expect(result.detail).toBe("source_modified");
  expect(result.status).toBe("failed");
  expect(result.sourceInvariant.matched).toBe(false);
  for (const path of paths) expect(result.sourceInvariant.changed).toContain(path);
}

describe("the source invariant (docs/threat-model.md, rows S)", () => {
  test("S1: handoff's own run leaves the source byte-identical, .git/index included, even with a stale index", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    // A stat-stale index entry: a plain `git status` here would refresh and rewrite .git/index.
    const later = new Date(Date.now() + 5_000);
    utimesSync(join(repo, "math.js"), later, later);
    const indexBefore = sha256Of(join(repo, ".git/index"));

    const run = await delegateWithoutSandbox(repo, agent("fixes-add.sh"), { verify: ["npm test"] });

    expect(run.result.terminalReason).toBe("verified");
    expect(run.result.sourceInvariant).toEqual({ matched: true, changed: [] });
    expect(run.sourceChanged).toEqual([]);
    expect(sha256Of(join(repo, ".git/index"))).toBe(indexBefore);
    // The control: the index really was stale, so only handoff's read-only status kept it intact.
    gitIn(repo, "status", "--porcelain");
    expect(sha256Of(join(repo, ".git/index"))).not.toBe(indexBefore);
  });

  test("an agent writing a source file by absolute path ends source_repository_changed, overriding a good patch", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, `${agent("fixes-add-and-writes-source.sh")} test.js`, { verify: ["npm test"] });

    expectSourceChanged(run.result, "test.js");
    // Everything else about the run was fine: a valid fix with no violations. The changed source still wins.
    expect(run.result.patch?.files.map((file) => file.path)).toEqual(["math.js"]);
    expect(run.result.policy.violations).toEqual([]);
    expect(run.result.verification.ran).toBe(false);
    expect(run.result.summary).toContain("test.js");
    expect(run.sourceChanged).toContain("test.js");
    const events = readFileSync(join(run.runDir, "events.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(events.find((event) => event.type === "source.changed")).toMatchObject({
      when: "after_agent",
      changed: expect.arrayContaining(["test.js"]),
    });
  });

  test("S6: a write into a submodule's work tree is caught although the user set submodule.<name>.ignore=all", async () => {
    const library = await makeRepo({ "lib.js": "export const lib = 1;\n" });
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    gitIn(repo, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add", library, "vendor/lib");
    gitIn(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "add submodule");
    gitIn(repo, "config", "submodule.vendor/lib.ignore", "all");
    const run = await delegateWithoutSandbox(repo, `${agent("fixes-add-and-writes-source.sh")} vendor/lib/lib.js`, {
      verify: ["npm test"],
    });
    expect(gitIn(repo, "status", "--porcelain")).toBe(""); // git itself is blind to it
    expectSourceChanged(run.result, "vendor/lib/lib.js");
  });

  test("S2: a same-size write with its mtime restored is caught although the user set core.trustctime=false", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    gitIn(repo, "config", "core.trustctime", "false");
    ageFile(repo, "math.js");
    const before = statSync(join(repo, "math.js"), { bigint: true });

    const run = await delegateWithoutSandbox(repo, agent("fixes-add-and-restores-source-mtime.sh"), { verify: ["npm test"] });

    const after = statSync(join(repo, "math.js"), { bigint: true });
    // The premise: size, inode and mtime are what they were, and git itself sees nothing.
    expect([after.size, after.ino, after.mtimeNs]).toEqual([before.size, before.ino, before.mtimeNs]);
    expect(readFileSync(join(repo, "math.js"), "utf8")).toContain("a + b");
    expect(gitIn(repo, "--no-optional-locks", "status", "--porcelain")).toBe("");
    expectSourceChanged(run.result, "math.js");
  });

  test.each([
    ["an existing ignored file", "node_modules/x/index.js"],
    ["a new ignored file", ".env"],
  ])("S4: a write to %s in the source is caught", async (_what, path) => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".gitignore": "node_modules/\n.env\n" });
    mkdirSync(join(repo, "node_modules/x"), { recursive: true });
    writeFileSync(join(repo, "node_modules/x/index.js"), "module.exports = 1;\n");
    expect(gitIn(repo, "status", "--porcelain")).toBe("");

    const run = await delegateWithoutSandbox(repo, `${agent("fixes-add-and-writes-source.sh")} ${path}`, { verify: ["npm test"] });
    expectSourceChanged(run.result, path);
  });

  test("S4: a write to an untracked file of a dirty source (--allow-dirty) is caught", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    writeFileSync(join(repo, "notes.txt"), "my notes\n");
    const run = await delegateWithoutSandbox(repo, `${agent("fixes-add-and-writes-source.sh")} notes.txt`, {
      verify: ["npm test"],
      allowDirty: true,
    });
    expectSourceChanged(run.result, "notes.txt");
  });

  test("S5: a write to a file the user marked skip-worktree (invisible to git status) is caught", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    gitIn(repo, "update-index", "--skip-worktree", "math.js");
    const run = await delegateWithoutSandbox(repo, `${agent("fixes-add-and-writes-source.sh")} math.js`, { verify: ["npm test"] });
    expect(gitIn(repo, "status", "--porcelain")).toBe("");
    expectSourceChanged(run.result, "math.js");
  });

  test.each([
    ["a hook added", "hook", [".git/hooks/post-checkout"]],
    ["the config edited", "config", [".git/config"]],
    ["a branch moved", "ref", ["(HEAD commit)", "(refs)", ".git/refs/heads/main"]],
    ["another branch checked out", "branch", ["(checked-out branch)", "(refs)", ".git/HEAD"]],
  ])("S3: a change under the source's .git (%s) is caught", async (_what, kind, paths) => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, `${agent("fixes-add-and-tampers-source-git.sh")} ${kind}`, { verify: ["npm test"] });
    expectSourceChanged(run.result, ...paths);
  });
});

describe("a dirty source", () => {
  test("with --allow-dirty the run goes ahead, the uncommitted changes stay out of the clone, and result.json says so", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    writeFileSync(join(repo, "test.js"), `${readFileSync(join(repo, "test.js"), "utf8")}// DIRTY LOCAL EDIT\n`);
    writeFileSync(join(repo, "scratch.txt"), "DIRTY untracked\n");

    const run = await delegateWithoutSandbox(repo, agent("fixes-add.sh"), { verify: ["npm test"], allowDirty: true });

    expect(run.result.terminalReason).toBe("verified");
    expect(run.result.patch?.files.map((file) => file.path)).toEqual(["math.js"]);
    expect(run.patch).not.toContain("DIRTY");
    const warning = run.result.policy.warnings.find((finding) => finding.rule === "dirty_source_not_cloned");
    expect(warning?.message).toContain("test.js");
    expect(warning?.message).toContain("scratch.txt");
    expect(run.sourceChanged).toEqual([]);
  });

  test("without --allow-dirty the run is refused with DirtySourceError and no run directory", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    writeFileSync(join(repo, "math.js"), "export const add = (a, b) => a + b;\n");
    const harness = makeHarness();
    const running = new ExternalCodingRunner().run({
      repo,
      task: "fix it",
      backend: "command",
      agentCmd: agent("fixes-add.sh"),
      verify: ["npm test"],
      yes: true,
      runsDir: harness.runsDir,
      workspacesDir: harness.workspacesDir,
    });
    const error = await running.then(
      () => null,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(DirtySourceError);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as DirtySourceError).code).toBe("dirty_source");
    expect((error as DirtySourceError).paths).toEqual(["math.js"]);
    expect((error as Error).message).toMatch(/commit them or set allowDirty: true$/);
    expect(existsSync(harness.runsDir)).toBe(false);
    expect(existsSync(harness.workspacesDir)).toBe(false);
  });
});
