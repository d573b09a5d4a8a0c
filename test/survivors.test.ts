import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { generateRunNonce } from "../src/vocabulary/run-names.js";
import { findSurvivors, killSurvivors, processStartTime } from "../src/containment/survivors.js";
import { isRunning } from "./helpers/processes.js";
import { tempDir } from "./helpers/repo.js";

const PATH_ONLY = { PATH: "/usr/local/bin:/usr/bin:/bin" };

/** Starts `file args` as a long-lived process, killed when the test ends whatever happened. */
function start(file: string, args: readonly string[], options: { cwd?: string; env?: Record<string, string> } = {}): ChildProcess {
  const child = spawn(file, args, { cwd: options.cwd ?? "/", env: options.env ?? PATH_ONLY, stdio: "ignore" });
  onTestFinished(() => {
    try {
      process.kill(child.pid!, "SIGKILL");
    } catch {
      // already gone
    }
  });
  return child;
}

/** Waits until `pid` runs `command` (after an exec), so the scan sees the final process. */
async function execed(child: ChildProcess, command: string): Promise<number> {
  const pid = child.pid!;
  for (let i = 0; i < 250; i++) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith(`${command}\0`)) return pid;
    } catch {
      // not there yet
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`pid ${pid} never ran ${command}`);
}

