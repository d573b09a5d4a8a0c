import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ExternalCodingRunner } from "../src/run/runner.js";
import { type CliOutcome, expectUsageError, runCli, commandRunArgs } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, makeHarness, readJson } from "./helpers/run.js";

/**
 * Issue 12: the options the verdict will be built on (`--test-edits`, `--junit`, `--holdout-patch`), parsed,
 * validated and recorded. Bad values are a one-line usage error before anything is created; a held-out patch is
 * read when the options are resolved and only its path, sha256 and size are ever written down.
 */
const TASK = "fix the failing test";

interface Attempt {
  readonly outcome: CliOutcome;
  readonly root: string;
  readonly runsDir: string;
  readonly workspacesDir: string;
  readonly runDir: string;
}

/** `handoff run` of the command backend on `repo` with `--verify 'npm test'`, approved, as run id `r`. */
async function attempt(repo: string, extra: readonly string[], cwd?: string): Promise<Attempt> {
  const root = tempDir("handoff-verification-options");
  const runsDir = join(root, "runs");
  const workspacesDir = join(root, "ws");
  const args = commandRunArgs(
    repo,
    agent("fixes-add.sh"),
    ["--verify", "npm test", "--yes", "--runs-dir", runsDir, "--workspace-dir", workspacesDir, "--run-id", "r", ...extra],
    TASK,
  );
  const outcome = await runCli(args, cwd ? { cwd } : {});
  return { outcome, root, runsDir, workspacesDir, runDir: join(runsDir, "r") };
}

function expectRefused(run: Attempt, says: RegExp): void {
  expectUsageError(run.outcome, says);
  expect(readdirSync(run.root)).toEqual([]);
}

/** A small patch that adds a held-out test file; `marker` is text that must never reach the run directory. */
function holdoutPatch(dir: string, marker: string): string {
  const path = join(dir, "hidden-tests.patch");
  writeFileSync(
    path,
    `diff --git a/hidden.test.js b/hidden.test.js\nnew file mode 100644\n--- /dev/null\n+++ b/hidden.test.js\n@@ -0,0 +1 @@\n+// ${marker}\n`,
  );
  return path;
}

describe("--test-edits", () => {
  test("--test-edits with a value other than base, reject or allow is a usage error before anything is created", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    expectRefused(await attempt(repo, ["--test-edits", "sometimes"]), /--test-edits must be base, reject or allow, not 'sometimes'/);
  });

  test("a bad testEdits in .handoff.json is a usage error that names the file", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".handoff.json": JSON.stringify({ verify: ["npm test"], testEdits: "never" }) });
    expectRefused(await attempt(repo, []), /--test-edits \(from \.handoff\.json\) must be base, reject or allow, not 'never'/);
  });

  test("the default is base; .handoff.json testEdits is used, and the option wins over it; request.json records the policy", async () => {
    const plain = await makeRepo(FAILING_ADD_PROJECT);
    const byDefault = await attempt(plain, []);
    expect(byDefault.outcome.code, byDefault.outcome.stderr).toBe(0);
    expect(readJson(join(byDefault.runDir, "request.json"))).toMatchObject({ testEdits: "base", junit: [], holdouts: [], noVerify: false });

    const configured = await makeRepo({
      ...FAILING_ADD_PROJECT,
      ".handoff.json": JSON.stringify({ verify: ["npm test"], testEdits: "reject" }),
    });
    const fromFile = await attempt(configured, []);
    expect(readJson(join(fromFile.runDir, "request.json"))).toMatchObject({ testEdits: "reject" });
    const fromOption = await attempt(configured, ["--test-edits", "allow"]);
    expect(readJson(join(fromOption.runDir, "request.json"))).toMatchObject({ testEdits: "allow" });
  });
});

describe("--junit", () => {
  test.each([
    ["an absolute path", "/tmp/junit.xml", /must be a path relative to the checkout/],
    ["a path that climbs out of the checkout", "../junit.xml", /must name a file inside the checkout/],
    ["a path that climbs out after a directory", "reports/../../junit.xml", /must name a file inside the checkout/],
    ["the checkout itself", "./", /must name a file inside the checkout/],
  ])("--junit with %s is a usage error (bad_junit_path) before anything is created", async (_what, path, says) => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    expectRefused(await attempt(repo, ["--junit", path]), says);
  });

  test("a junit path in .handoff.json that climbs out of the checkout is a usage error that names the file", async () => {
    const repo = await makeRepo({
      ...FAILING_ADD_PROJECT,
      ".handoff.json": JSON.stringify({ verify: ["npm test"], junit: ["../../etc/junit.xml"] }),
    });
    expectRefused(
      await attempt(repo, []),
      /--junit \(from \.handoff\.json\) '\.\.\/\.\.\/etc\/junit\.xml' must name a file inside the checkout/,
    );
  });

  test("a library caller's junit path with a NUL byte is a UsageError bad_junit_path, and nothing is created", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const harness = makeHarness();
    const running = new ExternalCodingRunner().run({
      repo,
      task: TASK,
      backend: "command",
      agentCmd: "true",
      verify: ["npm test"],
      junit: ["a\0b.xml"],
      yes: true,
      ...harness,
    });
    await expect(running).rejects.toMatchObject({
      name: "UsageError",
      code: "bad_junit_path",
      message: expect.stringContaining("holds a NUL byte"),
    });
    expect(existsSync(harness.runsDir)).toBe(false);
    expect(existsSync(harness.workspacesDir)).toBe(false);
  });

  test("--junit is repeatable and normalised, replaces .handoff.json junit, and is recorded in request.json", async () => {
    const repo = await makeRepo({
      ...FAILING_ADD_PROJECT,
      ".handoff.json": JSON.stringify({ verify: ["npm test"], junit: ["from-config.xml"] }),
    });
    const fromFile = await attempt(repo, []);
    expect(fromFile.outcome.code, fromFile.outcome.stderr).toBe(0);
    expect(readJson(join(fromFile.runDir, "request.json"))).toMatchObject({ junit: ["from-config.xml"] });
    const fromOption = await attempt(repo, ["--junit", "reports/./unit.xml", "--junit", "e2e/../e2e.xml"]);
    expect(readJson(join(fromOption.runDir, "request.json"))).toMatchObject({ junit: ["reports/unit.xml", "e2e.xml"] });
  });
});

