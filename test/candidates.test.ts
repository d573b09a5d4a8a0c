import { probeBubblewrap } from "../src/containment/sandbox.js";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { type CliOutcome, commandRunArgs, expectUsageError, runCli, startCli } from "./helpers/cli.js";
import { waitForFile } from "./helpers/processes.js";
import { FAILING_ADD_PROJECT, gitIn, makeRepo, tempDir } from "./helpers/repo.js";
import { type Contender, chooseWinner, winnerReason } from "../src/many/winner.js";

const TASK = "fix add()";
const VERIFY = ["--verify", "npm test"];

/** Fixes add() as candidate $1 only; every other candidate writes a wrong fix. */
const ONLY_ONE_FIXES = (k: number) =>
  `if [ "$HANDOFF_CANDIDATE" = ${k} ]; then sed -i 's/a - b/a + b/' math.js; else sed -i 's/a - b/b - a/' math.js; fi`;
/** Every candidate fixes add(); candidate 2 also adds a comment, so its patch is the larger. */
const TWO_FIX_ONE_LONGER = `sed -i 's/a - b/a + b/' math.js; if [ "$HANDOFF_CANDIDATE" = 2 ]; then echo '// a longer patch' >> math.js; fi`;

interface CandidatesRun {
  readonly outcome: CliOutcome;
  readonly runsDir: string;
  readonly runDir: string;
  readonly result: Record<string, any>;
}

/** `handoff run` of the command backend with `--candidates`, approved, as run id `r` in a fresh runs dir. */
async function candidatesRun(
  repo: string,
  agentCmd: string,
  options: readonly string[],
  env: Record<string, string> = {},
): Promise<CandidatesRun> {
  const runsDir = join(tempDir("handoff-candidates-runs"), "runs");
  const outcome = await runCli(commandRunArgs(repo, agentCmd, ["--yes", "--runs-dir", runsDir, "--run-id", "r", ...options], TASK), {
    env,
  });
  const runDir = join(runsDir, "r");
  const resultPath = join(runDir, "result.json");
  return { outcome, runsDir, runDir, result: existsSync(resultPath) ? JSON.parse(readFileSync(resultPath, "utf8")) : {} };
}

