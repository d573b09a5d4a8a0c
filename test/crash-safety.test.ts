import { type ChildProcess, spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { detectCgroupSupport } from "../src/containment/cgroup.js";
import { sweepCrashedRuns } from "../src/run-dir/crash-sweep.js";
import { RunResult } from "../src/verdict/result.js";
import { RunDirectory, currentOwner } from "../src/run-dir/run-dir.js";
import { generateRunNonce, runNames } from "../src/vocabulary/run-names.js";
import { processStartTime } from "../src/containment/survivors.js";
import { runCli, startCli, commandRunArgs } from "./helpers/cli.js";
import { agentOutputDir, isRunning, waitForFile } from "./helpers/processes.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, readJson } from "./helpers/run.js";

const TASK = "make add() return the sum";

interface Dirs {
  readonly runsDir: string;
  readonly workspacesDir: string;
  readonly cliHomesDir: string;
}

function makeDirs(): Dirs {
  const root = tempDir("handoff-crash");
  const dirs = { runsDir: join(root, "runs"), workspacesDir: join(root, "ws"), cliHomesDir: join(root, "homes") };
  for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true });
  return dirs;
}

/** `handoff run` without the sandbox: what is left behind after a crash is what the sweep is for. */
/** Crash safety is not about verification: `checks` is `--no-verify` unless a test needs a verify command. */
function runArgs(repo: string, dirs: Dirs, runId: string, agentCmd: string, checks: readonly string[] = ["--no-verify"]): string[] {
  return commandRunArgs(
    repo,
    agentCmd,
    [
      "--env",
      "HANDOFF_TEST_OUT",
      "--yes",
      "--sandbox",
      "none",
      "--runs-dir",
      dirs.runsDir,
      "--run-id",
      runId,
      "--workspace-dir",
      dirs.workspacesDir,
      "--cli-home-dir",
      dirs.cliHomesDir,
      ...checks,
    ],
    TASK,
  );
}

