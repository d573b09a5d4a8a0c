import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { HANDOFF_BIN, type CliOutcome, expectUsageError, runCli, commandRunArgs } from "./helpers/cli.js";
import { commitFile, FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { canMountTmpfs, smallFileSystem } from "./helpers/tmpfs.js";
import { agent, makeHarness } from "./helpers/run.js";
import { ExternalCodingRunner } from "../src/run/runner.js";
import { runShellCommands, TestLog, commandPassed } from "../src/verify/shell-commands.js";
import { decideOutcome, type RunFacts } from "../src/verdict/decide.js";
import { probeBubblewrap } from "../src/containment/sandbox.js";

/**
 * Issue 11 items 1, 9 and 12a/b: what handoff is given. A task or a command no process can be handed (too big for
 * the kernel, a NUL byte) is refused before anything is created, and a spawn that fails anyway ends the run at once
 * with its own detail. Other bad input (a bare or foreign repository, a runs directory that is a file, a timeout
 * past Node's timers) is a one-line usage error with exit 2, or works (a newline in the source's path).
 */
const TASK = "fix the failing test";

interface Attempt {
  readonly outcome: CliOutcome;
  readonly runsDir: string;
  readonly workspacesDir: string;
  /** result.json of run `r`, or null when there is none. */
  readonly result: Record<string, any> | null;
}

/** `handoff run` of the command backend, approved, as run id `r`, with its runs and workspace dirs in a fresh temp dir. */
async function attempt(
  repo: string,
  agentCmd: string,
  extra: readonly string[] = [],
  task: string | null = TASK,
  env: Record<string, string> = {},
): Promise<Attempt> {
  const root = tempDir("handoff-input");
  const runsDir = join(root, "runs");
  const workspacesDir = join(root, "ws");
  const args = [
    "run",
    "-C",
    repo,
    "-b",
    "command",
    "--agent-cmd",
    agentCmd,
    "--yes",
    "--runs-dir",
    runsDir,
    "--workspace-dir",
    workspacesDir,
    "--run-id",
    "r",
    ...extra,
  ];
  const outcome = await runCli(task === null ? args : [...args, "--", task], { env });
  const resultPath = join(runsDir, "r", "result.json");
  return { outcome, runsDir, workspacesDir, result: existsSync(resultPath) ? JSON.parse(readFileSync(resultPath, "utf8")) : null };
}

function expectNothingCreated(run: Attempt): void {
  expect(existsSync(run.runsDir), "runs dir").toBe(false);
  expect(existsSync(run.workspacesDir), "workspace dir").toBe(false);
}

describe("a process that cannot be spawned ends the run at once, with its own detail", () => {
  test("an agent whose environment the kernel refuses (E2BIG: a 70 KB --env variable and a 61 KB task under a 512 KiB stack limit) ends agent_not_started at once, not at --timeout", () => {
    // The kernel's limit on arguments plus environment is a quarter of the stack limit, and never under 128 KiB.
    const root = tempDir("handoff-e2big");
    const repo = join(root, "repo");
    execFileSync("git", ["init", "-q", repo]);
    execFileSync("git", [
      "-C",
      repo,
      "-c",
      "user.name=F",
      "-c",
      "user.email=f@example.invalid",
      "commit",
      "-q",
      "--allow-empty",
      "-m",
      "base",
    ]);
    writeFileSync(join(root, "task.txt"), "a".repeat(61_000));
    const runsDir = join(root, "runs");
    const args = [
      "run",
      "-C",
      repo,
      "-b",
      "command",
      "--agent-cmd",
      "echo hi > f",
      "--env",
      "HUGE_VALUE",
      "--task-file",
      join(root, "task.txt"),
    ];
    const quoted = [
      HANDOFF_BIN,
      ...args,
      "--sandbox",
      "none",
      "--no-verify",
      "--yes",
      "--timeout",
      "600",
      "--runs-dir",
      runsDir,
      "--run-id",
      "r",
    ]
      .map((arg) => `'${arg}'`)
      .join(" ");
    const env = {
      ...process.env,
      HUGE_VALUE: "b".repeat(70_000),
      XDG_STATE_HOME: join(root, "xdg"),
      HANDOFF_WORKSPACE_DIR: join(root, "ws"),
      HANDOFF_CLI_HOME_DIR: join(root, "homes"),
    };
    const child = spawnSync("/bin/sh", ["-c", `ulimit -s 512 && exec '${process.execPath}' ${quoted}`], {
      env,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(child.status, child.stderr).toBe(6);
    const result = JSON.parse(readFileSync(join(runsDir, "r", "result.json"), "utf8"));
    expect(result).toMatchObject({ terminalReason: "external_agent_error", detail: "agent_not_started" });
    expect(result.summary).toContain("E2BIG");
    expect(readdirSync(join(root, "ws"))).toEqual([]);
  });

  test("a verify command the kernel refuses to start (E2BIG) is recorded as not started, at once, and ends command_not_started (exit 4), never verified", async () => {
    const log = new TestLog(() => {});
    const records = await runShellCommands([`echo ${"x".repeat(140_000)}`], {
      phase: "verify",
      cwd: tempDir(),
      env: { PATH: "/usr/bin:/bin" },
      timeoutMs: 600_000,
      log,
    });
    expect(records).toHaveLength(1);
    expect(records[0]!.spawnError).toMatch(/^E2BIG/);
    expect(commandPassed(records[0]!)).toBe(false);
    expect(log.toBuffer().toString("utf8")).toContain("could not start");
    const facts: RunFacts = {
      cancelled: null,
      sourceChanged: [],
      agent: null,
      artifactError: null,
      runDirWrite: null,
      patch: { empty: false, violations: [] },
      verification: { kind: "command_failed", commands: records, failed: records[0]!, tests: null },
      held: null,
      baseline: null,
      verifyCommands: [records[0]!.command],
      testEdits: null,
      holdoutCount: 0,
      tests: null,
      noVerify: null,
      setupFailed: null,
    };
    expect(decideOutcome(facts)).toMatchObject({ terminalReason: "policy_or_artifact_error", detail: "command_not_started" });
    expect(decideOutcome({ ...facts, verification: null, patch: null, setupFailed: records[0]! })).toMatchObject({
      detail: "command_not_started",
    });
  });
});

describe("tasks and commands no process can be handed are refused before anything is created", () => {
  test("a 140,000-character verify command in .handoff.json is refused before anything is created", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".handoff.json": JSON.stringify({ verify: [`test ${"x".repeat(140_000)}`] }) });
    const run = await attempt(repo, agent("fixes-add.sh"));
    expectUsageError(
      run.outcome,
      /verify command \(from \.handoff\.json\) is 140005 bytes; one argument to a process is at most 131071 bytes/,
    );
    expectNothingCreated(run);
  });

  test("a committed .handoff.json command with a NUL byte is refused before anything is created", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".handoff.json": JSON.stringify({ setup: ["npm ci\u0000rm -rf /"] }) });
    const run = await attempt(repo, agent("fixes-add.sh"));
    expectUsageError(run.outcome, /setup command \(from \.handoff\.json\) holds a NUL byte/);
    expectNothingCreated(run);
  });

  test("a library caller's verify command or agent command of 140,000 characters is refused before anything is created", async () => {
    // The CLI cannot even be given one (its own argv has the same limit); the library can.
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const harness = makeHarness();
    const base = { repo, task: TASK, backend: "command", agentCmd: "true", yes: true, ...harness };
    await expect(new ExternalCodingRunner().run({ ...base, verify: [`test ${"y".repeat(140_000)}`] })).rejects.toThrow(
      /the verify command is 140005 bytes/,
    );
    await expect(new ExternalCodingRunner().run({ ...base, agentCmd: `true ${"z".repeat(140_000)}` })).rejects.toThrow(
      /^agentCmd is 140005 bytes/,
    );
    await expect(new ExternalCodingRunner().run({ ...base, task: "fix\0it" })).rejects.toThrow(/the task holds a NUL byte/);
    expect(existsSync(harness.runsDir)).toBe(false);
    expect(existsSync(harness.workspacesDir)).toBe(false);
  });

  test("a 10 MB --task-file is refused without being read whole, before anything is created", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const file = join(tempDir(), "task.txt");
    writeFileSync(file, "fix it. ".repeat(1_250_000));
    const run = await attempt(repo, agent("fixes-add.sh"), ["--task-file", file], null);
    expectUsageError(run.outcome, /--task-file .* holds more than 1048576 bytes \(1 MiB\)/);
    expectNothingCreated(run);
  });

  test("--task-file /dev/zero is refused after reading 1 MiB, instead of growing handoff without bound", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await attempt(repo, agent("fixes-add.sh"), ["--task-file", "/dev/zero"], null);
    expectUsageError(run.outcome, /--task-file \/dev\/zero holds more than 1048576 bytes/);
    expectNothingCreated(run);
  });

  test("a binary --task-file (a NUL byte) is refused before anything is created, not run until --timeout", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const file = join(tempDir(), "task.bin");
    writeFileSync(file, Buffer.from([0x66, 0x69, 0x78, 0x00, 0x01, 0x02]));
    const run = await attempt(repo, agent("fixes-add.sh"), ["--task-file", file, "--timeout", "600"], null);
    expectUsageError(run.outcome, /--task-file .* holds a NUL byte/);
    expectNothingCreated(run);
  });

  test("a 200 KiB task reaches a command agent on stdin and in $HANDOFF_TASK_FILE, never in an environment variable the kernel caps", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const task = `${"fix the failing test. ".repeat(9_500)}END`;
    const file = join(tempDir(), "task.txt");
    writeFileSync(file, task);
    const seen = tempDir("handoff-seen");
    const agentCmd = `cat > '${seen}/stdin' && cp "$HANDOFF_TASK_FILE" '${seen}/file' && printf '%s' "\${HANDOFF_TASK-unset}" > '${seen}/env' && ${agent("fixes-add.sh")}`;
    const run = await attempt(repo, agentCmd, ["--task-file", file, "--timeout", "600", "--sandbox", "none", "--verify", "npm test"], null);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    expect(run.result).toMatchObject({ terminalReason: "verified" });
    expect(readFileSync(join(seen, "stdin"), "utf8")).toBe(task);
    expect(readFileSync(join(seen, "file"), "utf8")).toBe(task);
    expect(readFileSync(join(seen, "env"), "utf8")).toBe("unset");
  }, 60_000);
});

