import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { EXIT_CODES } from "../src/vocabulary/terminal-reasons.js";
import { COMMANDS } from "../src/cli/command-names.js";
import { RUN_OPTIONS } from "../src/cli/option-tables.js";
import { COMMAND_OPTIONS } from "./helpers/option-tables.js";
import { COMMAND_HELP, HELP } from "../src/cli/help.js";
import { nearestOption } from "../src/cli/parse-options.js";
import { type CliOutcome, HANDOFF_BIN, expectUsageError, runCli, startCli, commandRunArgs } from "./helpers/cli.js";
import { agentOutputDir, isRunning } from "./helpers/processes.js";
import { commitFile, FAILING_ADD_PROJECT, gitIn, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, delegate } from "./helpers/run.js";

const TASK = "fix the failing test";
const OPTIONS = COMMAND_OPTIONS;

interface CliRun {
  readonly outcome: CliOutcome;
  readonly runDir: string;
  readonly resultText: string;
  readonly result: Record<string, any>;
}

/** `handoff run` of the command backend on `repo`, approved, into a fresh runs dir, as run id `r`. */
async function cliRun(repo: string, agentCmd: string, extra: readonly string[] = [], env: Record<string, string> = {}): Promise<CliRun> {
  const runsDir = join(tempDir("handoff-cli-runs"), "runs");
  const outcome = await runCli(commandRunArgs(repo, agentCmd, ["--yes", "--runs-dir", runsDir, "--run-id", "r", ...extra], TASK), { env });
  const runDir = join(runsDir, "r");
  const resultPath = join(runDir, "result.json");
  const resultText = existsSync(resultPath) ? readFileSync(resultPath, "utf8") : "";
  return { outcome, runDir, resultText, result: resultText ? JSON.parse(resultText) : {} };
}