async function waitFor(what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function entriesOf(dir: string, runId: string): string[] {
  return readdirSync(dir).filter((name) => name.startsWith(`${runId}-`));
}

/** A long-lived process killed when the test ends; it waits until the process has exec'd `sleep`. */
async function startSleeper(options: { cwd?: string; env?: Record<string, string> } = {}): Promise<number> {
  const child: ChildProcess = spawn("sleep", ["300"], {
    cwd: options.cwd ?? "/",
    env: { PATH: "/usr/bin:/bin", ...options.env },
    stdio: "ignore",
  });
  onTestFinished(() => {
    try {
      process.kill(child.pid!, "SIGKILL");
    } catch {
      // already gone
    }
  });
  await waitFor("sleep to start", () => {
    try {
      return readFileSync(`/proc/${child.pid}/cmdline`, "utf8").startsWith("sleep\0");
    } catch {
      return false;
    }
  });
  return child.pid!;
}

/** The nonce of every run `fakeRunInProgress` makes, unless it is given another (null: a checkpoint from before nonces). */
const FAKE_NONCE = "0123456789abcdef";

/** A run directory as a handoff mid-run leaves it: request, events, a checkpoint not done, owned by `owner`. */
function fakeRunInProgress(
  dirs: Dirs,
  runId: string,
  owner: Record<string, unknown>,
  resources: Record<string, unknown> = {},
  nonce: string | null = FAKE_NONCE,
): string {
  const runDir = join(dirs.runsDir, runId);
  mkdirSync(runDir, { mode: 0o700 });
  const request = {
    runId,
    task: TASK,
    repo: { path: "/src/repo", baseCommit: "0".repeat(40) },
    backend: { name: "command" },
    workspacesDir: dirs.workspacesDir,
    cliHomesDir: dirs.cliHomesDir,
  };
  writeFileSync(join(runDir, "request.json"), JSON.stringify(request));
  writeFileSync(join(runDir, "events.jsonl"), `${JSON.stringify({ seq: 1, time: new Date().toISOString(), type: "run.started" })}\n`);
  writeFileSync(join(runDir, "changes.patch"), "");
  writeFileSync(join(runDir, "test.log"), "");
  const checkpoint = {
    runId,
    ...(nonce === null ? {} : { nonce }),
    phase: "agent",
    pid: owner.pid,
    owner,
    resources,
    updatedAt: new Date().toISOString(),
  };
  writeFileSync(join(runDir, "checkpoint.json"), JSON.stringify(checkpoint));
  return runDir;
}

/** The test process as owner, but with another start time: what a dead handoff whose pid was reused looks like. */
function reusedPidOwner(): Record<string, unknown> {
  const owner = currentOwner();
  return { ...owner, startTime: owner.startTime! - 1 };
}

describe("crash safety", () => {
  test("kill -9 in attempt 2 of --attempts: the sweep names the attempt the run died in, and attempt 1's files stay as written", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const dirs = makeDirs();
    const args = runArgs(repo, dirs, "crashed", agent("sleeps-on-the-second-attempt.sh"), ["--verify", "npm test", "--attempts", "2"]);
    const crashed = startCli(args);
    const exited = new Promise((resolve) => crashed.child.once("exit", resolve));
    const checkpointPath = join(dirs.runsDir, "crashed", "checkpoint.json");
    await waitFor("attempt 2's agent phase", () => {
      const checkpoint = existsSync(checkpointPath) ? readJson(checkpointPath) : {};
      return checkpoint.attempt === 2 && checkpoint.phase === "agent";
    });
    crashed.child.kill("SIGKILL");
    await exited;
    const attempt1 = ["changes.patch", "test.log", "feedback.md", "backend-result.json"].map((name) =>
      readFileSync(join(dirs.runsDir, "crashed", "attempts", "1", name), "utf8"),
    );

    const second = await runCli(runArgs(repo, dirs, "second", agent("does-nothing.sh")));
    expect(second.code, second.stderr).toBe(3);
    const result = RunResult.parse(readJson(join(dirs.runsDir, "crashed", "result.json")));
    expect(result).toMatchObject({ terminalReason: "user_cancelled", detail: "runner_crashed" });
    expect(result.summary).toContain(`during the agent phase of attempt 2 (pid ${crashed.child.pid})`);
    expect(result.summary).toContain("attempt 1 is in attempts/1/");
    expect(
      ["changes.patch", "test.log", "feedback.md", "backend-result.json"].map((name) =>
        readFileSync(join(dirs.runsDir, "crashed", "attempts", "1", name), "utf8"),
      ),
    ).toEqual(attempt1);
    expect(attempt1[0]).toContain("a * b + 1");
    expect(entriesOf(dirs.workspacesDir, "crashed")).toEqual([]);
  });

  test("kill -9 mid-agent leaves a checkpoint at agent; the next handoff start kills the leftovers, removes the workspace and ends the run runner_crashed", async () => {
    const out = agentOutputDir();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const dirs = makeDirs();
    const crashed = startCli(runArgs(repo, dirs, "crashed", agent("leaves-daemons-and-waits.sh")), { env: { HANDOFF_TEST_OUT: out.dir } });
    const exited = new Promise((resolve) => crashed.child.once("exit", resolve));
    const pids = await Promise.all(
      ["agent.pid", "marker.pid", "unmarked.pid"].map(async (name) => Number((await waitForFile(join(out.dir, name))).trim())),
    );
    const checkpointPath = join(dirs.runsDir, "crashed", "checkpoint.json");
    await waitFor("checkpoint at agent", () => readJson(checkpointPath).phase === "agent");

    crashed.child.kill("SIGKILL");
    await exited;

    const checkpoint = readJson(checkpointPath);
    expect(checkpoint).toMatchObject({ runId: "crashed", phase: "agent", owner: { pid: crashed.child.pid } });
    expect(checkpoint.done).toBeUndefined();
    expect(existsSync(join(dirs.runsDir, "crashed", "result.json"))).toBe(false);
    for (const pid of pids) expect(isRunning(pid), `pid ${pid} outlived handoff`).toBe(true);
    expect(entriesOf(dirs.workspacesDir, "crashed")).not.toEqual([]);

    const second = await runCli(runArgs(repo, dirs, "second", agent("does-nothing.sh")), { env: { HANDOFF_TEST_OUT: out.dir } });
    expect(second.code, second.stderr).toBe(3);

    const result = RunResult.parse(readJson(join(dirs.runsDir, "crashed", "result.json")));
    expect(result).toMatchObject({ terminalReason: "user_cancelled", status: "cancelled", detail: "runner_crashed", patch: null });
    expect(result.summary).toContain(`during the agent phase (pid ${crashed.child.pid})`);
    expect(result.repo).toEqual((readJson(join(dirs.runsDir, "crashed", "request.json")) as { repo: unknown }).repo);
    expect(readJson(checkpointPath)).toMatchObject({
      phase: "agent",
      done: true,
      terminalReason: "user_cancelled",
      detail: "runner_crashed",
    });
    const events = readFileSync(join(dirs.runsDir, "crashed", "events.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events.at(-1)).toMatchObject({ type: "run.finished", terminalReason: "user_cancelled", detail: "runner_crashed" });
    expect(events.map((event) => event.seq)).toEqual(events.map((_, i) => i + 1));
    expect(existsSync(join(dirs.runsDir, "crashed", "backend-result.json"))).toBe(true);
    expect(existsSync(join(dirs.runsDir, "crashed", ".sweep.lock"))).toBe(false);

    expect(entriesOf(dirs.workspacesDir, "crashed")).toEqual([]);
    expect(entriesOf(dirs.cliHomesDir, "crashed")).toEqual([]);
    for (const pid of pids) expect(isRunning(pid), `pid ${pid} survived the sweep`).toBe(false);
    const [agentPid, markedPid, unmarkedPid] = pids;
    const killed = (result.sweep as { killed: Array<{ pid: number; reason: string }> }).killed.map(({ pid, reason }) => ({ pid, reason }));
    expect(killed).toEqual(
      expect.arrayContaining([
        { pid: agentPid, reason: "marker" },
        { pid: markedPid, reason: "marker" },
        { pid: unmarkedPid, reason: "holds_workspace" },
      ]),
    );

    // Where cgroups are writable (root here), the run's cgroup was tracked and went with the sweep.
    const trackedCgroups = (checkpoint.resources as { cgroups?: string[] } | undefined)?.cgroups ?? [];
    expect(checkpoint.nonce).toMatch(/^[0-9a-f]{16}$/);
    if (detectCgroupSupport().kind !== "unavailable")
      expect(trackedCgroups).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`/handoff-crashed-${checkpoint.nonce}$`))]));
    for (const cgroup of trackedCgroups) expect(existsSync(cgroup), cgroup).toBe(false);

    const shown = await runCli(["show", "crashed", "--runs-dir", dirs.runsDir]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain("runner_crashed");
  });

  test("a live run of another handoff process is not swept", async () => {
    const dirs = makeDirs();
    const workspace = join(dirs.workspacesDir, runNames("live", FAKE_NONCE).workspace);
    mkdirSync(workspace);
    const agentPid = await startSleeper({ cwd: workspace, env: { HANDOFF_RUN_ID: "live", HANDOFF_RUN_NONCE: FAKE_NONCE } });
    const runDir = fakeRunInProgress(dirs, "live", { ...currentOwner() }, { workspaceRoot: workspace });
    const before = readFileSync(join(runDir, "checkpoint.json"));

    expect(await sweepCrashedRuns(dirs.runsDir)).toEqual([]);
    expect(readFileSync(join(runDir, "checkpoint.json"))).toEqual(before);
    expect(existsSync(join(runDir, "result.json"))).toBe(false);
    expect(existsSync(workspace)).toBe(true);
    expect(isRunning(agentPid)).toBe(true);
  });

  test("a run whose owner pid now names another process (other start time) counts as crashed and is swept", async () => {
    const dirs = makeDirs();
    const workspace = join(dirs.workspacesDir, runNames("reused", FAKE_NONCE).workspace);
    mkdirSync(join(workspace, "ws"), { recursive: true });
    const agentPid = await startSleeper({ cwd: join(workspace, "ws") });
    const runDir = fakeRunInProgress(dirs, "reused", reusedPidOwner(), { workspaceRoot: workspace });

    const [swept] = await sweepCrashedRuns(dirs.runsDir);
    expect(swept).toMatchObject({ runId: "reused", phase: "agent", removed: [workspace] });
    expect(swept?.killed.map(({ pid, reason }) => ({ pid, reason }))).toEqual([{ pid: agentPid, reason: "holds_workspace" }]);
    expect(isRunning(agentPid)).toBe(false);
    expect(existsSync(workspace)).toBe(false);
    const result = RunResult.parse(readJson(join(runDir, "result.json")));
    expect(result).toMatchObject({ detail: "runner_crashed", repo: { path: "/src/repo" }, backend: { name: "command" } });
    expect(readJson(join(runDir, "backend-result.json"))).toEqual({ backend: "command", ran: false });
  });

  test("finished runs, unreadable checkpoints and links in the runs directory are left alone, without a crash", async () => {
    const dirs = makeDirs();
    const done = fakeRunInProgress(dirs, "done", reusedPidOwner());
    writeFileSync(join(done, "checkpoint.json"), JSON.stringify({ runId: "done", phase: "finish", owner: reusedPidOwner(), done: true }));
    const garbage = fakeRunInProgress(dirs, "garbage", reusedPidOwner());
    writeFileSync(join(garbage, "checkpoint.json"), "{ not json");
    const wrongShape = fakeRunInProgress(dirs, "wrong-shape", reusedPidOwner());
    writeFileSync(join(wrongShape, "checkpoint.json"), JSON.stringify({ phase: 7, owner: "me" }));
    const directory = fakeRunInProgress(dirs, "checkpoint-dir", reusedPidOwner());
    execFileSync("rm", [join(directory, "checkpoint.json")]);
    mkdirSync(join(directory, "checkpoint.json"));
    const fifo = fakeRunInProgress(dirs, "checkpoint-fifo", reusedPidOwner());
    execFileSync("rm", [join(fifo, "checkpoint.json")]);
    execFileSync("mkfifo", [join(fifo, "checkpoint.json")]);
    const badNonce = fakeRunInProgress(dirs, "bad-nonce", reusedPidOwner(), {}, "../../../etc");
    const huge = fakeRunInProgress(dirs, "huge", reusedPidOwner());
    writeFileSync(join(huge, "checkpoint.json"), `{"phase":"agent","pid":1,"pad":"${"x".repeat(200_000)}"}`);
    mkdirSync(join(dirs.runsDir, "no-checkpoint"));
    writeFileSync(join(dirs.runsDir, "a-file"), "not a run");
    const elsewhere = tempDir("handoff-crash-elsewhere");
    const linked = fakeRunInProgress({ ...dirs, runsDir: elsewhere }, "linked", reusedPidOwner());
    symlinkSync(linked, join(dirs.runsDir, "linked"));

    expect(await sweepCrashedRuns(dirs.runsDir)).toEqual([]);
    for (const runDir of [done, garbage, wrongShape, badNonce, directory, fifo, huge, linked])
      expect(existsSync(join(runDir, "result.json")), runDir).toBe(false);
    expect(await sweepCrashedRuns(join(dirs.runsDir, "missing"))).toEqual([]);
  });

  test("a finished run is remembered with its checkpoint's stamp, and swept all the same once that checkpoint changes", async () => {
    const dirs = makeDirs();
    const runDir = fakeRunInProgress(dirs, "later", reusedPidOwner());
    const inProgress = readFileSync(join(runDir, "checkpoint.json"), "utf8");
    const finished = { runId: "later", phase: "finish", owner: reusedPidOwner(), done: true, cleanup: "done" };
    writeFileSync(join(runDir, "checkpoint.json"), JSON.stringify(finished));
    expect(await sweepCrashedRuns(dirs.runsDir)).toEqual([]);
    expect(Object.keys((readJson(join(dirs.runsDir, ".settled-crash.json")) as { runs: object }).runs)).toEqual(["later"]);
    expect(await sweepCrashedRuns(dirs.runsDir)).toEqual([]);
    // Written in place (same inode), as only something other than handoff would: the stamp changes all the same.
    writeFileSync(join(runDir, "checkpoint.json"), inProgress);
    const [swept] = await sweepCrashedRuns(dirs.runsDir);
    expect(swept).toMatchObject({ runId: "later", phase: "agent", resultKept: false });
    expect(RunResult.parse(readJson(join(runDir, "result.json")))).toMatchObject({ detail: "runner_crashed" });
  });

  test("the sweep removes only what the run recorded under its own nonce's names, and never follows a link", async () => {
    const dirs = makeDirs();
    const outside = tempDir("handoff-crash-outside");
    writeFileSync(join(outside, "precious.txt"), "keep me\n");
    const names = runNames("r", FAKE_NONCE);
    const workspace = join(dirs.workspacesDir, names.workspace);
    mkdirSync(join(workspace, "ws"), { recursive: true });
    symlinkSync(outside, join(workspace, "ws", "link-to-outside"));
    symlinkSync(join(outside, "precious.txt"), join(workspace, "ws", "link-to-file"));
    const linkedScratch = join(dirs.workspacesDir, names.scratch);
    symlinkSync(outside, linkedScratch);
    const cliHome = join(dirs.cliHomesDir, names.cliHome);
    mkdirSync(cliHome);
    // Named for the run id but never recorded by this run: another run's with the same id (another runs directory).
    const sameIdOtherRun = join(dirs.workspacesDir, runNames("r", generateRunNonce()).workspace);
    const sameIdMkdtemp = join(dirs.workspacesDir, "r-abc123");
    for (const dir of [sameIdOtherRun, sameIdMkdtemp]) mkdirSync(dir);
    fakeRunInProgress(dirs, "r", reusedPidOwner(), {
      workspaceRoot: workspace,
      scratch: linkedScratch,
      cliHome,
      cgroups: ["/sys/fs/cgroup/user.slice"],
    });
    // Recorded, but not under this run's nonce's names (a doctored checkpoint): kept.
    const trackedElsewhere = tempDir("handoff-crash-tracked");
    const otherNonceScratch = join(dirs.workspacesDir, runNames("s", generateRunNonce()).scratch);
    const wrongKind = join(dirs.cliHomesDir, runNames("s", FAKE_NONCE).workspace); // a workspace's name, recorded as the CLI home
    for (const dir of [otherNonceScratch, wrongKind]) mkdirSync(dir);
    fakeRunInProgress(dirs, "s", reusedPidOwner(), { workspaceRoot: trackedElsewhere, scratch: otherNonceScratch, cliHome: wrongKind });

    const swept = await sweepCrashedRuns(dirs.runsDir);
    expect(swept.map((run) => [run.runId, [...run.removed].sort()])).toEqual([
      ["r", [cliHome, linkedScratch, workspace].sort()],
      ["s", []],
    ]);
    expect(readFileSync(join(outside, "precious.txt"), "utf8")).toBe("keep me\n");
    for (const kept of [trackedElsewhere, otherNonceScratch, wrongKind, sameIdOtherRun, sameIdMkdtemp])
      expect(existsSync(kept), kept).toBe(true);
    expect(existsSync(join(dirs.runsDir, "r", "result.json"))).toBe(true);
  });

  test("a crashed run recorded without a nonce (by an older handoff) has its recorded directories swept, and nothing is killed by its run id alone", async () => {
    const dirs = makeDirs();
    const workspace = join(dirs.workspacesDir, "old-abc123");
    mkdirSync(workspace);
    const holder = await startSleeper({ cwd: workspace });
    const sameIdElsewhere = await startSleeper({ env: { HANDOFF_RUN_ID: "old" } });
    fakeRunInProgress(dirs, "old", reusedPidOwner(), { workspaceRoot: workspace }, null);

    const [swept] = await sweepCrashedRuns(dirs.runsDir);
    expect(swept?.killed.map(({ pid, reason }) => ({ pid, reason }))).toEqual([{ pid: holder, reason: "holds_workspace" }]);
    expect(swept?.removed).toEqual([workspace]);
    expect(isRunning(sameIdElsewhere)).toBe(true);
  });

  test("a run that crashed after extraction keeps its patch on record, hashed and listed, never verified", async () => {
    const dirs = makeDirs();
    const runDir = fakeRunInProgress(dirs, "extracted", reusedPidOwner());
    const patch = [
      "diff --git a/math.js b/math.js",
      "index 1111111..2222222 100644",
      "--- a/math.js",
      "+++ b/math.js",
      "@@ -1,3 +1,3 @@",
      " export function add(a, b) {",
      "-  return a - b;",
      "+  return a + b;",
      " }",
      "diff --git a/new file.txt b/new file.txt",
      "new file mode 100644",
      "index 0000000..3333333",
      "--- /dev/null",
      "+++ b/new file.txt",
      "@@ -0,0 +1,2 @@",
      "+-- a line that looks like a header",
      "+++ and another",
      'diff --git "a/tab\\there" "b/tab\\there"',
      "deleted file mode 100644",
      "index 4444444..0000000",
      "GIT binary patch",
      "literal 0",
      "",
    ].join("\n");
    writeFileSync(join(runDir, "changes.patch"), patch);
    // The run recorded the patch in its checkpoint before writing it: only a file that matches is taken.
    const checkpoint = readJson(join(runDir, "checkpoint.json"));
    writeFileSync(
      join(runDir, "checkpoint.json"),
      JSON.stringify({
        ...checkpoint,
        artifacts: { "changes.patch": { bytes: patch.length, sha256: createHash("sha256").update(patch).digest("hex") } },
      }),
    );

    await sweepCrashedRuns(dirs.runsDir);
    const result = RunResult.parse(readJson(join(runDir, "result.json")));
    expect(result.patch?.sha256).toBe(createHash("sha256").update(patch).digest("hex"));
    expect(result.patch?.files).toEqual([
      { path: "math.js", change: "modified", additions: 1, deletions: 1 },
      { path: "new file.txt", change: "added", additions: 2, deletions: 0 },
      { path: '"tab\\there"', change: "deleted", additions: 0, deletions: 0 },
    ]);
    expect(result.verification).toMatchObject({ ran: false, passed: null });
  });

  test("a fresh .sweep.lock keeps a second sweeper away; a stale one is taken over", async () => {
    const dirs = makeDirs();
    const runDir = fakeRunInProgress(dirs, "locked", reusedPidOwner());
    const lock = join(runDir, ".sweep.lock");
    writeFileSync(lock, "12345\n");

    expect(await sweepCrashedRuns(dirs.runsDir)).toEqual([]);
    expect(existsSync(join(runDir, "result.json"))).toBe(false);

    const twoMinutesAgo = new Date(Date.now() - 120_000);
    utimesSync(lock, twoMinutesAgo, twoMinutesAgo);
    expect((await sweepCrashedRuns(dirs.runsDir)).map((run) => run.runId)).toEqual(["locked"]);
    expect(existsSync(join(runDir, "result.json"))).toBe(true);
    expect(existsSync(lock)).toBe(false);
  });

  test("a fresh .sweep.lock left by a sweeper that died is taken over at once, not a minute later; a live sweeper's is not", async () => {
    const dirs = makeDirs();
    const runDir = fakeRunInProgress(dirs, "orphan-lock", reusedPidOwner());
    const lock = join(runDir, ".sweep.lock");
    writeFileSync(lock, `${JSON.stringify(currentOwner())}\n`, { mode: 0o600 });
    expect(await sweepCrashedRuns(dirs.runsDir)).toEqual([]);

    writeFileSync(lock, `${JSON.stringify(reusedPidOwner())}\n`, { mode: 0o600 });
    expect((await sweepCrashedRuns(dirs.runsDir)).map((run) => run.runId)).toEqual(["orphan-lock"]);
    expect(existsSync(join(runDir, "result.json"))).toBe(true);
    expect(existsSync(lock)).toBe(false);
  });

  test("events go on from the crashed run's last sequence number, after a line the crash cut short", async () => {
    const dirs = makeDirs();
    const runDir = fakeRunInProgress(dirs, "cut", reusedPidOwner());
    writeFileSync(
      join(runDir, "events.jsonl"),
      `${JSON.stringify({ seq: 1, type: "run.started" })}\n${JSON.stringify({ seq: 2, type: "phase.started", phase: "agent" })}\n{"seq":3,"ty`,
    );
    writeFileSync(join(runDir, ".checkpoint.json.4242.tmp"), "{ half");
    const checkpoint = readJson(join(runDir, "checkpoint.json"));
    writeFileSync(
      join(runDir, "checkpoint.json"),
      JSON.stringify({ ...checkpoint, pid: 4242, owner: { ...(checkpoint.owner as object), pid: 4242, startTime: 1 } }),
    );

    await sweepCrashedRuns(dirs.runsDir);
    const lines = readFileSync(join(runDir, "events.jsonl"), "utf8").trim().split("\n");
    expect(lines[2]).toBe('{"seq":3,"ty');
    expect(lines.slice(3).map((line) => JSON.parse(line) as { seq: number; type: string })).toMatchObject([
      { seq: 3, type: "diagnostic" },
      { seq: 4, type: "run.finished", detail: "runner_crashed" },
    ]);
    expect(existsSync(join(runDir, ".checkpoint.json.4242.tmp"))).toBe(false);
  });

  test("checkpoint.json names its owner and, at once, everything the run tracks", () => {
    const runsDir = join(tempDir("handoff-crash"), "runs");
    const dir = RunDirectory.create(runsDir, "tracked");
    onTestFinished(() => dir.close());
    const read = () => readJson(join(dir.path, "checkpoint.json"));

    dir.checkpoint("clone");
    expect(dir.nonce).toMatch(/^[0-9a-f]{16}$/);
    expect(read()).toMatchObject({
      runId: "tracked",
      nonce: dir.nonce,
      phase: "clone",
      pid: process.pid,
      owner: { pid: process.pid, startTime: processStartTime(process.pid) },
      resources: {},
    });
    dir.track({ scratch: "/tmp/ws/tracked-handoff-aaaaaa" });
    dir.track({ workspaceRoot: "/tmp/ws/tracked-bbbbbb", cgroups: ["/sys/fs/cgroup/handoff-tracked-agent-1"] });
    dir.track({ cgroups: ["/sys/fs/cgroup/handoff-tracked-verify-2", "/sys/fs/cgroup/handoff-tracked-agent-1"] });
    expect(read()).toMatchObject({
      phase: "clone",
      resources: {
        scratch: "/tmp/ws/tracked-handoff-aaaaaa",
        workspaceRoot: "/tmp/ws/tracked-bbbbbb",
        cgroups: ["/sys/fs/cgroup/handoff-tracked-agent-1", "/sys/fs/cgroup/handoff-tracked-verify-2"],
      },
    });
    dir.checkpoint("agent");
    expect(read()).toMatchObject({ phase: "agent", resources: { scratch: "/tmp/ws/tracked-handoff-aaaaaa" } });
    expect(lstatSync(join(dir.path, "checkpoint.json")).mode & 0o777).toBe(0o600);
  });
});