describe("handoff run --candidates: the winner", () => {
  test("of 3 candidates of which only the second verifies, the second wins and the run exits 0", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await candidatesRun(repo, ONLY_ONE_FIXES(2), [...VERIFY, "--candidates", "3"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    expect(run.result.terminalReason).toBe("verified");
    expect(run.result.winner).toBe(2);
    expect(run.result.runId).toBe("r");
    expect(run.result.runDir).toBe(run.runDir);
    expect(run.result.candidates.map((c: any) => [c.k, c.terminalReason])).toEqual([
      [1, "verification_failed"],
      [2, "verified"],
      [3, "verification_failed"],
    ]);
    // Each candidate is a complete run directory of its own, and the run's changes.patch is the winner's.
    for (const k of [1, 2, 3]) expect(existsSync(join(run.runDir, "candidates", String(k), "result.json"))).toBe(true);
    expect(readFileSync(join(run.runDir, "changes.patch"))).toEqual(readFileSync(join(run.runDir, "candidates/2/changes.patch")));
    expect(run.outcome.stderr).toMatch(/handoff: \[2\] /);
    // The candidate's number is in its request.json.
    expect(JSON.parse(readFileSync(join(run.runDir, "candidates/3/request.json"), "utf8")).candidate).toBe(3);
  });

  test("of two candidates that verify, the one with the smaller patch wins", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await candidatesRun(repo, TWO_FIX_ONE_LONGER, [...VERIFY, "--candidates", "2"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    const [first, second] = run.result.candidates;
    expect([first.terminalReason, second.terminalReason]).toEqual(["verified", "verified"]);
    expect(first.patchBytes).toBeLessThan(second.patchBytes);
    expect(run.result.winner).toBe(1);
    expect(run.result.agreement).toEqual([]);
    expect(run.result.patch.bytes).toBe(first.patchBytes);
  });

  test("candidates that write the same patch are reported as agreeing", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await candidatesRun(repo, "sed -i 's/a - b/a + b/' math.js", [...VERIFY, "--candidates", "3"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    expect(run.result.agreement).toEqual([[1, 2, 3]]);
    expect(run.result.candidates.map((c: any) => c.agreesWith)).toEqual([
      [2, 3],
      [1, 3],
      [1, 2],
    ]);
    expect(new Set(run.result.candidates.map((c: any) => c.patchSha256)).size).toBe(1);
  });

  test("a candidate that changes the source repository ends the whole run source_repository_changed, with no winner (exit 5)", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const writesSource = `sed -i 's/a - b/a + b/' math.js; if [ "$HANDOFF_CANDIDATE" = 2 ]; then echo '// the agent' >> "${repo}/math.js"; fi`;
    const run = await candidatesRun(repo, writesSource, [...VERIFY, "--candidates", "2", "--sandbox", "none", "--jobs", "1"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(5);
    expect(run.result.terminalReason).toBe("source_repository_changed");
    expect(run.result.winner).toBeNull();
    expect(run.result.sourceInvariant.changed).toContain("math.js");
    expect(run.result.candidates[0].terminalReason).toBe("verified");
    const apply = await runCli(["apply", run.runDir, "-C", repo]);
    expect(apply.code).toBe(1);
    expect(apply.stderr).toMatch(/apply refused: .*no winner/);
  });

  test("--jobs 1 runs the candidates one at a time", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await candidatesRun(repo, "sed -i 's/a - b/a + b/' math.js", [...VERIFY, "--candidates", "3", "--jobs", "1"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    const started = [1, 2, 3].map(
      (k) => JSON.parse(readFileSync(join(run.runDir, "candidates", String(k), "result.json"), "utf8")).timings.startedAt as string,
    );
    // Each candidate starts only after the one before it reached its verdict.
    for (const k of [1, 2]) expect(Date.parse(started[k]!)).toBeGreaterThanOrEqual(Date.parse(run.result.candidates[k - 1].finishedAt));
  });
});

describe("why the winner won", () => {
  const candidate = (k: number, terminalReason: string, warnings: number, patchBytes: number, finishedAt: string) =>
    ({ k, terminalReason, warnings, patchBytes, finishedAt }) as Contender;
  const at = (second: number) => new Date(Date.UTC(2026, 11, 2, 0, 0, second)).toISOString();
  test.each([
    [[candidate(1, "verification_failed", 0, 10, at(1)), candidate(2, "verified", 3, 900, at(9))], 2, "the only one verified"],
    [[candidate(1, "verified", 2, 10, at(1)), candidate(2, "verified", 1, 900, at(9))], 2, "verified, the fewest warnings"],
    [
      [candidate(1, "verified", 0, 900, at(1)), candidate(2, "verified", 0, 10, at(9))],
      2,
      "verified, as few warnings as any, the smallest patch",
    ],
    [
      [candidate(1, "verified", 0, 10, at(9)), candidate(2, "verified", 0, 10, at(1))],
      2,
      "verified, as few warnings and as small a patch as any, finished first",
    ],
    [[candidate(1, "timeout", 0, 0, at(1)), candidate(2, "verification_failed", 1, 5, at(1))], 1, "none verified; the fewest warnings"],
    [[candidate(1, "verified", 0, 10, at(1))], 1, "the only candidate"],
  ])("%# the winner and the step of the rule that decided it", (candidates, winner, reason) => {
    expect(chooseWinner(candidates)!.k).toBe(winner);
    expect(winnerReason(candidates, winner)).toBe(reason);
  });
});

describe("handoff show, apply and resume of a candidates run", () => {
  test("show compares the candidates side by side; apply --candidate 2 applies the second, not the winner", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await candidatesRun(repo, TWO_FIX_ONE_LONGER, [...VERIFY, "--candidates", "2"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    const text = await runCli(["show", run.runDir]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/k\s+backend\s+verdict\s+warnings\s+patch\s+time\s+cost\s+agrees with/);
    expect(text.stdout).toMatch(/\*1\s+command\s+verified/);
    expect(text.stdout).toMatch(/\n {2}2\s+command\s+verified/);
    expect(text.stdout).toContain("winner: candidate 1 (*): verified, as few warnings as any, the smallest patch");
    const markdown = await runCli(["show", run.runDir, "--format", "markdown"]);
    expect(markdown.stdout).toContain("| k | backend | verdict | warnings | patch | time | cost | agrees with |");
    const json = JSON.parse((await runCli(["show", run.runDir, "--json"])).stdout);
    expect(json.candidates).toHaveLength(2);

    const apply = await runCli(["apply", run.runDir, "-C", repo, "--candidate", "2"]);
    expect(apply.code, apply.stderr).toBe(0);
    expect(readFileSync(join(repo, "math.js"), "utf8")).toContain("// a longer patch");
    gitIn(repo, "reset", "--hard", "--quiet");
    const applyWinner = await runCli(["apply", run.runDir, "-C", repo]);
    expect(applyWinner.code, applyWinner.stderr).toBe(0);
    expect(readFileSync(join(repo, "math.js"), "utf8")).not.toContain("// a longer patch");
    expect(readFileSync(join(repo, "math.js"), "utf8")).toContain("a + b");

    const resume = await runCli(["resume", run.runDir, "--yes", "--", "again"]);
    expectUsageError(resume, /candidates run; resume one of its candidates instead: handoff resume .*\/r\/candidates\/<k>/);
  });

  test("bad counts are usage errors before anything is created", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runsDir = join(tempDir("handoff-candidates-runs"), "runs");
    for (const [options, says] of [
      [["--candidates", "0"], /--candidates takes a positive whole number/],
      [["--jobs", "x"], /--jobs takes a positive whole number/],
      [["--candidates", "21"], /21 candidates .* more than 20/],
      [["--jobs", "2"], /--jobs is how many candidates run at once, and this run has one/],
    ] as const) {
      expectUsageError(await runCli(commandRunArgs(repo, "true", ["--yes", "--runs-dir", runsDir, ...VERIFY, ...options], TASK)), says);
    }
    expectUsageError(
      await runCli([
        "run",
        "-C",
        repo,
        "-b",
        "claude",
        "-b",
        "codex",
        "--bin",
        "/usr/bin/true",
        "--yes",
        "--runs-dir",
        runsDir,
        ...VERIFY,
        "--",
        TASK,
      ]),
      /--bin names one agent CLI's executable: with more than one -b/,
    );
    expect(existsSync(runsDir)).toBe(false);
  });

  test("a sandbox that cannot run, asked for with --sandbox bwrap, is a usage error before the candidates run's directory exists (it used to be left there without a verdict)", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const bin = tempDir("handoff-broken-bwrap");
    writeFileSync(join(bin, "bwrap"), "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n", { mode: 0o755 });
    const runsDir = join(tempDir("handoff-candidates-runs"), "runs");
    const outcome = await runCli(
      commandRunArgs(repo, "true", ["--yes", "--runs-dir", runsDir, "--sandbox", "bwrap", "--candidates", "2", ...VERIFY], TASK),
      {
        env: { PATH: `${bin}:${process.env.PATH}` },
      },
    );
    expectUsageError(outcome, /--sandbox bwrap was asked for, but bubblewrap cannot run here/);
    expect(existsSync(runsDir)).toBe(false);
  });
});

// Runs without the sandbox each build their own environment (docs/environment.md): sharing is the sandboxed runs'.
const bwrap = await probeBubblewrap();
if (!bwrap.ok && process.env.HANDOFF_SANDBOX_TESTS === "required") throw new Error(`bubblewrap is required here: ${bwrap.reason}`);

describe.skipIf(!bwrap.ok)("the base environment is built once for concurrent sandboxed runs", () => {
  test("two candidates at once with the same setup: the setup runs once, and the other candidate reuses its environment", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const cacheDir = tempDir("handoff-cache");
    // The sandbox hides the test's temp files from the setup: what each run did with the environment is in its result.
    const run = await candidatesRun(
      repo,
      "sed -i 's/a - b/a + b/' math.js",
      [...VERIFY, "--candidates", "2", "--jobs", "2", "--setup", "echo built > built.txt; sleep 1"],
      { HANDOFF_CACHE_DIR: cacheDir },
    );
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    const sources = [1, 2].map(
      (k) => JSON.parse(readFileSync(join(run.runDir, "candidates", String(k), "result.json"), "utf8")).environment.source,
    );
    expect(sources.sort()).toEqual(["built", "reused"]);
  });

  test("two handoff processes at once with the same setup: the setup runs once", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const cacheDir = tempDir("handoff-cache");
    const runsDir = join(tempDir("handoff-candidates-runs"), "runs");
    const start = (id: string) =>
      startCli(
        commandRunArgs(
          repo,
          "sed -i 's/a - b/a + b/' math.js",
          ["--yes", "--runs-dir", runsDir, "--run-id", id, ...VERIFY, "--setup", "echo built > built.txt; sleep 1"],
          TASK,
        ),
        { env: { HANDOFF_CACHE_DIR: cacheDir } },
      ).done;
    const outcomes = await Promise.all([start("a"), start("b")]);
    for (const outcome of outcomes) expect(outcome.code, outcome.stderr).toBe(0);
    const sources = ["a", "b"].map((id) => JSON.parse(readFileSync(join(runsDir, id, "result.json"), "utf8")).environment.source);
    expect(sources.sort()).toEqual(["built", "reused"]);
  });
});

describe("a candidates run whose handoff died", () => {
  test("kill -9 mid-run: the next start sweeps its candidates and writes its result.json by the winner rule", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runsDir = join(tempDir("handoff-candidates-runs"), "runs");
    const marker = join(tempDir("handoff-candidate-marker"), "second-started");
    // Candidate 1 fixes add() at once; candidate 2 says it started, then waits until it is killed.
    const agentCmd = `if [ "$HANDOFF_CANDIDATE" = 2 ]; then touch ${marker}; exec sleep 60; fi; sed -i 's/a - b/a + b/' math.js`;
    const args = ["--yes", "--runs-dir", runsDir, "--run-id", "r", ...VERIFY, "--sandbox", "none", "--candidates", "2", "--jobs", "2"];
    const crashed = startCli(commandRunArgs(repo, agentCmd, args, TASK));
    const exited = new Promise((resolve) => crashed.child.once("exit", resolve));
    await waitForFile(marker);
    await waitForFile(join(runsDir, "r", "candidates", "1", "result.json"));
    crashed.child.kill("SIGKILL");
    await exited;
    expect(existsSync(join(runsDir, "r", "result.json"))).toBe(false);

    const next = await runCli(commandRunArgs(repo, "true", ["--yes", "--runs-dir", runsDir, "--run-id", "next", "--no-verify"], TASK));
    expect(next.code, next.stderr).toBe(3);
    const result = JSON.parse(readFileSync(join(runsDir, "r", "result.json"), "utf8"));
    expect(result.candidates.map((c: any) => [c.k, c.terminalReason])).toEqual([
      [1, "verified"],
      [2, "user_cancelled"],
    ]);
    expect(JSON.parse(readFileSync(join(runsDir, "r", "candidates", "2", "result.json"), "utf8")).detail).toBe("runner_crashed");
    expect(result).toMatchObject({ runId: "r", winner: 1, terminalReason: "verified" });
    const apply = await runCli(["apply", join(runsDir, "r"), "-C", repo]);
    expect(apply.code, apply.stderr).toBe(0);
  });
});