describe("handoff (no command, help)", () => {
  test("--help prints the usage and exits 0", async () => {
    const outcome = await runCli(["--help"]);
    expect(outcome.code).toBe(0);
    expect(outcome.stdout).toContain("Usage:");
    expect(outcome.stdout).toContain("handoff run");
    expect(outcome.stderr).toBe("");
  });

  test.each(["run", "show", "apply", "backends"])(
    "handoff %s --help prints the usage and exits 0 instead of an unknown-option error",
    async (command) => {
      const cwd = tempDir();
      const outcome = await runCli([command, "--help"], { cwd });
      expect(outcome.code, outcome.stderr).toBe(0);
      expect(outcome.stdout).toContain(`handoff ${command}`);
      expect(outcome.stderr).toBe("");
      expect(readdirSync(cwd)).toEqual([]);
    },
  );

  test.each(COMMANDS)("handoff %s --help lists that command's own options, one line each, and no other command's", async (command) => {
    const outcome = await runCli([command, "--help"]);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stdout).toBe(COMMAND_HELP[command]);
    expect(outcome.stdout).toMatch(new RegExp(`^Usage: handoff ${command} `));
    const own = Object.keys(OPTIONS[command]);
    // An option's own line: `  -C, --repo DIR  …` or `      --verify CMD  …`.
    const lineOf = (name: string) => new RegExp(`^ {2}(?:-\\w, | {4})--${name}(?![\\w-])`);
    for (const name of own)
      expect(
        outcome.stdout.split("\n").filter((line) => lineOf(name).test(line)),
        name,
      ).toHaveLength(1);
    const others = COMMANDS.flatMap((other) => Object.keys(OPTIONS[other])).filter((name) => !own.includes(name));
    for (const name of others) expect(outcome.stdout, name).not.toContain(`--${name} `);
  });

  test.each(COMMANDS)("handoff help %s prints the same as that command's --help", async (command) => {
    const outcome = await runCli(["help", command]);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stdout).toBe(COMMAND_HELP[command]);
  });

  test("handoff help and handoff -h print the overview, with every command in it", async () => {
    for (const args of [["help"], ["-h"]]) {
      const outcome = await runCli(args);
      expect(outcome.code, outcome.stderr).toBe(0);
      expect(outcome.stdout).toBe(HELP);
      for (const command of COMMANDS) expect(outcome.stdout).toContain(`handoff ${command}`);
    }
  });

  test.each([
    ["run", "--verfy", "unknown option '--verfy' for 'handoff run' (did you mean --verify?)"],
    ["run", "--max-mem", "unknown option '--max-mem' for 'handoff run' (did you mean --max-memory?)"],
    ["show", "--jsn", "unknown option '--jsn' for 'handoff show' (did you mean --json?)"],
    ["apply", "--repos", "unknown option '--repos' for 'handoff apply' (did you mean --repo?)"],
    ["backends", "--frobnicate", "unknown option '--frobnicate' for 'handoff backends' (see handoff backends --help)"],
    ["apply", "-x", "unknown option '-x' for 'handoff apply' (see handoff apply --help)"],
  ])(
    "handoff %s %s: an unknown option is one line that names it and the command, its quotes closed, with the nearest real option",
    async (command, option, says) => {
      const outcome = await runCli([command, option, "r"]);
      expectUsageError(outcome, `handoff: ${says}\n`);
      expect(outcome.stderr).toBe(`handoff: ${says}\n`);
    },
  );

  test("a typo suggests the real option only when it is close: within two edits leaving most of the word, or a prefix of three letters or more", () => {
    expect(nearestOption("--verfy", RUN_OPTIONS)).toBe("--verify");
    expect(nearestOption("--verif", RUN_OPTIONS)).toBe("--verify");
    expect(nearestOption("--timout", RUN_OPTIONS)).toBe("--timeout");
    expect(nearestOption("--x", RUN_OPTIONS)).toBeNull();
    expect(nearestOption("--ye", RUN_OPTIONS)).toBeNull();
    expect(nearestOption("--frobnicate", RUN_OPTIONS)).toBeNull();
    expect(nearestOption("-q", RUN_OPTIONS)).toBeNull();
  });

  test("a task that reads '--help' after '--' is task text, not a request for help", async () => {
    const outcome = await runCli(["run", "-C", tempDir(), "--", "--help"]);
    expectUsageError(outcome, /not inside a git repository/);
  });
});

