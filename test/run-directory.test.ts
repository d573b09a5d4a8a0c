import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { sweepCrashedRuns } from "../src/run-dir/crash-sweep.js";
import { RunResult } from "../src/verdict/result.js";
import { ARTIFACTS, RunDirectory, currentOwner } from "../src/run-dir/run-dir.js";
import { runCli, startCli, commandRunArgs } from "./helpers/cli.js";
import { canMountTmpfs, smallFileSystem } from "./helpers/tmpfs.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, delegate, delegateWithoutSandbox, makeHarness, readEvents, readJson } from "./helpers/run.js";
import { agentWith, expectVerifiedFix } from "./helpers/verdicts.js";

/**
 * Issue 11, items 3, 5, 8 and 12c: the run directory is written whole or not at all, never through a link an
 * agent planted, still gets its verdict on a full disk, is cleaned up even when handoff dies in its last moments,
 * and ends its event log with run.finished.
 */

const TASK = "make add() return the sum";

function runArgs(
  repo: string,
  dirs: { runsDir: string; workspacesDir: string; cliHomesDir: string },
  runId: string,
  agentCmd: string,
  extra: string[] = [],
): string[] {
  return commandRunArgs(
    repo,
    agentCmd,
    [
      "--yes",
      "--verify",
      "npm test",
      "--runs-dir",
      dirs.runsDir,
      "--run-id",
      runId,
      "--workspace-dir",
      dirs.workspacesDir,
      "--cli-home-dir",
      dirs.cliHomesDir,
      ...extra,
    ],
    TASK,
  );
}

function sha256(bytes: Buffer | string): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function tempFilesIn(runDir: string): string[] {
  return readdirSync(runDir).filter((name) => name.endsWith(".tmp"));
}

/** The pid of a process that has exited: a dead handoff that is not this process. */
function deadPid(): number {
  const child = spawnSync("true");
  return child.pid!;
}

/** A run directory as a dead handoff left it mid-run: checkpoint not done, its owner a pid that is gone. */
function fakeCrashedRun(runsDir: string, runId: string, checkpointExtra: Record<string, unknown> = {}): string {
  const runDir = join(runsDir, runId);
  mkdirSync(runDir, { recursive: true, mode: 0o700 });
  const owner = { ...currentOwner(), pid: deadPid(), startTime: 1 };
  writeFileSync(
    join(runDir, "request.json"),
    JSON.stringify({ runId, repo: { path: "/src/repo", baseCommit: "0".repeat(40) }, backend: { name: "command" } }),
  );
  writeFileSync(join(runDir, "events.jsonl"), `${JSON.stringify({ seq: 1, time: new Date().toISOString(), type: "run.started" })}\n`);
  writeFileSync(join(runDir, "test.log"), "");
  writeFileSync(join(runDir, "changes.patch"), "");
  writeFileSync(
    join(runDir, "checkpoint.json"),
    JSON.stringify({
      runId,
      phase: "verify",
      pid: owner.pid,
      owner,
      resources: {},
      updatedAt: new Date().toISOString(),
      ...checkpointExtra,
    }),
  );
  return runDir;
}

const PATCH =
  "diff --git a/math.js b/math.js\nindex 1111111..2222222 100644\n--- a/math.js\n+++ b/math.js\n@@ -1,3 +1,3 @@\n export function add(a, b) {\n-  return a - b;\n+  return a + b;\n }\n";

