import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { BackendResultJson } from "../src/run-dir/artifacts/backend-result.js";
import { CheckpointJson } from "../src/run-dir/artifacts/checkpoint.js";
import { RequestJson } from "../src/run-dir/artifacts/request.js";
import { RunResult } from "../src/verdict/result.js";
import { crashedRunResult } from "../src/run-dir/crash-result.js";
import { parsePatch } from "../src/patch/patch.js";
import { FAILING_ADD_PROJECT, makeRepo } from "./helpers/repo.js";
import { agent, delegate } from "./helpers/run.js";

function json(runDir: string, name: string): unknown {
  return JSON.parse(readFileSync(join(runDir, name), "utf8"));
}

describe("one schema per run-directory artifact, shared by its writer and its readers", () => {
  test("request.json, checkpoint.json, backend-result.json and result.json as a run writes them parse with the schemas their readers use", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test"] });
    expect(run.result.terminalReason).toBe("verified");
    const request = RequestJson.safeParse(json(run.runDir, "request.json"));
    expect(request.success, JSON.stringify(request.error?.issues)).toBe(true);
    expect(request.data).toMatchObject({
      repo: { path: run.result.repo.path, baseCommit: run.result.repo.baseCommit },
      backend: { name: "command" },
      commands: { verify: ["npm test"] },
    });
    const checkpoint = CheckpointJson.safeParse(json(run.runDir, "checkpoint.json"));
    expect(checkpoint.success, JSON.stringify(checkpoint.error?.issues)).toBe(true);
    expect(checkpoint.data).toMatchObject({
      done: true,
      terminalReason: "verified",
      cleanup: "done",
      artifacts: { "changes.patch": { sha256: run.result.patch?.sha256 } },
    });
    const backend = BackendResultJson.safeParse(json(run.runDir, "backend-result.json"));
    expect(backend.success, JSON.stringify(backend.error?.issues)).toBe(true);
    expect(backend.data).toMatchObject({ backend: "command", outcome: { kind: "finished" }, exitCode: 0 });
    expect(RunResult.safeParse(json(run.runDir, "result.json")).success).toBe(true);
  });

  test("a forged artifact is rejected by its schema: a request without its identity, a checkpoint of the wrong shape or with a foreign nonce, a backend record that is neither ran nor not-ran", () => {
    const request = { runId: "r", task: "t", repo: { path: "/src/repo", baseCommit: "0".repeat(40) }, backend: { name: "command" } };
    expect(RequestJson.safeParse(request).success).toBe(true); // the identity is all an older request.json is sure to have
    expect(RequestJson.safeParse({ ...request, repo: "/src/repo" }).success).toBe(false);
    expect(RequestJson.safeParse({ runId: "r", task: "t", repo: request.repo }).success).toBe(false);
    expect(RequestJson.safeParse({ ...request, holdouts: [{ source: "/x.patch", sha256: "ab" }] }).success).toBe(false);

    expect(CheckpointJson.safeParse({ phase: 7, owner: "me" }).success).toBe(false);
    expect(CheckpointJson.safeParse({ phase: "agent", nonce: "../../etc" }).success).toBe(false);
    expect(CheckpointJson.safeParse({ phase: "agent", owner: { pid: -1, startTime: null } }).success).toBe(false);
    expect(
      CheckpointJson.safeParse({ phase: "agent", resources: { cgroups: Array.from({ length: 65 }, (_, i) => `/sys/fs/cgroup/${i}`) } })
        .success,
    ).toBe(false);
    expect(CheckpointJson.safeParse({ done: true, terminalReason: "escaped" }).success).toBe(false);
    expect(CheckpointJson.safeParse({ runId: "done", phase: "finish", owner: { pid: 1, startTime: null }, done: true }).success).toBe(true);

    expect(BackendResultJson.safeParse({ backend: "command", ran: false }).success).toBe(true);
    expect(BackendResultJson.safeParse({ backend: "command", ran: true }).success).toBe(false);
    expect(BackendResultJson.safeParse({ backend: "command", outcome: { kind: "finished" }, exitCode: "0" }).success).toBe(false);
  });

  test("a crashed run's result.json comes from the one builder with decideOutcome's verdict, and the schema knows its sweep key", () => {
    const killed = { pid: 12, startTime: 99, command: "sleep 100", reason: "marker" as const };
    const result = crashedRunResult({
      runId: "r",
      runDir: "/runs/r",
      phase: "extract",
      ownerPid: 7965,
      repo: { path: "/src/repo", baseCommit: "0".repeat(40) },
      backendName: "command",
      agent: null,
      patch: parsePatch(Buffer.from("diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")),
      startedAt: new Date(1000),
      lastSeenAt: new Date(4000),
      killed: [killed],
      stillAlive: [],
      removed: ["/tmp/handoff/r-0123456789abcdef"],
    });
    expect(result).toMatchObject({
      terminalReason: "user_cancelled",
      status: "cancelled",
      detail: "runner_crashed",
      timings: { durationMs: 3000, phases: {} },
    });
    expect(result.patch?.files).toEqual([{ path: "x", change: "modified", additions: 1, deletions: 1 }]);
    expect(result.sweep).toEqual({
      killed: [{ pid: 12, command: "sleep 100", reason: "marker" }],
      stillAlive: [],
      removed: ["/tmp/handoff/r-0123456789abcdef"],
    });
    expect(RunResult.parse(JSON.parse(JSON.stringify(result)))).toEqual(result);
    expect(RunResult.safeParse({ ...result, sweep: { killed: "all" } }).success).toBe(false);
  });
});