describe("handoff run", () => {
  test("without --yes and without a TTY it refuses with exit 2, one line, and no run directory", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runsDir = join(tempDir(), "runs");
    const outcome = await runCli(commandRunArgs(repo, agent("fixes-add.sh"), ["--verify", "npm test", "--runs-dir", runsDir], TASK));
    expectUsageError(outcome, /approval needed.*--yes/);
    expect(existsSync(runsDir)).toBe(false);
  });

  test("--json prints exactly result.json on stdout and the progress on stderr; verified exits 0", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await cliRun(repo, agent("fixes-add.sh"), ["--verify", "npm test", "--json"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    expect(run.outcome.stdout).toBe(run.resultText);
    expect(JSON.parse(run.outcome.stdout)).toMatchObject({ schemaVersion: 1, runId: "r", terminalReason: "verified" });
    expect(run.outcome.stderr).toContain("handoff: run r: command on");
    expect(run.outcome.stderr).toContain("[verify] $ npm test");
  });

  test.each([
    ["no_changes", agent("does-nothing.sh"), []],
    ["verification_failed", agent("breaks-add.sh"), []],
    ["external_agent_error", agent("exits-nonzero.sh"), []],
    ["policy_or_artifact_error", agent("fixes-add.sh"), ["--deny", "math.js"]],
    // Without the sandbox: the agent must reach the source, and its sleeper's pid must be a host pid.
    [
      "source_repository_changed",
      `${agent("fixes-add-and-writes-source.sh")} test.js`,
      ["--env", "HANDOFF_TEST_SOURCE", "--sandbox", "none"],
    ],
    ["timeout", agent("spawns-sleeper-and-waits.sh"), ["--env", "HANDOFF_TEST_OUT", "--timeout", "2", "--sandbox", "none"]],
  ] as const)("a run ending %s exits with its contract code and says so on stdout", async (reason, agentCmd, extra) => {
    const out = agentOutputDir();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await cliRun(repo, agentCmd, ["--verify", "npm test", ...extra], { HANDOFF_TEST_SOURCE: repo, HANDOFF_TEST_OUT: out.dir });
    expect(run.result.terminalReason).toBe(reason);
    expect(run.outcome.code, run.outcome.stderr).toBe(EXIT_CODES[reason]);
    expect(run.outcome.stdout.split("\n")[0]).toMatch(new RegExp(`^${reason}`));
    expect(run.outcome.stdout).toContain(`run directory: ${run.runDir}`);
    if (reason === "timeout") expect(isRunning(await out.sleeperPid())).toBe(false);
  });

  test.each(["SIGINT", "SIGTERM"] as const)(
    "%s mid-agent exits 130, result.json says user_cancelled, and no process is left",
    async (signal) => {
      const out = agentOutputDir();
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const runsDir = join(tempDir(), "runs");
      const cli = startCli(
        // --sandbox none: the process-group kill alone must leave nothing (the sandbox's PID namespace is tested in containment).
        commandRunArgs(
          repo,
          agent("spawns-sleeper-and-waits.sh"),
          ["--env", "HANDOFF_TEST_OUT", "--yes", "--no-verify", "--sandbox", "none", "--runs-dir", runsDir, "--run-id", "r"],
          TASK,
        ),
        { env: { HANDOFF_TEST_OUT: out.dir } },
      );
      const sleeper = await out.sleeperPid();
      cli.child.kill(signal);
      const outcome = await cli.done;

      expect(outcome.code, outcome.stderr).toBe(130);
      expect(outcome.stderr).toContain("interrupted");
      const result = JSON.parse(readFileSync(join(runsDir, "r", "result.json"), "utf8"));
      expect(result).toMatchObject({ terminalReason: "user_cancelled", detail: "interrupted", status: "cancelled" });
      expect(isRunning(sleeper)).toBe(false);
    },
  );

  test.each([
    ["an unknown option", ["--frobnicate"], /--frobnicate/],
    ["an unsafe --run-id", ["--run-id", "../x"], /--run-id '\.\.\/x'/],
    ["a bad --timeout", ["--timeout", "soon"], /--timeout.*'soon'/],
  ])("%s is a usage error: exit 2, one line, no run directory", async (_what, extra, says) => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runsDir = join(tempDir(), "runs");
    const outcome = await runCli(commandRunArgs(repo, "true", ["--yes", "--runs-dir", runsDir, ...extra], TASK));
    expectUsageError(outcome, says);
    expect(existsSync(runsDir)).toBe(false);
    expect(existsSync(join(runsDir, "..", "x"))).toBe(false);
  });

  test("a directory that is not a git repository is a usage error", async () => {
    const notRepo = tempDir("handoff-not-a-repo");
    const runsDir = join(tempDir(), "runs");
    const outcome = await runCli(commandRunArgs(notRepo, "true", ["--yes", "--runs-dir", runsDir], TASK));
    expectUsageError(outcome, /not inside a git repository/);
    expect(existsSync(runsDir)).toBe(false);
  });

  test("a runs directory inside the source repository is a usage error", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const outcome = await runCli(commandRunArgs(repo, "true", ["--yes", "--runs-dir", join(repo, "runs")], TASK));
    expectUsageError(outcome, /inside the source repository/);
    expect(existsSync(join(repo, "runs"))).toBe(false);
  });

  test("a dirty source without --allow-dirty is a usage error naming the dirty path", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    writeFileSync(join(repo, "math.js"), "// mine\n");
    const runsDir = join(tempDir(), "runs");
    const outcome = await runCli(commandRunArgs(repo, "true", ["--yes", "--verify", "npm test", "--runs-dir", runsDir], TASK));
    expectUsageError(outcome, /uncommitted changes \(math\.js\).*--allow-dirty/);
    expect(existsSync(runsDir)).toBe(false);
  });

  test(".handoff.json at the base commit supplies verify; an uncommitted edit of it does not count", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".handoff.json": JSON.stringify({ verify: ["npm test"] }) });
    writeFileSync(join(repo, ".handoff.json"), JSON.stringify({ verify: ["exit 1"] }));
    const run = await cliRun(repo, agent("fixes-add.sh"), ["--allow-dirty"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    expect(run.result.verification.commands.map((c: { command: string }) => c.command)).toEqual(["npm test"]);
  });

  test.each([
    ["an unknown key", { verfy: ["npm test"] }, /'verfy'/],
    ["a key of the wrong type", { timeout: "soon" }, /'timeout'/],
  ])(".handoff.json with %s is a usage error naming the key", async (_what, config, says) => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".handoff.json": JSON.stringify(config) });
    const runsDir = join(tempDir(), "runs");
    const outcome = await runCli(commandRunArgs(repo, "true", ["--yes", "--runs-dir", runsDir], TASK));
    expectUsageError(outcome, says);
    expect(outcome.stderr).toContain(".handoff.json");
    expect(existsSync(runsDir)).toBe(false);
  });

  test("--baseline says a wrong fix left a red base red: still_failing, each command's base and patched result recorded", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await cliRun(repo, agent("breaks-add.sh"), ["--verify", "npm test", "--baseline"]);
    expect(run.outcome.code).toBe(1);
    expect(run.result).toMatchObject({ terminalReason: "verification_failed", detail: "still_failing" });
    expect(run.outcome.stdout).toContain("still red, as on the base");
    expect(run.result.verification.baseline.passed).toBe(false);
    expect(run.result.verification.baseline.transitions).toEqual([{ command: "npm test", base: "red", patched: "red" }]);
  });
});

