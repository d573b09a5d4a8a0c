import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ExternalCodingRunner } from "../src/run/runner.js";
import { type CliOutcome, expectUsageError, runCli, commandRunArgs } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, gitIn, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, makeHarness, readJson } from "./helpers/run.js";

/**
 * Issue 12 item 6: nothing verified is not verified. A run needs a verify command (option or `.handoff.json`) or an
 * explicit `--no-verify`; a `--no-verify` run ends verified/nothing_checked and says, everywhere it is shown, that
 * nothing checked the patch.
 */
const TASK = "fix the failing test";
const NOTHING_CHECKED =
  "NOTHING WAS CHECKED (--no-verify): the patch is valid and applies to the base commit, but no verification command ran";

interface Attempt {
  readonly outcome: CliOutcome;
  readonly runsDir: string;
  readonly workspacesDir: string;
  readonly runDir: string;
}

/** `handoff run` of the command backend on `repo`, approved, as run id `r`, its runs and workspace dirs in a fresh temp dir. */
async function attempt(repo: string, agentCmd: string, extra: readonly string[]): Promise<Attempt> {
  const root = tempDir("handoff-no-verify");
  const runsDir = join(root, "runs");
  const workspacesDir = join(root, "ws");
  const outcome = await runCli(
    commandRunArgs(repo, agentCmd, ["--yes", "--runs-dir", runsDir, "--workspace-dir", workspacesDir, "--run-id", "r", ...extra], TASK),
  );
  return { outcome, runsDir, workspacesDir, runDir: join(runsDir, "r") };
}

function expectNothingCreated(run: Attempt): void {
  expect(existsSync(run.runsDir), "runs dir").toBe(false);
  expect(existsSync(run.workspacesDir), "workspace dir").toBe(false);
}

describe("a run needs a verify command or an explicit --no-verify", () => {
  test("a run with no verify command and no --no-verify is refused before anything is created", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await attempt(repo, agent("fixes-add.sh"), []);
    expectUsageError(
      run.outcome,
      /^handoff: no verify command: pass --verify CMD \(or set "verify" in \.handoff\.json\), or --no-verify to accept a patch that nothing checks\n$/,
    );
    expectNothingCreated(run);
  });

  test("an empty verify list in .handoff.json is no verify command: refused the same way", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".handoff.json": JSON.stringify({ verify: [] }) });
    const run = await attempt(repo, agent("fixes-add.sh"), []);
    expectUsageError(run.outcome, /no verify command: pass --verify CMD/);
    expectNothingCreated(run);
  });

  test("a library caller without verify and without noVerify gets a UsageError no_verify_command, and nothing is created", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const harness = makeHarness();
    const running = new ExternalCodingRunner().run({
      repo,
      task: TASK,
      backend: "command",
      agentCmd: agent("fixes-add.sh"),
      yes: true,
      ...harness,
    });
    await expect(running).rejects.toMatchObject({ name: "UsageError", code: "no_verify_command" });
    expect(existsSync(harness.runsDir)).toBe(false);
    expect(existsSync(harness.workspacesDir)).toBe(false);
  });

  test("--no-verify together with --verify is a usage error before anything is created", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await attempt(repo, agent("fixes-add.sh"), ["--no-verify", "--verify", "npm test"]);
    expectUsageError(run.outcome, /--no-verify and --verify contradict each other/);
    expectNothingCreated(run);
  });

  test.each([
    [["--baseline"], /--baseline runs the verify commands on the untouched base; with --no-verify there are none to run/],
    [["--holdout-patch", "/dev/null"], /--holdout-patch adds tests for the verify commands to run; with --no-verify nothing runs them/],
  ])("--no-verify with %s, which needs verify commands, is a usage error before anything is created", async (extra, says) => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await attempt(repo, agent("fixes-add.sh"), ["--no-verify", ...extra]);
    expectUsageError(run.outcome, says);
    expectNothingCreated(run);
  });

  test("a repository cannot switch its own checks off: noVerify is not a .handoff.json key", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".handoff.json": JSON.stringify({ verify: ["npm test"], noVerify: true }) });
    const run = await attempt(repo, agent("fixes-add.sh"), []);
    expectUsageError(run.outcome, /\.handoff\.json: bad key 'noVerify'/);
    expectNothingCreated(run);
  });
});