describe("bad input is a one-line error before anything is created, or works", () => {
  test("a bare repository is named as one, not as 'not inside a git repository'", async () => {
    const bare = join(tempDir(), "bare.git");
    execFileSync("git", ["init", "-q", "--bare", bare]);
    const run = await attempt(bare, "true");
    expectUsageError(run.outcome, /bare\.git is a bare repository; handoff needs a work tree/);
    expectNothingCreated(run);
  });

  test.skipIf(process.getuid?.() !== 0)(
    "a repository owned by another user is refused as git refuses it (dubious ownership), and safe.directory in the user's config does not change that",
    async () => {
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      execFileSync("chown", ["-R", "65534:65534", repo]);
      const home = tempDir("handoff-home");
      writeFileSync(join(home, ".gitconfig"), `[safe]\n\tdirectory = *\n`);
      const run = await attempt(repo, "true", [], TASK, { HOME: home });
      expectUsageError(
        run.outcome,
        /belongs to another user, and git refuses to work in it \(dubious ownership\); handoff does not honour safe\.directory/,
      );
      expectNothingCreated(run);
      // Made the user's own again, the same repository is accepted.
      execFileSync("chown", ["-R", `${process.getuid!()}:${process.getgid!()}`, repo]);
      const mine = await attempt(repo, "true", ["--sandbox", "none", "--no-verify"], TASK, { HOME: home });
      expect(mine.outcome.code, mine.outcome.stderr).toBe(3);
    },
    60_000,
  );

  test("a source whose path holds a newline is run like any other, not an internal error", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT, { dir: join(tempDir("handoff-src"), "new\nline") });
    const run = await attempt(repo, agent("fixes-add.sh"), ["--verify", "npm test", "--sandbox", "none"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    expect(run.result).toMatchObject({ terminalReason: "verified", repo: { path: repo } });
  }, 60_000);

  test("a .handoff.json over 1 MiB is a one-line error, not a stack trace", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    commitFile(repo, ".handoff.json", JSON.stringify({ verify: ["npm test"], model: "m".repeat(1_100_000) }));
    const run = await attempt(repo, "true");
    expectUsageError(run.outcome, /\.handoff\.json at [0-9a-f]{12} is 11000\d\d bytes; the most handoff reads is 1048576/);
    expectNothingCreated(run);
  });

  test("a runs directory that is a file is a one-line error, not a stack trace", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const file = join(tempDir(), "runs-file");
    writeFileSync(file, "");
    const outcome = await runCli(commandRunArgs(repo, "true", ["--yes", "--runs-dir", file], TASK));
    expectUsageError(outcome, /the runs directory .*runs-file cannot be used: .*runs-file is not a directory/);
    expect(readFileSync(file, "utf8")).toBe("");
  });

  test.skipIf(!canMountTmpfs)(
    "a runs directory on a read-only file system is a one-line error before anything is created (skipped where tmpfs cannot be mounted)",
    async () => {
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const mount = smallFileSystem(1, { readOnly: true });
      const outcome = await runCli(commandRunArgs(repo, "true", ["--yes", "--runs-dir", join(mount, "runs")], TASK));
      expectUsageError(outcome, /the runs directory .*runs cannot be used: .* is on a read-only file system/);
    },
  );

  test.each([
    [
      "--timeout of 25 days, past Node's timers (it would fire after 1 ms)",
      ["--timeout", String(25 * 24 * 3600)],
      /--timeout must be at most 2073600 seconds/,
    ],
    ["--verify-timeout of 30 days", ["--verify-timeout", String(30 * 24 * 3600)], /--verify-timeout must be at most 2073600 seconds/],
    ["--max-processes 1e30, which pids.max cannot hold", ["--max-processes", "1e30"], /--max-processes must be at most 4194304/],
    ["--max-memory 1e30 (MiB), which memory.max cannot hold", ["--max-memory", "1e30"], /--max-memory must be at most 8589934591 MiB/],
  ])("%s is a one-line error before anything is created", async (_what, extra, says) => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await attempt(repo, agent("fixes-add.sh"), extra);
    expectUsageError(run.outcome, says);
    expectNothingCreated(run);
  });

  test("a .handoff.json timeout of 25 days is refused like the option", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".handoff.json": JSON.stringify({ timeout: 25 * 24 * 3600 }) });
    const run = await attempt(repo, agent("fixes-add.sh"));
    expectUsageError(run.outcome, /--timeout must be at most 2073600 seconds/);
    expectNothingCreated(run);
  });
});