describe("handoff run: the patch and workspace limits", () => {
  test("a committed 9 MB file no longer ends every run file_too_large: a do-nothing agent exits 3 no_changes", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, "blob.txt": "a".repeat(9_000_000) });
    const run = await cliRun(repo, agent("does-nothing.sh"), ["--no-verify"]);
    expect(run.outcome.code, run.outcome.stdout).toBe(3);
    expect(run.result).toMatchObject({ terminalReason: "no_changes", policy: { violations: [] } });
  });

  test("a committed tree 300 levels deep no longer ends every run workspace_too_deep: a do-nothing agent exits 3 no_changes", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, [`${"d/".repeat(300)}keep.txt`]: "deep\n" });
    const run = await cliRun(repo, agent("does-nothing.sh"), ["--no-verify"]);
    expect(run.outcome.code, run.outcome.stdout).toBe(3);
    expect(run.result).toMatchObject({ terminalReason: "no_changes", policy: { violations: [] } });
  });

  test.each([
    ["--max-files 0", ["--max-files", "0"], /--max-files takes a positive whole number, not '0'/],
    ["--max-file-size 1.5", ["--max-file-size", "1.5"], /--max-file-size takes a positive whole number/],
    ["--max-patch-size 2048", ["--max-patch-size", "2048"], /--max-patch-size must be at most 1024 MiB/],
    // Whichever check says it (the option parser or the limits), 1e30 is refused before anything is created.
    ["--max-workspace-entries 1e30", ["--max-workspace-entries", "1e30"], /--max-workspace-entries .*(at most|whole number)/],
    ["--max-depth=-1", ["--max-depth=-1"], /--max-depth takes a positive whole number/],
  ])("a bad limit (%s) is a usage error: exit 2, one line, no run directory", async (_what, extra, says) => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runsDir = join(tempDir(), "runs");
    const outcome = await runCli(commandRunArgs(repo, "true", ["--yes", "--runs-dir", runsDir, ...extra], TASK));
    expectUsageError(outcome, says);
    expect(existsSync(runsDir)).toBe(false);
  });

  test.each([
    ["maxFileSize: 0", { maxFileSize: 0 }, /'maxFileSize': Too small/],
    ["maxPatchSize: 4096", { maxPatchSize: 4096 }, /'maxPatchSize': Too big/],
    ["maxDepth: 2.5", { maxDepth: 2.5 }, /'maxDepth': .*expected int/],
  ])(".handoff.json with a bad limit (%s) is a usage error naming the key", async (_what, config, says) => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".handoff.json": JSON.stringify(config) });
    const runsDir = join(tempDir(), "runs");
    const outcome = await runCli(commandRunArgs(repo, "true", ["--yes", "--runs-dir", runsDir], TASK));
    expectUsageError(outcome, says);
    expect(existsSync(runsDir)).toBe(false);
  });

  test(".handoff.json maxFileSize sets the file limit, --max-file-size wins over it, and request.json records the limits", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".handoff.json": JSON.stringify({ maxFileSize: 1, maxFiles: 5 }) });
    const writesOneAndAHalfMiB = `${agent("fixes-add.sh")} && head -c 1572864 /dev/zero | tr '\\0' a > large.txt`;
    const fromFile = await cliRun(repo, writesOneAndAHalfMiB, ["--no-verify"]);
    expect(fromFile.outcome.code, fromFile.outcome.stdout).toBe(4);
    expect(fromFile.result).toMatchObject({ terminalReason: "policy_or_artifact_error", detail: "file_too_large" });
    const fromOption = await cliRun(repo, writesOneAndAHalfMiB, ["--max-file-size", "2", "--max-depth", "40", "--no-verify"]);
    expect(fromOption.outcome.code, fromOption.outcome.stdout).toBe(0);
    const request = JSON.parse(readFileSync(join(fromOption.runDir, "request.json"), "utf8"));
    expect(request.policy).toMatchObject({
      maxFiles: 5,
      maxFileBytes: 2 * 1024 * 1024,
      maxPatchBytes: 64 * 1024 * 1024,
      maxWorkspaceEntries: 2_000_000,
      maxDepth: 40,
    });
  });
});