describe("--no-verify says that nothing was checked", () => {
  test("--no-verify ends verified/nothing_checked (exit 0) and says nothing was checked; result.json records verification.skipped", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await attempt(repo, agent("fixes-add.sh"), ["--no-verify"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    expect(run.outcome.stdout.split("\n")[0]).toBe(`verified (nothing_checked): ${NOTHING_CHECKED}`);
    expect(run.outcome.stdout).toMatch(/^hint: .*--verify CMD/m);
    const result = readJson(join(run.runDir, "result.json"));
    expect(result).toMatchObject({ terminalReason: "verified", detail: "nothing_checked", summary: NOTHING_CHECKED });
    expect(result.verification).toMatchObject({
      ran: false,
      passed: null,
      skipped: "no_verify",
      commands: [],
      baseline: null,
      heldToBase: null,
      holdouts: [],
      tests: null,
    });
    expect(readJson(join(run.runDir, "request.json"))).toMatchObject({ noVerify: true, commands: { verify: [] } });
    expect(readFileSync(join(run.runDir, "test.log"), "utf8")).toBe("");
  });

  test("--no-verify with a verify command in .handoff.json: the command line wins, nothing is run, and the outcome says the file's command was skipped", async () => {
    // A verify command that would fail: had it run, the run would not end verified.
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".handoff.json": JSON.stringify({ verify: ["exit 1"] }) });
    const run = await attempt(repo, agent("fixes-add.sh"), ["--no-verify"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    const result = readJson(join(run.runDir, "result.json"));
    expect(result).toMatchObject({
      terminalReason: "verified",
      detail: "nothing_checked",
      verification: { ran: false, skipped: "no_verify", commands: [] },
    });
    expect(result.summary).toBe(`${NOTHING_CHECKED} (the 1 verify command in .handoff.json was skipped)`);
    expect(run.outcome.stderr).not.toContain("[verify]");
  });

  test("handoff show says under Verification that nothing was checked, in text and in markdown", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await attempt(repo, agent("fixes-add.sh"), ["--no-verify"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    for (const format of ["text", "markdown"]) {
      const shown = await runCli(["show", run.runDir, "--format", format]);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toContain(NOTHING_CHECKED);
      const verification = shown.stdout.slice(shown.stdout.indexOf("Verification"));
      expect(verification.split("\n").slice(0, 3).join("\n")).toContain(
        format === "text"
          ? "NOTHING WAS CHECKED (--no-verify): no verification command ran on this patch"
          : "**NOTHING WAS CHECKED** (`--no-verify`): no verification command ran on this patch",
      );
    }
  });

  test("apply of a --no-verify run says it was not verified, and still applies", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await attempt(repo, agent("fixes-add.sh"), ["--no-verify"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    const applied = await runCli(["apply", run.runDir]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stderr).toContain("handoff: note: run r was not verified (--no-verify); nothing checked this patch\n");
    expect(applied.stdout).toBe("math.js\n");
    expect(gitIn(repo, "diff", "--cached", "--name-only")).toBe("math.js\n");
  });

  test("apply of a verified run prints no such note", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await attempt(repo, agent("fixes-add.sh"), ["--verify", "npm test"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    const applied = await runCli(["apply", run.runDir]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stderr).not.toContain("not verified");
  });

  test("a --no-verify run whose setup fails in the verification checkout still ends setup_failed, not verified", async () => {
    // The setup passes on the base (in the agent's clone) and fails on the patched checkout.
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await attempt(repo, agent("fixes-add.sh"), ["--no-verify", "--setup", "grep -q 'a - b' math.js"]);
    expect(run.outcome.code, run.outcome.stdout).toBe(1);
    expect(readJson(join(run.runDir, "result.json"))).toMatchObject({
      terminalReason: "verification_failed",
      detail: "setup_failed",
      verification: { ran: false, passed: false, skipped: "no_verify" },
    });
  });
});