const bwrap = await probeBubblewrap();

describe("the agent's and commands' standard streams", () => {
  test.each(bwrap.ok ? ["none", "bwrap"] : ["none"])(
    "`> /dev/stderr`, `> /dev/stdout` and `cat /dev/stdin` work inside the agent and verify commands (--sandbox %s)",
    async (sandbox) => {
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const agentCmd = `cat /dev/stdin > stdin.txt && echo to-stderr > /dev/stderr && echo to-stdout > /dev/stdout && ${agent("fixes-add.sh")}`;
      const run = await attempt(repo, agentCmd, [
        "--verify",
        "echo verify-stderr > /dev/stderr && npm test > /dev/stdout",
        "--sandbox",
        sandbox,
      ]);
      expect(run.outcome.code, `${run.outcome.stderr}\n${JSON.stringify(run.result)}`).toBe(0);
      expect(run.result).toMatchObject({ terminalReason: "verified" });
      const testLog = readFileSync(join(run.runsDir, "r", "test.log"), "utf8");
      expect(testLog).toContain("verify-stderr");
      const backend = JSON.parse(readFileSync(join(run.runsDir, "r", "backend-result.json"), "utf8"));
      expect(backend.stderrTail).toContain("to-stderr");
      expect(readFileSync(join(run.runsDir, "r", "changes.patch"), "utf8")).toContain(`+${TASK}`);
    },
    60_000,
  );
});