describe("handoff show", () => {
  test("a report larger than a pipe's buffer reaches a slow reader whole, not cut at 64 KiB by the exit", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, `${agent("fixes-add-with-a-large-new-file.sh")} 100000`, { verify: ["npm test"] });
    const whole = execFileSync(process.execPath, [HANDOFF_BIN, "show", runDir]);
    expect(whole.length).toBeGreaterThan(512 * 1024);
    // The reader starts only after a second: by then handoff has written all it could and wants to exit.
    const piped = execFileSync("sh", ["-c", '"$0" "$1" show "$2" | { sleep 1; wc -c; }', process.execPath, HANDOFF_BIN, runDir], {
      encoding: "utf8",
    });
    expect(Number(piped.trim())).toBe(whole.length);
  });

  test("shows the verdict, the patch, the verification and the timings as text, markdown and json", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { result, runDir } = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test"] });
    const runsDir = join(runDir, "..");

    const text = await runCli(["show", runDir]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("verdict: verified, exit 0");
    expect(text.stdout).toContain("M math.js +1 -1");
    expect(text.stdout).toMatch(/ok {3}\[verify\] npm test: exit 0, \d+/);
    expect(text.stdout).toContain("+  return a + b;");
    expect(text.stdout).toMatch(/Timings\n {2}total [\d.]+ m?s/);

    const markdown = await runCli(["show", result.runId, "--runs-dir", runsDir, "--format", "markdown"]);
    expect(markdown.code, markdown.stderr).toBe(0);
    expect(markdown.stdout).toContain(`# handoff run \`${result.runId}\``);
    expect(markdown.stdout).toContain("## Verification");
    expect(markdown.stdout).toContain("### Timings");
    expect(markdown.stdout).toMatch(/```diff\n[\s\S]*\+ {2}return a \+ b;[\s\S]*```/);

    const json = await runCli(["show", runDir, "--format", "json"]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(JSON.parse(readFileSync(join(runDir, "result.json"), "utf8")));
  });

  test("P4: terminal controls from the agent are escaped in run progress and in show, never sent raw", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await cliRun(repo, agent("prints-terminal-escapes.sh"), ["--verify", "npm test"]);
    expect(run.result.terminalReason, run.outcome.stderr).toBe("verified");
    expect(run.outcome.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/u);
    expect(run.outcome.stderr).toContain("\\x1b]52;c;");
    for (const format of ["text", "markdown"]) {
      const shown = await runCli(["show", run.runDir, "--format", format]);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/u);
      expect(shown.stdout).toContain("\\x1b[31mnothing to see");
    }
  });

  test("a run that does not exist, or a bad format, is a usage error", async () => {
    expectUsageError(await runCli(["show", join(tempDir(), "nope")]), /no finished run/);
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, agent("does-nothing.sh"), { noVerify: true });
    expectUsageError(await runCli(["show", runDir, "--format", "pdf"]), /--format must be/);
  });
});