describe("one run id in two runs directories on one host", () => {
  /** Two CI jobs with `--run-id pr-123`: their own runs directories, the workspace and CLI-home directories shared (as the defaults are). */
  function twoJobs(): { readonly a: Dirs; readonly b: Dirs } {
    const root = tempDir("handoff-same-id");
    const shared = { workspacesDir: join(root, "ws"), cliHomesDir: join(root, "homes") };
    const a = { runsDir: join(root, "runs-a"), ...shared };
    const b = { runsDir: join(root, "runs-b"), ...shared };
    for (const dir of [a.runsDir, b.runsDir, shared.workspacesDir, shared.cliHomesDir]) mkdirSync(dir, { recursive: true });
    return { a, b };
  }

  /** The agent of `leaves-a-daemon-and-fixes-add-when-told.sh` and its daemon, once both run. */
  async function agentAndDaemon(out: string): Promise<{ readonly agent: number; readonly daemon: number }> {
    const [agentPid, daemon] = await Promise.all(
      ["agent.pid", "daemon.pid"].map(async (name) => Number((await waitForFile(join(out, name))).trim())),
    );
    return { agent: agentPid!, daemon: daemon! };
  }

  function killedLeftovers(result: RunResult): number[] {
    return (result.containment?.events ?? []).flatMap((event) => (event.kind === "leftover_killed" ? [event.pid as number] : []));
  }

  const whenTold = agent("leaves-a-daemon-and-fixes-add-when-told.sh");
  const verify = ["--verify", "node test.js"];

  test("when one job's agent finishes, the other job's agent and daemon with the same --run-id live on, and both runs end verified", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { a, b } = twoJobs();
    const outA = tempDir("handoff-out-a");
    const outB = tempDir("handoff-out-b");
    writeFileSync(join(outA, "go"), "");
    const jobB = startCli(runArgs(repo, b, "pr-123", whenTold, verify), { env: { HANDOFF_TEST_OUT: outB } });
    onTestFinished(() => void jobB.child.kill("SIGKILL"));
    const b1 = await agentAndDaemon(outB);

    const jobA = await runCli(runArgs(repo, a, "pr-123", whenTold, verify), { env: { HANDOFF_TEST_OUT: outA } });
    expect(jobA.code, jobA.stderr).toBe(0);
    const resultA = RunResult.parse(readJson(join(a.runsDir, "pr-123", "result.json")));
    expect(killedLeftovers(resultA)).toContain((await agentAndDaemon(outA)).daemon);
    expect(killedLeftovers(resultA)).not.toContain(b1.daemon);
    expect(isRunning(b1.agent), "job B's agent was killed by job A").toBe(true);
    expect(isRunning(b1.daemon), "job B's daemon was killed by job A").toBe(true);

    writeFileSync(join(outB, "go"), "");
    const doneB = await jobB.done;
    expect(doneB.code, doneB.stderr).toBe(0);
    const resultB = RunResult.parse(readJson(join(b.runsDir, "pr-123", "result.json")));
    expect(resultB).toMatchObject({ terminalReason: "verified", verification: { passed: true } });
    expect(killedLeftovers(resultB)).toContain(b1.daemon);
    expect(isRunning(b1.daemon)).toBe(false);
    expect(entriesOf(a.workspacesDir, "pr-123")).toEqual([]);
    expect(entriesOf(a.cliHomesDir, "pr-123")).toEqual([]);
  });

  test("a sweep in one runs directory leaves alone a live run with the same id in another: its processes and its workspace", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { a, b } = twoJobs();
    const outCrashed = tempDir("handoff-out-crashed");
    const outLive = tempDir("handoff-out-live");
    const crashed = startCli(runArgs(repo, a, "pr-123", agent("leaves-daemons-and-waits.sh")), { env: { HANDOFF_TEST_OUT: outCrashed } });
    const exited = new Promise((resolve) => crashed.child.once("exit", resolve));
    const leftovers = await Promise.all(
      ["agent.pid", "marker.pid", "unmarked.pid"].map(async (name) => Number((await waitForFile(join(outCrashed, name))).trim())),
    );
    await waitFor("checkpoint at agent", () => readJson(join(a.runsDir, "pr-123", "checkpoint.json")).phase === "agent");
    crashed.child.kill("SIGKILL");
    await exited;

    const live = startCli(runArgs(repo, b, "pr-123", agent("leaves-a-daemon-and-fixes-add-when-told.sh"), ["--verify", "node test.js"]), {
      env: { HANDOFF_TEST_OUT: outLive },
    });
    onTestFinished(() => void live.child.kill("SIGKILL"));
    const liveAgent = await agentAndDaemon(outLive);
    const liveWorkspace = (readJson(join(b.runsDir, "pr-123", "checkpoint.json")).resources as { workspaceRoot: string }).workspaceRoot;
    expect(existsSync(liveWorkspace)).toBe(true);

    const next = await runCli(runArgs(repo, a, "next", agent("does-nothing.sh")), { env: { HANDOFF_TEST_OUT: outCrashed } });
    expect(next.code, next.stderr).toBe(3);
    expect(RunResult.parse(readJson(join(a.runsDir, "pr-123", "result.json")))).toMatchObject({ detail: "runner_crashed" });
    for (const pid of leftovers) expect(isRunning(pid), `the crashed run's pid ${pid} survived the sweep`).toBe(false);
    expect(isRunning(liveAgent.agent), "the live run's agent was killed by the other directory's sweep").toBe(true);
    expect(isRunning(liveAgent.daemon), "the live run's daemon was killed by the other directory's sweep").toBe(true);
    expect(existsSync(liveWorkspace), "the live run's workspace was removed by the other directory's sweep").toBe(true);
    expect(entriesOf(a.workspacesDir, "pr-123")).toHaveLength(2); // the live run's workspace and scratch, nothing of the crashed run's

    writeFileSync(join(outLive, "go"), "");
    const done = await live.done;
    expect(done.code, done.stderr).toBe(0);
    expect(RunResult.parse(readJson(join(b.runsDir, "pr-123", "result.json")))).toMatchObject({ terminalReason: "verified" });
  });
});