describe("--holdout-patch", () => {
  test("a missing --holdout-patch file is a usage error before anything is created", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    expectRefused(
      await attempt(repo, ["--holdout-patch", join(tempDir(), "nope.patch")]),
      /--holdout-patch .*nope\.patch cannot be read: no such file/,
    );
  });

  test("an empty --holdout-patch file is a usage error", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const empty = join(tempDir(), "empty.patch");
    writeFileSync(empty, "");
    expectRefused(await attempt(repo, ["--holdout-patch", empty]), /--holdout-patch .*empty\.patch is empty/);
  });

  test("a --holdout-patch that is a directory or a FIFO is refused as not a regular file, without blocking on the FIFO", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const dir = tempDir();
    expectRefused(await attempt(repo, ["--holdout-patch", dir]), /is not a regular file/);
    const fifo = join(dir, "pipe.patch");
    execFileSync("mkfifo", [fifo]);
    expectRefused(await attempt(repo, ["--holdout-patch", fifo]), /pipe\.patch is not a regular file/);
  });

  test("a --holdout-patch over 64 MiB is refused by its size, never read", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const huge = join(tempDir(), "huge.patch");
    writeFileSync(huge, "");
    truncateSync(huge, 65 * 1024 * 1024); // sparse: costs no disk
    expectRefused(await attempt(repo, ["--holdout-patch", huge]), /is 68157440 bytes; the most handoff reads is 67108864 \(64 MiB\)/);
  });

  test("a --holdout-patch inside the source repository, where the agent could read it, is refused, also through a link from outside", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    writeFileSync(join(repo, ".git", "hidden.patch"), "diff\n");
    expectRefused(
      await attempt(repo, ["--holdout-patch", join(repo, ".git", "hidden.patch")]),
      /is inside the source repository .*keep held-out patches outside/,
    );
    const link = join(tempDir(), "looks-outside.patch");
    symlinkSync(join(repo, ".git", "hidden.patch"), link);
    expectRefused(await attempt(repo, ["--holdout-patch", link]), /is inside the source repository/);
  });

  test("a --holdout-patch inside the runs directory or the workspace directory is refused", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const root = tempDir();
    mkdirSync(join(root, "runs"));
    writeFileSync(join(root, "runs", "hidden.patch"), "diff\n");
    const inRuns = await runCli(
      commandRunArgs(
        repo,
        "true",
        ["--verify", "npm test", "--yes", "--runs-dir", join(root, "runs"), "--holdout-patch", join(root, "runs", "hidden.patch")],
        TASK,
      ),
    );
    expectUsageError(inRuns, /is inside the runs directory/);
    mkdirSync(join(root, "ws"));
    writeFileSync(join(root, "ws", "hidden.patch"), "diff\n");
    const inWorkspaces = await runCli(
      commandRunArgs(
        repo,
        "true",
        [
          "--verify",
          "npm test",
          "--yes",
          "--runs-dir",
          join(root, "runs"),
          "--workspace-dir",
          join(root, "ws"),
          "--holdout-patch",
          join(root, "ws", "hidden.patch"),
        ],
        TASK,
      ),
    );
    expectUsageError(inWorkspaces, /is inside the workspace directory/);
    expect(readdirSync(join(root, "runs"))).toEqual(["hidden.patch"]);
    expect(readdirSync(join(root, "ws"))).toEqual(["hidden.patch"]);
  });

  test("request.json records each holdout's real path, sha256 and size, and no byte of its content reaches the run directory", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const dir = tempDir("handoff-holdouts");
    const marker = `held-out-${process.pid}-${Date.now()}`;
    const path = holdoutPatch(dir, marker);
    const bytes = readFileSync(path);
    // Given relative to the CLI's working directory, through a link: recorded by its real path, and the same file
    // given twice is one holdout (applied twice, it could never apply).
    symlinkSync(path, join(dir, "link.patch"));
    const run = await attempt(repo, ["--holdout-patch", "link.patch", "--holdout-patch", path], dir);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    const entry = {
      source: path,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      bytes: bytes.length,
      files: ["hidden.test.js"],
    };
    expect(readJson(join(run.runDir, "request.json")).holdouts).toEqual([entry]);
    for (const name of readdirSync(run.runDir)) expect(readFileSync(join(run.runDir, name), "utf8"), name).not.toContain(marker);
  });

  test("a repository cannot name its own held-out patches: holdoutPatches is not a .handoff.json key", async () => {
    const repo = await makeRepo({
      ...FAILING_ADD_PROJECT,
      ".handoff.json": JSON.stringify({ verify: ["npm test"], holdoutPatches: ["/tmp/x.patch"] }),
    });
    expectRefused(await attempt(repo, []), /\.handoff\.json: bad key 'holdoutPatches'/);
  });
});
