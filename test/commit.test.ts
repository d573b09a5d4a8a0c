import { chmodSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { commandRunArgs, expectUsageError, runCli } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, fingerprintTree, gitIn, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, delegate, makeHarness } from "./helpers/run.js";

/**
 * Issue 17 item 1: `handoff apply --commit` makes a commit of a verified run's patch on a new branch whose parent is
 * the run's base commit, with plumbing only: the user's branch, HEAD, index, work tree and stash stay as they were.
 */
const TRAILERS = /^Handoff-Run: (\S+)\nHandoff-Verdict: verified\nHandoff-Backend: command\nHandoff-Model: default\n$/;

async function verifiedRun(repo: string): Promise<{ runDir: string; runId: string; base: string }> {
  const run = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test"], harness: makeHarness() });
  expect(run.result.terminalReason, run.result.summary).toBe("verified");
  return { runDir: run.runDir, runId: run.result.runId, base: run.result.repo.baseCommit };
}

/** Everything of the user's that --commit must leave alone: the work tree (bytes, modes, times), HEAD, index, branches, stash. */
function userState(repo: string, made?: string): Record<string, unknown> {
  const tree = [...fingerprintTree(repo)].filter(([path]) => path !== ".git" && !path.startsWith(".git/"));
  return {
    tree,
    head: readFileSync(join(repo, ".git", "HEAD"), "latin1"),
    index: readFileSync(join(repo, ".git", "index")).toString("base64"),
    branches: gitIn(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/stash")
      .split("\n")
      .filter((line) => !line.startsWith(`refs/heads/${made} `)),
    stash: gitIn(repo, "stash", "list"),
  };
}

function trailersOf(repo: string, rev: string): string {
  return gitIn(repo, "log", "-1", "--format=%(trailers)", rev).replace(/\n+$/, "\n");
}

describe("handoff apply --commit", () => {
  test("commits a verified run on a new branch at its base, with its trailers, and leaves the user's branch, HEAD, index, work tree and stash byte-identical", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await verifiedRun(repo);
    // A user in the middle of other work: another branch checked out, a stash, a staged change, a dirty file, an untracked one.
    gitIn(repo, "checkout", "-q", "-b", "other");
    writeFileSync(join(repo, "math.js"), "stashed\n");
    gitIn(repo, "stash", "-q");
    writeFileSync(join(repo, "notes.txt"), "staged\n");
    gitIn(repo, "add", "notes.txt");
    writeFileSync(join(repo, "math.js"), "export function add(a, b) {\n  return 0; // my own edit\n}\n");
    writeFileSync(join(repo, "scratch.txt"), "untracked\n");
    chmodSync(join(repo, "scratch.txt"), 0o600);
    const before = userState(repo);

    const committed = await runCli(["apply", run.runDir, "--commit", "--branch", "fix/add"]);
    expect(committed.code, committed.stderr).toBe(0);
    const commit = gitIn(repo, "rev-parse", "refs/heads/fix/add").trim();
    expect(committed.stdout).toBe(`branch fix/add\ncommit ${commit}\nfile math.js\n`);
    expect(committed.stderr).toMatch(
      /^handoff: committed 1 file\(s\) on the new branch fix\/add at the run's base [0-9a-f]{12}; your branch/,
    );
    expect(userState(repo, "fix/add")).toEqual(before);

    expect(gitIn(repo, "rev-parse", "fix/add^").trim()).toBe(run.base);
    expect(gitIn(repo, "diff", "--name-only", run.base, "fix/add")).toBe("math.js\n");
    expect(gitIn(repo, "show", "fix/add:math.js")).toContain("return a + b;");
    expect(trailersOf(repo, "fix/add")).toMatch(TRAILERS);
    expect(trailersOf(repo, "fix/add")).toContain(`Handoff-Run: ${run.runId}\n`);
    expect(gitIn(repo, "log", "-1", "--format=%s%n%an <%ae>", "fix/add")).toBe("fix the failing test\nFixture <fixture@example.invalid>\n");
  });

  test("the same run makes the same commit id again (dated the run's end), and --json says what was made", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await verifiedRun(repo);
    const first = await runCli(["apply", run.runDir, "--commit", "--json"]);
    expect(first.code, first.stderr).toBe(0);
    const made = JSON.parse(first.stdout) as Record<string, unknown>;
    expect(made).toMatchObject({ branch: `handoff/${run.runId}`, baseCommit: run.base, files: ["math.js"], pushedTo: null });
    const second = await runCli(["apply", run.runDir, "--commit", "--json", "--branch", "again"]);
    expect(second.code, second.stderr).toBe(0);
    expect((JSON.parse(second.stdout) as Record<string, unknown>).commit).toBe(made.commit);
  });

  test("--message replaces the subject and body; the trailers stay", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await verifiedRun(repo);
    const committed = await runCli(["apply", run.runDir, "--commit", "--message", "Fix add()\n\nIt subtracted.\nHandoff-Run: forged"]);
    expect(committed.code, committed.stderr).toBe(0);
    const message = gitIn(repo, "log", "-1", "--format=%B", `handoff/${run.runId}`);
    expect(message).toMatch(/^Fix add\(\)\n\nIt subtracted\.\nHandoff-Run: forged\n\nHandoff-Run: /);
    expect(trailersOf(repo, `handoff/${run.runId}`)).toMatch(TRAILERS);
  });

  test("refuses an unverified run, an existing branch, a modified patch and a base commit the repository lacks (exit 1, one line)", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const failed = await delegate(repo, agent("does-nothing.sh"), { verify: ["npm test"] });
    expect(failed.result.terminalReason).not.toBe("verified");
    const unverified = await runCli(["apply", failed.runDir, "--commit"]);
    expect(unverified.code).toBe(1);
    expect(unverified.stderr).toMatch(/^handoff: apply refused: run \S+ ended \w+; only a verified run can be applied\n$/);

    const run = await verifiedRun(repo);
    gitIn(repo, "branch", "taken");
    const taken = await runCli(["apply", run.runDir, "--commit", "--branch", "taken"]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toMatch(/^handoff: apply refused: branch taken already exists in .*; name another with --branch\n$/);

    const elsewhere = await makeRepo({ "README.md": "another history\n" });
    const missing = await runCli(["apply", run.runDir, "--commit", "-C", elsewhere]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^handoff: apply refused: the run's base commit [0-9a-f]{40} is not in .*; fetch it first\n$/);
    expect(gitIn(elsewhere, "for-each-ref", "refs/heads")).not.toContain("handoff/");

    writeFileSync(join(run.runDir, "changes.patch"), readFileSync(join(run.runDir, "changes.patch"), "utf8").replace("a + b", "a * b"));
    const modified = await runCli(["apply", run.runDir, "--commit"]);
    expect(modified.code).toBe(1);
    expect(modified.stderr).toMatch(/^handoff: apply refused: changes\.patch does not match the sha256 recorded in result\.json/);
    expect(gitIn(repo, "for-each-ref", "--format=%(refname)", "refs/heads")).toBe("refs/heads/main\nrefs/heads/taken\n");
  });

  test("--branch, --message and --push without --commit and a branch name git refuses are usage errors; no git identity exits 78", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await verifiedRun(repo);
    expectUsageError(await runCli(["apply", run.runDir, "--branch", "x"]), "--branch goes with --commit");
    expectUsageError(await runCli(["apply", run.runDir, "--push", "origin"]), "--push goes with --commit");
    expectUsageError(await runCli(["apply", run.runDir, "--commit", "--branch", "a..b"]), "'a..b' is not a branch name git accepts");
    expectUsageError(await runCli(["apply", run.runDir, "--commit", "--branch", "@{-1}"]), "is not a branch name git accepts");
    gitIn(repo, "config", "--unset", "user.name");
    gitIn(repo, "config", "--unset", "user.email");
    const home = tempDir("handoff-empty-home");
    const noIdentity = await runCli(["apply", run.runDir, "--commit"], { env: { HOME: home, XDG_CONFIG_HOME: home } });
    expect(noIdentity.code, noIdentity.stderr).toBe(78);
    expect(noIdentity.stdout).toBe("");
    expect(noIdentity.stderr).toMatch(/^handoff: no git identity to commit as: set one with git config user\.email .*\n$/);
    const asJson = await runCli(["apply", run.runDir, "--commit", "--json"], { env: { HOME: home, XDG_CONFIG_HOME: home } });
    expect(asJson.code).toBe(78);
    expect(JSON.parse(asJson.stdout)).toEqual({ error: { code: "no_identity", message: expect.stringMatching(/^no git identity/) } });
    expect(gitIn(repo, "for-each-ref", "--format=%(refname)", "refs/heads")).toBe("refs/heads/main\n");
  });

  test("--push pushes that branch alone to a local bare repository; a remote that has the branch, or no such remote, is a refusal naming it", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await verifiedRun(repo);
    const remote = join(tempDir("handoff-remote"), "remote.git");
    gitIn(repo, "init", "-q", "--bare", remote);
    const pushed = await runCli(["apply", run.runDir, "--commit", "--branch", "fix/add", "--push", remote]);
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(pushed.stderr).toContain(`, pushed to ${remote};`);
    expect(gitIn(remote, "for-each-ref", "--format=%(refname) %(objectname)")).toBe(
      `refs/heads/fix/add ${gitIn(repo, "rev-parse", "fix/add")}`,
    );

    gitIn(repo, "push", "-q", remote, "main:refs/heads/theirs");
    const theirs = await runCli(["apply", run.runDir, "--commit", "--branch", "theirs", "--push", remote]);
    expect(theirs.code).toBe(1);
    expect(theirs.stderr).toMatch(
      new RegExp(`^handoff: apply refused: branch theirs was made here, but pushing it to ${remote} failed: .*(stale info|rejected)`),
    );
    expect(gitIn(remote, "rev-parse", "theirs")).toBe(gitIn(repo, "rev-parse", "main"));

    const nowhere = await runCli(["apply", run.runDir, "--commit", "--branch", "lost", "--push", join(remote, "..", "absent.git")]);
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toMatch(
      /pushing it to .*absent\.git failed: .*(does not appear to be a git repository|Could not read from remote)/,
    );
  });

  test("hooks of the repository (core.hooksPath and .git/hooks) never run, not even on the push", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await verifiedRun(repo);
    const markers = tempDir("handoff-hook-markers");
    const hooks = join(tempDir("handoff-hooks"), "hooks");
    mkdirSync(hooks);
    for (const dir of [hooks, join(repo, ".git", "hooks")]) {
      for (const hook of [
        "reference-transaction",
        "post-commit",
        "pre-commit",
        "commit-msg",
        "pre-push",
        "post-index-change",
        "post-checkout",
      ]) {
        writeFileSync(join(dir, hook), `#!/bin/sh\ntouch '${markers}/${hook}'\n`);
        chmodSync(join(dir, hook), 0o755);
      }
    }
    gitIn(repo, "config", "core.hooksPath", hooks);
    const remote = join(tempDir("handoff-remote"), "remote.git");
    gitIn(repo, "init", "-q", "--bare", remote);
    const pushed = await runCli(["apply", run.runDir, "--commit", "--push", remote]);
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(readdirSync(markers)).toEqual([]);
  });

  test("of a candidates run, the commit is the winner's: its subject is the task, and its trailers and branch name the run and the candidate", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runsDir = join(tempDir("handoff-commit-candidates"), "runs");
    const ran = await runCli(
      commandRunArgs(
        repo,
        agent("fixes-add.sh"),
        ["--yes", "--runs-dir", runsDir, "--run-id", "r", "--candidates", "2", "--verify", "npm test"],
        "make add() return the sum",
      ),
    );
    expect(ran.code, ran.stderr).toBe(0);
    const committed = await runCli(["apply", join(runsDir, "r"), "--commit"]);
    expect(committed.code, committed.stderr).toBe(0);
    // The trailers and the default branch name the run a reviewer can `handoff show`, and which candidate it was.
    const winner = JSON.parse(readFileSync(join(runsDir, "r", "result.json"), "utf8")).winner;
    expect(gitIn(repo, "log", "-1", "--format=%s", "handoff/r").trim()).toBe("make add() return the sum");
    expect(trailersOf(repo, "handoff/r")).toBe(
      `Handoff-Run: r\nHandoff-Verdict: verified\nHandoff-Backend: command\nHandoff-Model: default\nHandoff-Candidate: ${winner}\n`,
    );
  });
});