describe("artifacts are never written through a link (item 3)", () => {
  test("an agent without the sandbox that plants links at the run directory's temp and artifact names gets nothing written through them: every artifact stays a regular 0600 file", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const harness = makeHarness();
    const out = tempDir("handoff-link-targets");
    process.env.HANDOFF_TEST_RUN_DIR = join(harness.runsDir, "planted");
    process.env.HANDOFF_TEST_OWNER_PID = String(process.pid);
    process.env.HANDOFF_TEST_OUT = out;
    const run = await delegateWithoutSandbox(repo, agent("plants-links-in-the-run-dir.sh"), {
      harness,
      runId: "planted",
      verify: ["npm test"],
      env: ["HANDOFF_TEST_MARKERS", "HANDOFF_TEST_SOURCE", "HANDOFF_TEST_RUN_DIR", "HANDOFF_TEST_OWNER_PID", "HANDOFF_TEST_OUT"],
    });
    expectVerifiedFix(run);
    for (const name of ARTIFACTS) {
      const stats = lstatSync(join(run.runDir, name));
      expect(stats.isFile(), `${name} is a regular file`).toBe(true);
      expect(stats.mode & 0o777, name).toBe(0o600);
    }
    // Nothing reached the world-writable files the links point at.
    for (const name of readdirSync(out)) expect(readFileSync(join(out, name), "utf8"), name).toBe("");
    expect(RunResult.parse(readJson(join(run.runDir, "result.json"))).terminalReason).toBe("verified");
  });

  test("apply refuses, and show will not read, a result.json or changes.patch that is a link, another user's file, a file with a second name or one others may write", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const harness = makeHarness();
    const run = await delegate(repo, agent("fixes-add.sh"), { harness, runId: "forged", verify: ["npm test"] });
    expectVerifiedFix(run);
    const elsewhere = tempDir("handoff-forgery");
    const apply = () => runCli(["apply", "forged", "--runs-dir", harness.runsDir, "-C", repo]);
    const show = () => runCli(["show", "forged", "--runs-dir", harness.runsDir]);
    const expectRefused = async (artifact: string, why: RegExp) => {
      const applied = await apply();
      expect(applied.code, applied.stderr).toBe(1);
      expect(applied.stderr).toMatch(new RegExp(`^handoff: apply refused: run forged: ${artifact} is ${why.source}`));
      expect(applied.stderr.trim().split("\n")).toHaveLength(1);
      const shown = await show();
      expect(shown.code, shown.stderr).toBe(2);
      expect(shown.stderr).toMatch(new RegExp(`^handoff: run forged: ${artifact} is ${why.source}`));
      expect(shown.stdout).toBe("");
    };

    for (const artifact of ["result.json", "changes.patch"]) {
      const path = join(run.runDir, artifact);
      // Another user's file (as after a link to a world-writable file was renamed into place and rewritten).
      chownSync(path, 65534, 65534);
      await expectRefused(artifact, /owned by uid 65534, not by you/);
      chownSync(path, process.getuid!(), process.getgid!());

      // A symbolic link to a byte-identical copy.
      const copy = join(elsewhere, artifact);
      copyFileSync(path, copy);
      renameSync(path, `${path}.real`);
      symlinkSync(copy, path);
      await expectRefused(artifact, /a symbolic link/);
      unlinkSync(path);
      renameSync(`${path}.real`, path);

      // A second name outside the run directory, through which it can be rewritten.
      linkSync(path, join(elsewhere, `${artifact}.second-name`));
      await expectRefused(artifact, /a file with 2 names/);
      unlinkSync(join(elsewhere, `${artifact}.second-name`));

      chmodSync(path, 0o666);
      await expectRefused(artifact, /writable by others \(mode 0666\)/);
      chmodSync(path, 0o600);
    }
    expect(execFileSync("git", ["-C", repo, "status", "--porcelain"]).toString()).toBe("");

    // Put back as handoff wrote them, the run applies.
    const applied = await apply();
    expect(applied.code, applied.stderr).toBe(0);
    expect(readFileSync(join(repo, "math.js"), "utf8")).toContain("return a + b;");
  });

  test("the crash sweep takes no linked changes.patch as the run's patch and writes its own files through no planted link", async () => {
    const runsDir = join(tempDir("handoff-sweep-links"), "runs");
    const runDir = fakeCrashedRun(runsDir, "linked-patch", {
      artifacts: { "changes.patch": { bytes: PATCH.length, sha256: sha256(PATCH) } },
    });
    const elsewhere = tempDir("handoff-sweep-targets");
    writeFileSync(join(elsewhere, "patch"), PATCH);
    unlinkSync(join(runDir, "changes.patch"));
    symlinkSync(join(elsewhere, "patch"), join(runDir, "changes.patch"));
    // Links at the names the sweeper (this process) used to write its temp files under.
    for (const name of ["result.json", "checkpoint.json", "backend-result.json"]) {
      writeFileSync(join(elsewhere, name), "");
      chmodSync(join(elsewhere, name), 0o666);
      symlinkSync(join(elsewhere, name), join(runDir, `.${name}.${process.pid}.tmp`));
    }

    await sweepCrashedRuns(runsDir);
    for (const name of ["result.json", "checkpoint.json", "backend-result.json"]) {
      expect(lstatSync(join(runDir, name)).isFile(), name).toBe(true);
      expect(readFileSync(join(elsewhere, name), "utf8"), name).toBe("");
    }
    const result = RunResult.parse(readJson(join(runDir, "result.json")));
    expect(result).toMatchObject({ detail: "runner_crashed", patch: null });
    expect(result.summary).toContain("changes.patch is a symbolic link: not taken as its patch");
  });
});

