import { type ChildProcess, spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { detectCgroupSupport } from "../src/cgroup.js";
import { sweepCrashedRuns } from "../src/crash-sweep.js";
import { RunResult } from "../src/result.js";
import { RunDirectory, currentOwner } from "../src/run-dir.js";
import { processStartTime } from "../src/survivors.js";
import { runCli, startCli } from "./helpers/cli.js";
import { agentOutputDir, isRunning, waitForFile } from "./helpers/processes.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent } from "./helpers/run.js";

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
function runArgs(repo: string, dirs: Dirs, runId: string, agentCmd: string): string[] {
  return [
    "run", "-C", repo, "-b", "command", "--agent-cmd", agentCmd, "--env", "HANDOFF_TEST_OUT", "--yes", "--sandbox", "none",
    "--runs-dir", dirs.runsDir, "--run-id", runId, "--workspace-dir", dirs.workspacesDir, "--cli-home-dir", dirs.cliHomesDir,
    "--", TASK,
  ];
}

function readJson(path: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
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
  const child: ChildProcess = spawn("sleep", ["300"], { cwd: options.cwd ?? "/", env: { PATH: "/usr/bin:/bin", ...options.env }, stdio: "ignore" });
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

/** A run directory as a handoff mid-run leaves it: request, events, a checkpoint not done, owned by `owner`. */
function fakeRunInProgress(dirs: Dirs, runId: string, owner: Record<string, unknown>, resources: Record<string, unknown> = {}): string {
  const runDir = join(dirs.runsDir, runId);
  mkdirSync(runDir, { mode: 0o700 });
  const request = { runId, task: TASK, repo: { path: "/src/repo", baseCommit: "0".repeat(40) }, backend: { name: "command" }, workspacesDir: dirs.workspacesDir, cliHomesDir: dirs.cliHomesDir };
  writeFileSync(join(runDir, "request.json"), JSON.stringify(request));
  writeFileSync(join(runDir, "events.jsonl"), `${JSON.stringify({ seq: 1, time: new Date().toISOString(), type: "run.started" })}\n`);
  writeFileSync(join(runDir, "changes.patch"), "");
  writeFileSync(join(runDir, "test.log"), "");
  writeFileSync(join(runDir, "checkpoint.json"), JSON.stringify({ runId, phase: "agent", pid: owner.pid, owner, resources, updatedAt: new Date().toISOString() }));
  return runDir;
}

/** The test process as owner, but with another start time: what a dead handoff whose pid was reused looks like. */
function reusedPidOwner(): Record<string, unknown> {
  const owner = currentOwner();
  return { ...owner, startTime: owner.startTime! - 1 };
}

describe("crash safety", () => {
  test("kill -9 mid-agent leaves a checkpoint at agent; the next handoff start kills the leftovers, removes the workspace and ends the run runner_crashed", async () => {
    const out = agentOutputDir();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const dirs = makeDirs();
    const crashed = startCli(runArgs(repo, dirs, "crashed", agent("leaves-daemons-and-waits.sh")), { env: { HANDOFF_TEST_OUT: out.dir } });
    const exited = new Promise((resolve) => crashed.child.once("exit", resolve));
    const pids = await Promise.all(["agent.pid", "marker.pid", "unmarked.pid"].map(async (name) => Number((await waitForFile(join(out.dir, name))).trim())));
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
    expect(readJson(checkpointPath)).toMatchObject({ phase: "agent", done: true, terminalReason: "user_cancelled", detail: "runner_crashed" });
    const events = readFileSync(join(dirs.runsDir, "crashed", "events.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
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
    if (detectCgroupSupport().kind !== "unavailable") expect(trackedCgroups).toEqual(expect.arrayContaining([expect.stringMatching(/\/handoff-crashed$/)]));
    for (const cgroup of trackedCgroups) expect(existsSync(cgroup), cgroup).toBe(false);

    const shown = await runCli(["show", "crashed", "--runs-dir", dirs.runsDir]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain("runner_crashed");
  });

  test("a live run of another handoff process is not swept", async () => {
    const dirs = makeDirs();
    const workspace = join(dirs.workspacesDir, "live-abc123");
    mkdirSync(workspace);
    const agentPid = await startSleeper({ cwd: workspace, env: { HANDOFF_RUN_ID: "live" } });
    const runDir = fakeRunInProgress(dirs, "live", { ...currentOwner() }, { workspaceRoot: workspace });
    const before = readFileSync(join(runDir, "checkpoint.json"));

    expect(await sweepCrashedRuns(dirs.runsDir, { workspacesDir: dirs.workspacesDir })).toEqual([]);
    expect(readFileSync(join(runDir, "checkpoint.json"))).toEqual(before);
    expect(existsSync(join(runDir, "result.json"))).toBe(false);
    expect(existsSync(workspace)).toBe(true);
    expect(isRunning(agentPid)).toBe(true);
  });

  test("a run whose owner pid now names another process (other start time) counts as crashed and is swept", async () => {
    const dirs = makeDirs();
    const workspace = join(dirs.workspacesDir, "reused-abc123");
    mkdirSync(join(workspace, "ws"), { recursive: true });
    const agentPid = await startSleeper({ cwd: join(workspace, "ws") });
    const runDir = fakeRunInProgress(dirs, "reused", reusedPidOwner());

    const [swept] = await sweepCrashedRuns(dirs.runsDir, { workspacesDir: dirs.workspacesDir });
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
    const huge = fakeRunInProgress(dirs, "huge", reusedPidOwner());
    writeFileSync(join(huge, "checkpoint.json"), `{"phase":"agent","pid":1,"pad":"${"x".repeat(200_000)}"}`);
    mkdirSync(join(dirs.runsDir, "no-checkpoint"));
    writeFileSync(join(dirs.runsDir, "a-file"), "not a run");
    const elsewhere = tempDir("handoff-crash-elsewhere");
    const linked = fakeRunInProgress({ ...dirs, runsDir: elsewhere }, "linked", reusedPidOwner());
    symlinkSync(linked, join(dirs.runsDir, "linked"));

    expect(await sweepCrashedRuns(dirs.runsDir, { workspacesDir: dirs.workspacesDir })).toEqual([]);
    for (const runDir of [done, garbage, wrongShape, directory, fifo, huge, linked]) expect(existsSync(join(runDir, "result.json")), runDir).toBe(false);
    expect(await sweepCrashedRuns(join(dirs.runsDir, "missing"))).toEqual([]);
  });

  test("the sweep removes only what is named for the run, and never follows a link", async () => {
    const dirs = makeDirs();
    const outside = tempDir("handoff-crash-outside");
    writeFileSync(join(outside, "precious.txt"), "keep me\n");
    const trackedElsewhere = tempDir("handoff-crash-tracked");
    const workspace = join(dirs.workspacesDir, "r-abc123");
    mkdirSync(join(workspace, "ws"), { recursive: true });
    symlinkSync(outside, join(workspace, "ws", "link-to-outside"));
    symlinkSync(join(outside, "precious.txt"), join(workspace, "ws", "link-to-file"));
    const linkedWorkspace = join(dirs.workspacesDir, "r-def456");
    symlinkSync(outside, linkedWorkspace);
    const scratch = join(dirs.workspacesDir, "r-handoff-ghi789");
    mkdirSync(scratch);
    const otherRun = join(dirs.workspacesDir, "r-2-abc123");
    mkdirSync(otherRun);
    const cliHome = join(dirs.cliHomesDir, "r-jkl012");
    mkdirSync(cliHome);
    fakeRunInProgress(dirs, "r", reusedPidOwner(), { workspaceRoot: trackedElsewhere, cgroups: ["/sys/fs/cgroup/user.slice"] });

    const [swept] = await sweepCrashedRuns(dirs.runsDir, { workspacesDir: dirs.workspacesDir, cliHomesDir: dirs.cliHomesDir });
    expect([...(swept?.removed ?? [])].sort()).toEqual([cliHome, linkedWorkspace, scratch, workspace].sort());
    expect(readFileSync(join(outside, "precious.txt"), "utf8")).toBe("keep me\n");
    expect(existsSync(trackedElsewhere)).toBe(true);
    expect(existsSync(otherRun)).toBe(true);
    expect(existsSync(join(dirs.runsDir, "r", "result.json"))).toBe(true);
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
    writeFileSync(join(runDir, "checkpoint.json"), JSON.stringify({ ...checkpoint, artifacts: { "changes.patch": { bytes: patch.length, sha256: createHash("sha256").update(patch).digest("hex") } } }));

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

  test("events go on from the crashed run's last sequence number, after a line the crash cut short", async () => {
    const dirs = makeDirs();
    const runDir = fakeRunInProgress(dirs, "cut", reusedPidOwner());
    writeFileSync(join(runDir, "events.jsonl"), `${JSON.stringify({ seq: 1, type: "run.started" })}\n${JSON.stringify({ seq: 2, type: "phase.started", phase: "agent" })}\n{"seq":3,"ty`);
    writeFileSync(join(runDir, ".checkpoint.json.4242.tmp"), "{ half");
    const checkpoint = readJson(join(runDir, "checkpoint.json"));
    writeFileSync(join(runDir, "checkpoint.json"), JSON.stringify({ ...checkpoint, pid: 4242, owner: { ...(checkpoint.owner as object), pid: 4242, startTime: 1 } }));

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
    expect(read()).toMatchObject({ runId: "tracked", phase: "clone", pid: process.pid, owner: { pid: process.pid, startTime: processStartTime(process.pid) }, resources: {} });
    dir.track({ scratch: "/tmp/ws/tracked-handoff-aaaaaa" });
    dir.track({ workspaceRoot: "/tmp/ws/tracked-bbbbbb", cgroups: ["/sys/fs/cgroup/handoff-tracked-agent-1"] });
    dir.track({ cgroups: ["/sys/fs/cgroup/handoff-tracked-verify-2", "/sys/fs/cgroup/handoff-tracked-agent-1"] });
    expect(read()).toMatchObject({
      phase: "clone",
      resources: { scratch: "/tmp/ws/tracked-handoff-aaaaaa", workspaceRoot: "/tmp/ws/tracked-bbbbbb", cgroups: ["/sys/fs/cgroup/handoff-tracked-agent-1", "/sys/fs/cgroup/handoff-tracked-verify-2"] },
    });
    dir.checkpoint("agent");
    expect(read()).toMatchObject({ phase: "agent", resources: { scratch: "/tmp/ws/tracked-handoff-aaaaaa" } });
    expect(lstatSync(join(dir.path, "checkpoint.json")).mode & 0o777).toBe(0o600);
  });
});