/**
 * `sh -c` running handoff into a pipe whose reader starts a second late (by then handoff has written all it could
 * and wants to exit), its exit code kept aside: `{ code, bytes }` of what arrived in the file at the far end.
 */
function throughSlowPipe(args: readonly string[], env: Record<string, string> = {}): { code: number; bytes: Buffer; stderr: string } {
  const dir = tempDir("handoff-pipe");
  const [out, status, err] = [join(dir, "out"), join(dir, "status"), join(dir, "err")];
  const script = '{ "$@" 2>"$ERR"; echo $? > "$STATUS"; } | { sleep 1; cat > "$OUT"; }';
  execFileSync("sh", ["-c", script, "sh", process.execPath, HANDOFF_BIN, ...args], {
    env: { ...process.env, ...env, OUT: out, STATUS: status, ERR: err },
  });
  return { code: Number(readFileSync(status, "utf8").trim()), bytes: readFileSync(out), stderr: readFileSync(err, "utf8") };
}

describe("output through a pipe: no command exits before its output is written", () => {
  test("a multi-megabyte report in every format piped through cat into a file arrives whole, and show exits 0", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, `${agent("fixes-add-with-a-large-new-file.sh")} 600000`, { verify: ["npm test"] });
    for (const format of ["text", "markdown", "json", "junit"]) {
      const whole = execFileSync(process.execPath, [HANDOFF_BIN, "show", runDir, "--format", format], { maxBuffer: 64 * 1024 * 1024 });
      // markdown is a PR's report, kept under 60,000 characters whatever the patch (test/report.test.ts).
      if (format === "text") expect(whole.length, format).toBeGreaterThan(4 * 1024 * 1024);
      const piped = throughSlowPipe(["show", runDir, "--format", format]);
      expect(piped.code, piped.stderr).toBe(0);
      expect(piped.bytes.length, format).toBe(whole.length);
      expect(piped.bytes.equals(whole), format).toBe(true);
    }
  });

  test("run --json of a result past a pipe's 64 KiB arrives whole, equal to result.json, and apply's list of files too", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runsDir = join(tempDir("handoff-pipe-runs"), "runs");
    const state = tempDir("handoff-pipe-state");
    const env = {
      XDG_STATE_HOME: join(state, "xdg"),
      HANDOFF_WORKSPACE_DIR: join(state, "ws"),
      HANDOFF_CLI_HOME_DIR: join(state, "homes"),
    };
    // 2000 files with long names: about 140 KiB of names, listed in result.json and by apply.
    const writesLongNames = `${agent("fixes-add.sh")} && for i in $(seq 1 2000); do echo x > "a-file-whose-long-name-fills-a-pipe-buffer-sooner-than-short-ones-$i.txt"; done`;
    const run = throughSlowPipe(
      commandRunArgs(
        repo,
        writesLongNames,
        ["--max-files", "3000", "--verify", "npm test", "--yes", "--json", "--runs-dir", runsDir, "--run-id", "r"],
        TASK,
      ),
      env,
    );
    const resultText = readFileSync(join(runsDir, "r", "result.json"), "utf8");
    expect(resultText.length).toBeGreaterThan(192 * 1024);
    expect(run.code, run.stderr).toBe(0);
    expect(run.bytes.toString("utf8")).toBe(resultText);

    const applied = throughSlowPipe(["apply", join(runsDir, "r")], env);
    expect(applied.code, applied.stderr).toBe(0);
    const files = applied.bytes.toString("utf8").split("\n").filter(Boolean);
    expect(applied.bytes.length).toBeGreaterThan(64 * 1024);
    expect(files).toHaveLength(2001);
    expect(files).toContain("math.js");
  });

  test("a usage error through a pipe keeps its exit code and its line", () => {
    const piped = throughSlowPipe(["show", join(tempDir("handoff-pipe-none"), "no-such-run")]);
    expect(piped.code).toBe(2);
    expect(piped.bytes.length).toBe(0);
    expect(piped.stderr).toMatch(/^handoff: .*no-such-run.*\n$/);
  });

  test("a reader that stops early (| head) is not a failure: show exits 0, with no EPIPE on stderr", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, `${agent("fixes-add-with-a-large-new-file.sh")} 100000`, { verify: ["npm test"] });
    const dir = tempDir("handoff-pipe-head");
    const script = '{ "$@" 2>"$ERR"; echo $? > "$STATUS"; } | head -c 100 > /dev/null';
    execFileSync("sh", ["-c", script, "sh", process.execPath, HANDOFF_BIN, "show", runDir], {
      env: { ...process.env, STATUS: join(dir, "status"), ERR: join(dir, "err") },
    });
    expect(readFileSync(join(dir, "status"), "utf8").trim()).toBe("0");
    expect(readFileSync(join(dir, "err"), "utf8")).toBe("");
  });
});