describe("a full disk (item 5)", () => {
  test.skipIf(!canMountTmpfs).each(["none", "auto"])(
    "runs and workspaces on one full 20 MiB file system, an agent that writes 50 MiB (--sandbox %s): exit 4 artifact_write_failed with a result.json, whole event lines, nothing leaked",
    async (sandbox) => {
      const disk = smallFileSystem(20);
      const dirs = { runsDir: join(disk, "runs"), workspacesDir: join(disk, "ws"), cliHomesDir: join(disk, "homes") };
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const outcome = await runCli(runArgs(repo, dirs, "full", agentWith("fills-the-disk.sh", "50"), ["--sandbox", sandbox]));
      expect(outcome.code, outcome.stderr).toBe(4);
      expect(outcome.stderr).not.toContain("internal error");
      expect(outcome.stdout).toMatch(
        /^policy_or_artifact_error \(artifact_write_failed\): handoff could not write \S+ in the run directory \(ENOSPC\)/,
      );
      const runDir = join(dirs.runsDir, "full");
      const result = RunResult.parse(readJson(join(runDir, "result.json")));
      expect(result).toMatchObject({ terminalReason: "policy_or_artifact_error", detail: "artifact_write_failed" });
      // Every artifact is there once the clone is gone, every event line parses, and run.finished is the last.
      for (const name of ARTIFACTS) expect(lstatSync(join(runDir, name)).isFile(), name).toBe(true);
      const logged = readEvents(runDir);
      expect(logged.at(-1)).toMatchObject({ type: "run.finished", detail: "artifact_write_failed" });
      expect(readJson(join(runDir, "checkpoint.json"))).toMatchObject({ done: true, detail: "artifact_write_failed", cleanup: "done" });
      expect(tempFilesIn(runDir)).toEqual([]);
      expect(readdirSync(dirs.workspacesDir)).toEqual([]);
      expect(existsSync(dirs.cliHomesDir) ? readdirSync(dirs.cliHomesDir) : []).toEqual([]);
    },
  );

  test.skipIf(!canMountTmpfs)(
    "only the runs directory full (2 MiB) and a 2.6 MB patch: changes.patch is never left cut short, and the run ends artifact_write_failed with a result.json",
    async () => {
      const disk = smallFileSystem(2);
      const dirs = { runsDir: join(disk, "runs"), workspacesDir: tempDir("handoff-ws"), cliHomesDir: tempDir("handoff-homes") };
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const outcome = await runCli(runArgs(repo, dirs, "patch", agentWith("fixes-add-with-a-large-new-file.sh", "400000")));
      expect(outcome.code, outcome.stderr).toBe(4);
      const runDir = join(dirs.runsDir, "patch");
      const result = RunResult.parse(readJson(join(runDir, "result.json")));
      expect(result).toMatchObject({ terminalReason: "policy_or_artifact_error", detail: "artifact_write_failed" });
      expect(result.summary).toContain("could not write changes.patch");
      // Either the empty changes.patch of the start, or the whole patch: never its first megabyte and a half.
      const patch = readFileSync(join(runDir, "changes.patch"));
      expect(patch.length === 0 || sha256(patch) === result.patch?.sha256).toBe(true);
      expect(result.verification.ran).toBe(false);
      expect(tempFilesIn(runDir)).toEqual([]);
      expect(readEvents(runDir).at(-1)).toMatchObject({ type: "run.finished", detail: "artifact_write_failed" });
      expect(readdirSync(dirs.workspacesDir)).toEqual([]);
    },
  );

  test.skipIf(!canMountTmpfs)(
    "an event line that meets a full disk is cut back off, never left half-written, and the failure is kept for the verdict",
    () => {
      const disk = smallFileSystem(2);
      const dir = RunDirectory.create(join(disk, "runs"), "events");
      onTestFinished(() => dir.close());
      dir.event({ type: "phase.started", phase: "agent" });
      // Fill what the reserve left, then write lines larger than a page until one fails.
      try {
        writeFileSync(join(disk, "filler"), Buffer.alloc(4 * 1024 * 1024));
      } catch {
        // ENOSPC: the file system is full, as wanted
      }
      for (let i = 0; i < 200 && !dir.writeFailure; i++) dir.event({ type: "agent.message", text: "x".repeat(6000) });
      expect(dir.writeFailure).toEqual({ artifact: "events.jsonl", message: "ENOSPC" });
      const text = readFileSync(join(dir.path, "events.jsonl"), "utf8");
      expect(text.endsWith("\n")).toBe(true);
      for (const line of text.trimEnd().split("\n")) expect(() => JSON.parse(line)).not.toThrow();
      // With space again, the verdict still reaches the log, after the count of what could not be written.
      unlinkSync(join(disk, "filler"));
      dir.event({ type: "run.finished", terminalReason: "policy_or_artifact_error", detail: "artifact_write_failed" });
      const logged = readEvents(dir.path);
      expect(logged.at(-2)).toMatchObject({
        type: "diagnostic",
        message: expect.stringMatching(/^1 events could not be written \(ENOSPC\)/),
      });
      expect(logged.at(-1)).toMatchObject({ type: "run.finished" });
    },
  );

  test.skipIf(!canMountTmpfs)(
    "on a full file system result.json still goes into the space reserved when the run directory was made; one too large for it fails whole and leaves the reserve for a smaller one",
    () => {
      const disk = smallFileSystem(2);
      const dir = RunDirectory.create(join(disk, "runs"), "reserved");
      onTestFinished(() => dir.close());
      try {
        writeFileSync(join(disk, "filler"), Buffer.alloc(4 * 1024 * 1024));
      } catch {
        // ENOSPC: the file system is full, as wanted
      }
      expect(() => dir.writeJson("backend-result.json", { pad: "z".repeat(64 * 1024) })).toThrow(/ENOSPC/);
      expect(() => dir.writeReserved("result.json", "r".repeat(1536 * 1024))).toThrow(/could not write result.json: ENOSPC/);
      expect(existsSync(join(dir.path, "result.json"))).toBe(false);
      const small = `${JSON.stringify({ terminalReason: "policy_or_artifact_error", detail: "artifact_write_failed" })}\n`;
      dir.writeReserved("result.json", small);
      expect(readFileSync(join(dir.path, "result.json"), "utf8")).toBe(small);
      expect(lstatSync(join(dir.path, "result.json")).mode & 0o777).toBe(0o600);
      // What the reserve held beyond the result is free again: the final checkpoint fits.
      expect(dir.checkpoint("finish", { done: true })).toBe(true);
      expect(tempFilesIn(dir.path)).toEqual([]);
      expect(dir.writeFailure).toEqual({ artifact: "backend-result.json", message: "ENOSPC" });
    },
  );

  test("the crash sweep never takes a changes.patch that is not the one the run recorded (cut short by a full disk) as the run's patch", async () => {
    const runsDir = join(tempDir("handoff-sweep-partial"), "runs");
    const runDir = fakeCrashedRun(runsDir, "partial", { artifacts: { "changes.patch": { bytes: PATCH.length, sha256: sha256(PATCH) } } });
    writeFileSync(join(runDir, "changes.patch"), PATCH.slice(0, 80));

    await sweepCrashedRuns(runsDir);
    const result = RunResult.parse(readJson(join(runDir, "result.json")));
    expect(result).toMatchObject({ detail: "runner_crashed", patch: null });
    expect(result.summary).toContain(
      `changes.patch (80 bytes) is not the patch the run recorded (${PATCH.length} bytes): not taken as its patch`,
    );
  });
});

