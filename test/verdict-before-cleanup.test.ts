import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ExternalCodingRunner } from "../src/run/runner.js";
import type { RunResult } from "../src/verdict/result.js";
import { commandRunArgs, HANDOFF_BIN } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, makeHarness, readJson } from "./helpers/run.js";

describe("the verdict is told before the workspaces are removed", () => {
  test("onDecided gets the verdict result.json already holds, before the cleanup phase; run returns after it, timed", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const harness = makeHarness();
    const order: string[] = [];
    let decided: RunResult | null = null;
    let onDisk: { result: Record<string, unknown>; checkpoint: Record<string, unknown> } | null = null;
    const runner = new ExternalCodingRunner({
      onEvent: (event) => {
        if (event.type === "phase.started" || event.type === "phase.finished") order.push(`${event.type} ${event.phase}`);
        if (event.type === "run.finished") order.push("run.finished");
      },
      onDecided: (result) => {
        order.push("decided");
        decided = result;
        // What is on disk when told (a throw here would be the hook's failure, a diagnostic: checked below).
        onDisk = { result: readJson(join(result.runDir, "result.json")), checkpoint: readJson(join(result.runDir, "checkpoint.json")) };
      },
    });
    const result = await runner.run({
      repo,
      task: "fix add",
      backend: "command",
      agentCmd: agent("fixes-add.sh"),
      yes: true,
      verify: ["npm test"],
      runsDir: harness.runsDir,
      workspacesDir: harness.workspacesDir,
      cliHomesDir: harness.cliHomesDir,
    });
    expect(result.terminalReason).toBe("verified");
    expect(order.indexOf("decided")).toBeGreaterThan(order.indexOf("phase.finished finish"));
    expect(order.slice(order.indexOf("decided"))).toEqual(["decided", "phase.started cleanup", "phase.finished cleanup", "run.finished"]);
    expect(decided!.terminalReason).toBe(result.terminalReason);
    // The verdict was on disk, its clean-up still to come.
    expect(onDisk!.result).toMatchObject({ runId: result.runId, terminalReason: "verified" });
    expect(onDisk!.checkpoint).toMatchObject({ done: true, cleanup: "pending" });
    expect(decided!.timings.phases.cleanup).toBeUndefined();
    expect(result.timings.phases.cleanup).toBeGreaterThanOrEqual(0);
    // After the clean-up, result.json is written again with its timing, the verdict unchanged, the checkpoint done.
    const after = readJson(join(result.runDir, "result.json")) as unknown as RunResult;
    expect(after.terminalReason).toBe(decided!.terminalReason);
    expect(after.timings.phases.cleanup).toBe(result.timings.phases.cleanup);
    expect(after.timings.durationMs).toBe(decided!.timings.durationMs);
    expect(readJson(join(result.runDir, "checkpoint.json"))).toMatchObject({ done: true, cleanup: "done" });
  });

  test("the CLI prints the verdict line before it starts removing the workspaces; --json prints the whole result after", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const state = tempDir("handoff-cli-state");
    // stdout and stderr into one file: each write lands in the order the CLI made it (files are written synchronously).
    const run = async (extra: readonly string[]) => {
      const file = join(state, `out-${extra.length}.txt`);
      const fd = openSync(file, "w");
      const args = commandRunArgs(
        repo,
        agent("fixes-add.sh"),
        ["--yes", "--verify", "npm test", "--runs-dir", join(state, "runs"), ...extra],
        "fix add",
      );
      const child = spawn(process.execPath, [HANDOFF_BIN, ...args], {
        cwd: state,
        env: {
          ...process.env,
          XDG_STATE_HOME: join(state, "xdg"),
          HANDOFF_WORKSPACE_DIR: join(state, "ws"),
          HANDOFF_CLI_HOME_DIR: join(state, "homes"),
        },
        stdio: ["ignore", fd, fd],
      });
      const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
      closeSync(fd);
      return { code, lines: readFileSync(file, "utf8").split("\n") };
    };
    const plain = await run([]);
    expect(plain.code, plain.lines.join("\n")).toBe(0);
    const verdict = plain.lines.findIndex((line) => line.startsWith("verified: "));
    const removing = plain.lines.indexOf("handoff: removing the workspaces…");
    const removed = plain.lines.findIndex((line) => /^handoff: cleanup done in \d+ ms$/.test(line));
    expect(verdict, plain.lines.join("\n")).toBeGreaterThanOrEqual(0);
    expect(removing).toBeGreaterThan(verdict);
    expect(removed).toBeGreaterThan(removing);
    expect(plain.lines[verdict + 1]).toMatch(/^run directory: /);

    const json = await run(["--json"]);
    expect(json.code).toBe(0);
    const start = json.lines.indexOf("{");
    expect(json.lines.findIndex((line) => /^handoff: cleanup done in \d+ ms$/.test(line))).toBeLessThan(start);
    const result = JSON.parse(json.lines.slice(start).join("\n")) as RunResult;
    expect(result.timings.phases.cleanup).toBeGreaterThanOrEqual(0);
    expect(existsSync(join(result.runDir, "result.json"))).toBe(true);
  });
});