describe("handoff apply", () => {
  test("applies a verified run's patch to the source: files changed and staged", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test"] });
    const outcome = await runCli(["apply", runDir]);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stdout).toBe("math.js\n");
    expect(readFileSync(join(repo, "math.js"), "utf8")).toContain("return a + b;");
    expect(gitIn(repo, "diff", "--cached", "--name-only")).toBe("math.js\n");
    expect(gitIn(repo, "diff", "--name-only")).toBe("");
  });

  test("refuses a run that was not verified, and says why", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, agent("breaks-add.sh"), { verify: ["npm test"] });
    const outcome = await runCli(["apply", runDir]);
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toMatch(/apply refused: .*ended verification_failed; only a verified run can be applied/);
    expect(gitIn(repo, "status", "--porcelain")).toBe("");
  });

  test("refuses when a file the patch touches has uncommitted changes", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test"] });
    writeFileSync(join(repo, "math.js"), "// my own work in progress\n");
    const outcome = await runCli(["apply", runDir]);
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toMatch(/apply refused: the patch touches files with uncommitted changes: math\.js/);
    expect(readFileSync(join(repo, "math.js"), "utf8")).toBe("// my own work in progress\n");
  });

  test("applies when HEAD moved but the patch still applies cleanly, and says HEAD moved", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test"] });
    commitFile(repo, "README.md", "# fixture\n");
    const outcome = await runCli(["apply", runDir]);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stderr).toContain("HEAD had moved");
    expect(readFileSync(join(repo, "math.js"), "utf8")).toContain("return a + b;");
    expect(gitIn(repo, "diff", "--cached", "--name-only")).toBe("math.js\n");
  });

  test("refuses when HEAD moved and the patch no longer applies", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test"] });
    commitFile(repo, "math.js", "export function add(a, b) {\n  return b - a;\n}\n");
    const outcome = await runCli(["apply", runDir]);
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toMatch(/apply refused: the patch no longer applies cleanly/);
    expect(gitIn(repo, "status", "--porcelain")).toBe("");
  });
});