describe("the crash window after the final checkpoint (item 8)", () => {
  test("kill -9 after the final checkpoint, before the clone is removed: the next start removes the leftovers and keeps the run's verdict and result.json", async () => {
    const root = tempDir("handoff-window");
    const dirs = { runsDir: join(root, "runs"), workspacesDir: join(root, "ws"), cliHomesDir: join(root, "homes") };
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runDir = join(dirs.runsDir, "window");
    // 40,000 files in the clone: removing them at the end takes long enough to stop handoff in between.
    const first = startCli(
      runArgs(repo, dirs, "window", agentWith("fixes-add-and-leaves-a-pile-of-files.sh", "40000"), ["--sandbox", "none"]),
    );
    const exited = new Promise((resolve) => first.child.once("exit", resolve));
    const checkpointPath = join(runDir, "checkpoint.json");
    const done = () => {
      try {
        return readJson(checkpointPath).done === true;
      } catch {
        return false; // not there yet
      }
    };
    const deadline = Date.now() + 120_000;
    while (!done() && first.child.exitCode === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    first.child.kill("SIGSTOP");
    const leftovers = () =>
      [...readdirSync(dirs.workspacesDir), ...readdirSync(dirs.cliHomesDir)].filter((name) => name.startsWith("window-"));
    // Stopped in the window: the verdict written, the clone not yet gone.
    expect(existsSync(join(runDir, "result.json"))).toBe(true);
    expect(leftovers(), "handoff was stopped before it removed its directories").not.toEqual([]);
    first.child.kill("SIGKILL");
    await exited;
    const resultBytes = readFileSync(join(runDir, "result.json"));
    const result = RunResult.parse(JSON.parse(resultBytes.toString("utf8")));
    expect(result.terminalReason).toBe("verified");

    const second = await runCli(runArgs(repo, dirs, "second", agent("does-nothing.sh"), ["--sandbox", "none"]));
    expect(second.code, second.stderr).toBe(3);
    expect(leftovers()).toEqual([]);
    expect(readFileSync(join(runDir, "result.json"))).toEqual(resultBytes);
    expect(readJson(checkpointPath)).toMatchObject({ done: true, terminalReason: "verified", cleanup: "done" });
    const logged = readEvents(runDir);
    expect(logged.filter((event) => event.type === "run.finished")).toHaveLength(1);
    expect(logged.at(-1)).toMatchObject({ type: "run.finished", terminalReason: "verified" });
    const shown = await runCli(["show", "window", "--runs-dir", dirs.runsDir]);
    expect(shown.stdout).toContain("verdict: verified");
  });

  test("a run killed after writing result.json but before its final checkpoint is never judged again as runner_crashed", async () => {
    const root = tempDir("handoff-window-result");
    const runsDir = join(root, "runs");
    const workspace = join(root, "ws", "judged-abc123");
    mkdirSync(join(workspace, "ws"), { recursive: true });
    const runDir = fakeCrashedRun(runsDir, "judged", { resources: { workspaceRoot: workspace } });
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const verified = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test"] });
    const result = { ...verified.result, runId: "judged", runDir };
    writeFileSync(join(runDir, "result.json"), JSON.stringify(result));
    chmodSync(join(runDir, "result.json"), 0o600);

    const [swept] = await sweepCrashedRuns(runsDir);
    expect(RunResult.parse(readJson(join(runDir, "result.json")))).toMatchObject({ terminalReason: "verified", detail: null });
    expect(readJson(join(runDir, "checkpoint.json"))).toMatchObject({ done: true, terminalReason: "verified", cleanup: "done" });
    expect(readEvents(runDir).at(-1)).toMatchObject({ type: "run.finished", terminalReason: "verified" });
    expect(existsSync(workspace)).toBe(false);
    expect(swept).toMatchObject({ runId: "judged", resultKept: true, removed: [workspace] });
  });
});

describe("the end of events.jsonl (item 12c)", () => {
  test("run.finished stays the last line of events.jsonl when a flood fills it past its cap; the count of left-out events comes just before it", () => {
    const dir = RunDirectory.create(join(tempDir("handoff-cap"), "runs"), "flood");
    dir.event({ type: "phase.started", phase: "agent" });
    const text = "y".repeat(64 * 1024);
    for (let i = 0; i < 1100; i++) dir.event({ type: "agent.message", text }); // about 70 MiB, past the 64 MiB cap
    dir.event({ type: "phase.finished", phase: "agent", durationMs: 1, ok: true });
    dir.event({ type: "run.finished", terminalReason: "verified", detail: null });
    dir.close();
    const logged = readEvents(dir.path);
    expect(logged.at(-1)).toMatchObject({ type: "run.finished", terminalReason: "verified" });
    expect(logged.at(-2)).toMatchObject({
      type: "diagnostic",
      message: expect.stringMatching(/^\d+ events were left out: events.jsonl reached/),
    });
    expect(logged.at(-3)).toMatchObject({ type: "phase.finished", phase: "agent" });
    expect(logged.map((event) => event.seq)).toEqual([...logged.map((event) => event.seq)].sort((a, b) => (a as number) - (b as number)));
  });
});
