import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { COMMANDS } from "../src/cli/command-names.js";
import { COMMAND_HELP, HELP } from "../src/cli/help.js";
import { closest } from "../src/lib/suggest.js";
import { type CliOutcome, commandRunArgs, expectUsageError, runCli } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, gitIn, makeRepo, tempDir } from "./helpers/repo.js";
import { agent } from "./helpers/run.js";

/** An error with --json: its line on stderr, and exactly one JSON document on stdout naming its code. */
function expectJsonError(outcome: CliOutcome, exitCode: number, code: string, says: RegExp): void {
  expect(outcome.code, outcome.stderr).toBe(exitCode);
  expect(outcome.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(outcome.stderr).toMatch(/^handoff: /);
  expect(outcome.stdout.endsWith("\n")).toBe(true);
  const error = JSON.parse(outcome.stdout);
  expect(error).toEqual({ error: { code, message: expect.stringMatching(says) } });
  expect(outcome.stderr).toContain(error.error.message);
}

/** A verified run of the command backend on `repo`, into `runsDir` as `runId`. */
async function verifiedRun(repo: string, runsDir: string, runId: string): Promise<void> {
  const outcome = await runCli(
    commandRunArgs(repo, agent("fixes-add.sh"), ["--yes", "--verify", "npm test", "--runs-dir", runsDir, "--run-id", runId], "fix add"),
  );
  expect(outcome.code, outcome.stderr).toBe(0);
}

describe("a mistyped command or option", () => {
  test.each([
    ["runn", "handoff: unknown command 'runn' (did you mean run?)\n"],
    ["lst", "handoff: unknown command 'lst' (did you mean list?)\n"],
    ["aply", "handoff: unknown command 'aply' (did you mean apply?)\n"],
    ["frobnicate", "handoff: unknown command 'frobnicate' (see handoff --help)\n"],
  ])("handoff %s is one line naming the command it most likely meant, exit 2", async (command, says) => {
    const outcome = await runCli([command]);
    expectUsageError(outcome, says);
    expect(outcome.stderr).toBe(says);
  });

  test("closest: a prefix of three letters or more, or within two edits that leave most of the word; else none", () => {
    expect(closest("runn", COMMANDS)).toBe("run");
    expect(closest("verfy", ["verify", "yes"])).toBe("verify");
    expect(closest("bat", COMMANDS)).toBe("batch");
    expect(closest("x", ["yes"])).toBeNull();
    expect(closest("frobnicate", COMMANDS)).toBeNull();
  });
});

describe("help", () => {
  test.each(["overview", ...COMMANDS])("every line of the %s help fits 100 columns", (name) => {
    const text = name === "overview" ? HELP : COMMAND_HELP[name as (typeof COMMANDS)[number]];
    const long = text.split("\n").filter((line) => line.length > 100);
    expect(long).toEqual([]);
  });
});

describe("--json: an error is JSON on stdout too, with the same exit code", () => {
  test("an unknown run, an unknown option, an unknown command, a bad format", async () => {
    expectJsonError(await runCli(["show", "no-such-run", "--json"]), 2, "run_not_found", /^no finished run at no-such-run/);
    expectJsonError(await runCli(["list", "--jsn", "--json"]), 2, "unknown_option", /did you mean --json\?/);
    expectJsonError(await runCli(["runn", "--json"]), 2, "unknown_command", /did you mean run\?/);
    expectJsonError(await runCli(["apply", "no-such-run", "--json"]), 2, "run_not_found", /no-such-run/);
  });

  test("a missing task file; --json after -- is task text, not a request for JSON", async () => {
    const cwd = tempDir();
    expectJsonError(
      await runCli(["run", "--json", "--task-file", "missing.md"], { cwd }),
      2,
      "task_file",
      /^cannot read the task file "missing\.md" \(--task-file\): no such file$/,
    );
    expectUsageError(
      await runCli(["run", "--task-file", "missing.md", "--", "--json"], { cwd }),
      /give the task as text or with --task-file/,
    );
  });

  test("a refusal of apply: exit 1, the refusal's code", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runsDir = join(tempDir("handoff-runs"), "runs");
    const failed = await runCli(
      commandRunArgs(repo, agent("breaks-add.sh"), ["--yes", "--verify", "npm test", "--runs-dir", runsDir, "--run-id", "r"], "fix add"),
    );
    expect(failed.code, failed.stderr).toBe(1);
    const refused = await runCli(["apply", join(runsDir, "r"), "--json"]);
    expectJsonError(refused, 1, "not_verified", /^run r ended verification_failed; only a verified run can be applied$/);
    expect(refused.stderr).toMatch(/^handoff: apply refused: run r ended/);
  });
});