describe("finding and killing what a run left behind", () => {
  test("a setsid daemon carrying the run's marker is found by its environment and killed", async () => {
    const nonce = generateRunNonce();
    const daemon = await execed(start("setsid", ["sleep", "300"], { env: { ...PATH_ONLY, HANDOFF_RUN_NONCE: nonce } }), "sleep");

    const found = findSurvivors({ nonce, roots: [] });
    expect(found).toEqual([{ pid: daemon, startTime: processStartTime(daemon), command: "sleep 300", reason: "marker" }]);

    const outcome = await killSurvivors(found);
    expect(outcome.killed.map((s) => s.pid)).toEqual([daemon]);
    expect(outcome.stillAlive).toEqual([]);
    expect(isRunning(daemon)).toBe(false);
  });

  test("the marker must match exactly: a marker that only starts with this run's nonce is not this run's", async () => {
    const nonce = generateRunNonce();
    const other = await execed(start("sleep", ["300"], { env: { ...PATH_ONLY, HANDOFF_RUN_NONCE: `${nonce}0` } }), "sleep");
    expect(findSurvivors({ nonce, roots: [] }).map((s) => s.pid)).not.toContain(other);
  });

  test("a process of another run with the same run id (another runs directory) is not this run's: the marker is the nonce, not HANDOFF_RUN_ID", async () => {
    const nonce = generateRunNonce();
    const ours = await execed(
      start("sleep", ["300"], { env: { ...PATH_ONLY, HANDOFF_RUN_ID: "pr-123", HANDOFF_RUN_NONCE: nonce } }),
      "sleep",
    );
    const theirs = await execed(
      start("sleep", ["301"], { env: { ...PATH_ONLY, HANDOFF_RUN_ID: "pr-123", HANDOFF_RUN_NONCE: generateRunNonce() } }),
      "sleep",
    );
    expect(findSurvivors({ nonce, roots: [] }).map((s) => s.pid)).toEqual([ours]);
    expect(isRunning(theirs)).toBe(true);
  });

  test("a daemon that cleared its environment but sits in the workspace is found by holds_workspace", async () => {
    const workspace = tempDir("handoff-surv-ws");
    const daemon = await execed(start("env", ["-i", "sleep", "300"], { cwd: workspace }), "sleep");

    const found = findSurvivors({ nonce: generateRunNonce(), roots: [workspace] });
    expect(found.map(({ pid, reason }) => ({ pid, reason }))).toEqual([{ pid: daemon, reason: "holds_workspace" }]);
    await killSurvivors(found);
    expect(isRunning(daemon)).toBe(false);
  });

  test("a process that only keeps a file of the workspace open is found by holds_workspace", async () => {
    const workspace = tempDir("handoff-surv-ws");
    writeFileSync(join(workspace, "held.txt"), "held\n");
    const script = 'exec 3< "$0"; cd /; exec sleep 300';
    const holder = await execed(start("env", ["-i", "/bin/sh", "-c", script, join(workspace, "held.txt")]), "sleep");

    expect(findSurvivors({ nonce: generateRunNonce(), roots: [workspace] }).map((s) => s.pid)).toEqual([holder]);
  });

  test("a workspace replaced by a symlink does not widen the search to the link's target", async () => {
    const parent = tempDir("handoff-surv-parent");
    const elsewhere = tempDir("handoff-surv-elsewhere");
    symlinkSync(elsewhere, join(parent, "ws"));
    const bystander = await execed(start("sleep", ["300"], { cwd: elsewhere }), "sleep");
    expect(findSurvivors({ nonce: generateRunNonce(), roots: [join(parent, "ws")] }).map((s) => s.pid)).not.toContain(bystander);
  });

  test("an unrelated process is neither found nor touched", async () => {
    const nonce = generateRunNonce();
    const workspace = tempDir("handoff-surv-ws");
    const unrelatedDir = tempDir("handoff-surv-other");
    mkdirSync(join(workspace, "ws"));
    const marked = await execed(start("sleep", ["300"], { env: { ...PATH_ONLY, HANDOFF_RUN_NONCE: nonce } }), "sleep");
    const unrelated = await execed(start("sleep", ["301"], { cwd: unrelatedDir }), "sleep");

    const found = findSurvivors({ nonce, roots: [workspace] });
    expect(found.map((s) => s.pid)).toEqual([marked]);
    await killSurvivors(found);
    expect(isRunning(unrelated)).toBe(true);
  });

  test("a pid that now names another process (other start time) is never signalled", async () => {
    const bystander = await execed(start("sleep", ["300"]), "sleep");
    const stale = { pid: bystander, startTime: processStartTime(bystander)! - 1, command: "sleep 300", reason: "marker" as const };

    const outcome = await killSurvivors([stale]);
    expect(outcome.stillAlive).toEqual([]); // the process that was found is gone; this pid is someone else's
    expect(isRunning(bystander)).toBe(true);
  });

  test("handoff's own process and its ancestors are never survivors, even with the marker and the workspace", () => {
    const nonce = generateRunNonce();
    process.env.HANDOFF_RUN_NONCE = nonce;
    onTestFinished(() => void delete process.env.HANDOFF_RUN_NONCE);
    const found = findSurvivors({ nonce, roots: [process.cwd()] });
    expect(found.map((s) => s.pid)).not.toContain(process.pid);
    expect(found.map((s) => s.pid)).not.toContain(process.ppid);
  });

  test("LIMIT: a process that dropped the marker and left the workspace (env -i, cd /) is not found", async () => {
    const nonce = generateRunNonce();
    const workspace = tempDir("handoff-surv-ws");
    // Started from the workspace with the marker, as an agent's child would be; it sheds both before it sleeps.
    const script = "cd / && exec env -i sleep 300";
    const escaped = await execed(
      start("/bin/sh", ["-c", script], { cwd: workspace, env: { ...PATH_ONLY, HANDOFF_RUN_NONCE: nonce } }),
      "sleep",
    );

    expect(findSurvivors({ nonce, roots: [workspace] }).map((s) => s.pid)).not.toContain(escaped);
    expect(isRunning(escaped)).toBe(true);
  });

  test("long command lines are cut to 120 characters with control characters escaped", async () => {
    const nonce = generateRunNonce();
    onTestFinished(async () => void (await killSurvivors(findSurvivors({ nonce, roots: [] })))); // the shell's sleep
    const pid = await execed(
      start("/bin/sh", ["-c", "sleep 300; :", `x\x1b[31m${"y".repeat(300)}`], { env: { ...PATH_ONLY, HANDOFF_RUN_NONCE: nonce } }),
      "/bin/sh",
    );
    const [survivor] = findSurvivors({ nonce, roots: [] }).filter((s) => s.pid === pid);
    expect(survivor?.command).toMatch(/^\/bin\/sh -c sleep 300; : x\\x1b\[31my+…$/);
    expect(survivor?.command.length).toBeLessThanOrEqual(120);
    expect(survivor?.command).not.toMatch(/[\x00-\x1f]/);
  });
});
