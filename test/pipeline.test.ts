import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, test } from "vitest";
import { ExternalCodingRunner } from "../src/run/runner.js";
import { FAILING_ADD_PROJECT, gitIn, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, delegate } from "./helpers/run.js";

describe("handoff run with the command backend", () => {
  test("a fix that passes handoff's own verification ends verified", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test"] });
    expect(run.result.terminalReason).toBe("verified");
    expect(run.result.status).toBe("completed");
    expect(run.result.patch?.files).toEqual([{ path: "math.js", change: "modified", additions: 1, deletions: 1 }]);
    expect(run.patch).toContain("+  return a + b;");
    expect(run.result.verification).toMatchObject({ ran: true, passed: true });
    expect(run.result.agent.finalMessage).toBe("Fixed add(); all tests pass.");
    expect(run.sourceChanged).toEqual([]);
    expect(run.payloadsRan).toEqual([]);
  });

  test("an agent that changes nothing ends no_changes with an empty patch", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("does-nothing.sh"), { verify: ["npm test"] });
    expect(run.result.terminalReason).toBe("no_changes");
    expect(run.patch).toBe("");
    expect(run.result.verification.ran).toBe(false);
    expect(run.sourceChanged).toEqual([]);
  });

  test("a source with branches under handoff/ (what apply --commit makes) still runs: the agent's branch is made in its copy", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    gitIn(repo, "branch", "handoff/20261202T040358Z-81c949");
    gitIn(repo, "branch", "handoff/fix/add");
    const { result } = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test"] });
    expect(result.terminalReason, result.summary).toBe("verified");
    expect(gitIn(repo, "for-each-ref", "--format=%(refname)", "refs/heads/handoff")).toBe(
      "refs/heads/handoff/20261202T040358Z-81c949\nrefs/heads/handoff/fix/add\n",
    );
  });

  test("a change that fails verification ends verification_failed, whatever the agent claims", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("breaks-add.sh"), { verify: ["npm test"] });
    expect(run.result.terminalReason).toBe("verification_failed");
    expect(run.result.detail).toBe("command_failed");
    expect(run.result.agent.finalMessage).toContain("all tests pass");
    expect(run.sourceChanged).toEqual([]);
  });

  test("an agent exiting non-zero ends external_agent_error with its exit code, patch kept", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("exits-nonzero.sh"), { verify: ["npm test"] });
    expect(run.result.terminalReason).toBe("external_agent_error");
    expect(run.result.detail).toBe("exit_code_3");
    expect(run.result.backend.exitCode).toBe(3);
    expect(run.patch).toContain("+// partial");
    expect(run.sourceChanged).toEqual([]);
  });
});

describe("handoff run: input the command backend refuses or passes on", () => {
  test("reusing a run id is a usage error and leaves the earlier run untouched", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const first = await delegate(repo, agent("fixes-add.sh"), { runId: "same-id", verify: ["npm test"] });
    const before = readFileSync(join(first.runDir, "result.json"), "utf8");
    await expect(
      new ExternalCodingRunner().run({
        repo,
        task: "again",
        backend: "command",
        agentCmd: "true",
        yes: true,
        noVerify: true,
        runsDir: dirname(first.runDir),
        runId: "same-id",
      }),
    ).rejects.toMatchObject({ name: "UsageError", code: "run_exists" });
    expect(readFileSync(join(first.runDir, "result.json"), "utf8")).toBe(before);
  });

  test("--bin with the command backend is a usage error: the program belongs in --agent-cmd", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    await expect(
      new ExternalCodingRunner().run({
        repo,
        task: "t",
        backend: "command",
        agentCmd: "true",
        bin: "/usr/bin/true",
        yes: true,
        noVerify: true,
        runsDir: join(tempDir(), "runs"),
      }),
    ).rejects.toMatchObject({ code: "bin_with_command" });
  });

  test("the model name reaches the command agent as $HANDOFF_MODEL", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, `echo "{\\"type\\":\\"message\\",\\"text\\":\\"model=$HANDOFF_MODEL\\"}"`, {
      model: "tiny-1",
      noVerify: true,
    });
    expect(run.result.terminalReason).toBe("no_changes");
    expect(run.result.agent.finalMessage).toBe("model=tiny-1");
  });
});