describe("files handoff cannot read", () => {
  test("a missing task, batch or held-out patch file is one line that names it and why, exit 2", async () => {
    const cwd = tempDir();
    expect((await runCli(["run", "--task-file", "task.md"], { cwd })).stderr).toBe(
      'handoff: cannot read the task file "task.md" (--task-file): no such file\n',
    );
    expect((await runCli(["run", "--task-file", "."], { cwd })).stderr).toMatch(
      /^handoff: cannot read the task file "\." \(--task-file\): it is a directory\n$/,
    );
    const batch = await runCli(["batch", "tasks.jsonl", "--yes"], { cwd });
    expectUsageError(batch, /^handoff: cannot read the batch file "tasks\.jsonl": no such file\n$/);
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const holdout = await runCli(
      commandRunArgs(repo, agent("fixes-add.sh"), ["--yes", "--verify", "npm test", "--holdout-patch", join(cwd, "held.patch")], "fix add"),
    );
    expectUsageError(holdout, /--holdout-patch .*held\.patch cannot be read: no such file\n$/);
  });
});

describe("-C on every command that reads a repository", () => {
  test("list -C and show -C mean that repository's runs from anywhere; -C outside a repository, or with --all, is a usage error", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runsDir = join(tempDir("handoff-runs"), "runs");
    await verifiedRun(repo, runsDir, "r1");
    const elsewhere = tempDir("handoff-elsewhere");
    const listed = await runCli(["list", "-C", repo, "--runs-dir", runsDir], { cwd: elsewhere });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^runs of .*\/repo in /);
    expect(listed.stdout).toMatch(/\nr1\s+\S+\s+command\s+verified/);
    const shown = await runCli(["show", "-C", repo, "--runs-dir", runsDir], { cwd: elsewhere });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stderr).toMatch(/^handoff: the latest run of .*\/repo: r1 \(verified/);
    expect(shown.stdout).toContain("verified");
    expectUsageError(await runCli(["list", "-C", elsewhere, "--runs-dir", runsDir]), /not inside a git repository/);
    expectUsageError(await runCli(["list", "-C", repo, "--all", "--runs-dir", runsDir]), /not both/);
  });

  test("batch -C: the repository of a line without one; show of the batch lists its runs, apply says to apply one of them", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const work = tempDir("handoff-batch-work");
    const runsDir = join(work, "runs");
    const line = (id: string, script: string) => JSON.stringify({ id, task: "fix add", agentCmd: agent(script), verify: ["npm test"] });
    writeFileSync(join(work, "tasks.jsonl"), `${line("fix", "fixes-add.sh")}\n${line("break", "breaks-add.sh")}\n`);
    const batch = await runCli(["batch", "tasks.jsonl", "-C", repo, "--yes", "--runs-dir", runsDir, "--batch-id", "b"], { cwd: work });
    expect(batch.code, batch.stderr).toBe(1);
    expect(batch.stdout).toMatch(/^fix\s+verified\s+\S+\/b\/runs\/fix$/m);

    const shown = await runCli(["show", "b", "--runs-dir", runsDir]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^b is a batch: one run per task of a batch file \(handoff batch\)/);
    expect(shown.stdout).toContain("2 task(s), worst outcome verification_failed (exit 1)");
    expect(shown.stdout).toMatch(/^fix\s+verified\s+\S+\/b\/runs\/fix$/m);
    expect(shown.stdout).toMatch(/^break\s+verification_failed\s+\S+\/b\/runs\/break$/m);
    const runDir = join(runsDir, "b", "runs", "fix");
    expect(shown.stdout).toContain(`handoff show ${runDir}, handoff apply ${runDir}`);
    expect(JSON.parse((await runCli(["show", "b", "--runs-dir", runsDir, "--json"])).stdout).batchId).toBe("b");

    const applied = await runCli(["apply", "b", "--runs-dir", runsDir]);
    expectUsageError(
      applied,
      /^handoff: b is a batch: .*; its runs: fix verified, break verification_failed; apply one by its directory, e\.g\. handoff apply \S+\/b\/runs\/fix \(handoff show b lists them\)\n$/,
    );
    const ofTheRun = await runCli(["apply", runDir]);
    expect(ofTheRun.code, ofTheRun.stderr).toBe(0);
    expect(readFileSync(join(repo, "math.js"), "utf8")).toContain("a + b");
    gitIn(repo, "reset", "-q", "--hard");
  });
});

describe("apply --candidate names the candidate", () => {
  test("a candidate that failed is refused as candidate k of its run; one that verified is applied as such", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runsDir = join(tempDir("handoff-runs"), "runs");
    const script = join(tempDir("handoff-agent"), "candidate.sh");
    writeFileSync(
      script,
      `case "$HANDOFF_CANDIDATE" in 1) sed -i 's/a - b/a + b + 1/' math.js ;; *) sed -i 's/a - b/a + b/' math.js ;; esac\n`,
    );
    const run = await runCli(
      commandRunArgs(
        repo,
        `sh ${script}`,
        ["--yes", "--verify", "npm test", "--candidates", "2", "--runs-dir", runsDir, "--run-id", "c"],
        "fix add",
      ),
    );
    expect(run.code, run.stderr).toBe(0);
    const refused = await runCli(["apply", join(runsDir, "c"), "--candidate", "1"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      "handoff: apply refused: candidate 1 (run c) ended verification_failed; only a verified run can be applied\n",
    );
    const applied = await runCli(["apply", join(runsDir, "c"), "--candidate", "2"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stderr).toMatch(/^handoff: applied 1 file\(s\) of candidate 2 \(run c\) to /);
  });
});
