import { existsSync, mkdirSync, readFileSync, readdirSync, truncateSync, writeFileSync } from "node:fs";
import { getEventListeners } from "node:events";
import { join } from "node:path";
import { XMLParser } from "fast-xml-parser";
import { describe, expect, test } from "vitest";
import { LocalExecutor } from "../src/many/local-executor.js";
import { readBatchFile, parseBatchText, MAX_BATCH_FILE_BYTES } from "../src/many/batch-file.js";
import { BatchRecord, type TaskRecord, batchRecord, recordWithoutRun } from "../src/many/batch-record.js";
import { progressLine } from "../src/many/batch-progress.js";
import { runBatch } from "../src/many/batch.js";
import type { TaskSpec } from "../src/many/batch-task.js";
import { renderBatchJunit } from "../src/many/junit.js";
import { SEVERITY, TASK_OUTCOMES, type TaskOutcome, batchExitCode } from "../src/many/outcome.js";
import type { TaskContext, TaskExecutor } from "../src/many/task-executor.js";
import { ARTIFACTS } from "../src/run-dir/run-dir.js";
import { expectUsageError, runCli, startCli } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent } from "./helpers/run.js";

/** One task line of the command backend on `repo`, verified by the fixture's own test. */
function line(fields: Record<string, unknown>): string {
  return JSON.stringify({ backend: "command", task: "fix the failing test", verify: ["node test.js"], ...fields });
}

function junitOf(xml: string) {
  const parsed = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@_", isArray: (name) => name === "testcase" }).parse(xml);
  return parsed.testsuites.testsuite as Record<string, any>;
}

async function waitFor(what: string, ready: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function agentStarted(runDir: string): boolean {
  const events = join(runDir, "events.jsonl");
  return existsSync(events) && readFileSync(events, "utf8").includes('"phase":"agent"');
}

describe("handoff batch through the CLI", () => {
  test("ten tasks with mixed verdicts and one bad line, --jobs 3: every task recorded, the counts, batch.json, JUnit and the worst exit code agree", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const root = tempDir("handoff-batch");
    const file = join(root, "tasks.jsonl");
    const lines = [
      line({ id: "fix-1", repo, agentCmd: agent("fixes-add.sh") }),
      line({ id: "break-1", repo, agentCmd: agent("breaks-add.sh") }),
      line({ id: "nothing-1", repo, agentCmd: agent("does-nothing.sh") }),
      line({ id: "fix-2", repo, agentCmd: agent("fixes-add.sh") }),
      "{ this is not json",
      line({ id: "exits-1", repo, agentCmd: agent("exits-nonzero.sh") }),
      line({ id: "no-repo", repo: join(root, "missing"), agentCmd: agent("fixes-add.sh") }),
      line({ id: "fix-3", repo, agentCmd: agent("fixes-add.sh") }),
      line({ id: "break-2", repo, agentCmd: agent("breaks-add.sh") }),
      line({ id: "nothing-2", repo, agentCmd: agent("does-nothing.sh") }),
      "",
      line({ repo, agentCmd: agent("fixes-add.sh") }),
    ];
    writeFileSync(file, `${lines.join("\n")}\n`);
    const runsDir = join(root, "runs");
    const junitCopy = join(root, "copy.xml");
    const outcome = await runCli([
      "batch",
      file,
      "--jobs",
      "3",
      "--yes",
      "--sandbox",
      "none",
      "--runs-dir",
      runsDir,
      "--batch-id",
      "b",
      "--junit",
      junitCopy,
    ]);

    // The most severe outcome here is the task whose repository does not exist (and the bad line): invalid_task, 2.
    expect(outcome.code, outcome.stderr).toBe(2);
    const batchDir = join(runsDir, "b");
    const record = BatchRecord.parse(JSON.parse(readFileSync(join(batchDir, "batch.json"), "utf8")));
    expect(record.tasks.map((task) => [task.id, task.line, task.outcome])).toEqual([
      ["fix-1", 1, "verified"],
      ["break-1", 2, "verification_failed"],
      ["nothing-1", 3, "no_changes"],
      ["fix-2", 4, "verified"],
      ["task-5", 5, "invalid_task"],
      ["exits-1", 6, "external_agent_error"],
      ["no-repo", 7, "invalid_task"],
      ["fix-3", 8, "verified"],
      ["break-2", 9, "verification_failed"],
      ["nothing-2", 10, "no_changes"],
      ["task-12", 12, "verified"],
    ]);
    expect(record).toMatchObject({ total: 11, worst: "invalid_task", exitCode: 2, interrupted: false, jobs: 3, via: "local", file });
    expect(record.counts).toMatchObject({ verified: 4, verification_failed: 2, no_changes: 2, external_agent_error: 1, invalid_task: 2 });
    expect(record.tasks.find((task) => task.id === "task-5")!.summary).toMatch(/^line 5: not JSON/);
    expect(record.tasks.find((task) => task.id === "no-repo")!.summary).toContain("missing");

    for (const task of record.tasks) {
      if (task.outcome === "invalid_task") {
        expect(task.runDir).toBeNull();
        continue;
      }
      expect(task.runDir).toBe(join(batchDir, "runs", task.id));
      for (const artifact of ARTIFACTS) expect(existsSync(join(task.runDir!, artifact)), `${task.id} ${artifact}`).toBe(true);
      expect(JSON.parse(readFileSync(join(task.runDir!, "result.json"), "utf8")).terminalReason).toBe(task.outcome);
    }

    const junit = readFileSync(join(batchDir, "junit.xml"), "utf8");
    expect(readFileSync(junitCopy, "utf8")).toBe(junit);
    const suite = junitOf(junit);
    expect(suite.testcase).toHaveLength(11);
    expect(suite).toMatchObject({ "@_tests": "11", "@_failures": "4", "@_errors": "3", "@_skipped": "0" });
    expect(suite.testcase.filter((testcase: any) => testcase.failure)).toHaveLength(4);
    expect(suite.testcase.filter((testcase: any) => testcase.error)).toHaveLength(3);
    expect(suite.testcase.map((testcase: any) => testcase["@_name"])).toEqual(record.tasks.map((task) => task.id));

    const lastProgress = outcome.stderr.trimEnd().split("\n").at(-1);
    expect(lastProgress).toBe(
      "[batch] 11/11 done, 0 running: 4 verified, 2 no_changes, 2 verification_failed, 1 external_agent_error, 2 invalid_task",
    );
    for (const task of record.tasks) expect(outcome.stdout).toContain(task.id);
    expect(outcome.stdout).toContain(`batch.json: ${join(batchDir, "batch.json")}`);
  }, 120_000);

  test("--json prints batch.json to stdout and nothing else there", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const root = tempDir("handoff-batch");
    const file = join(root, "tasks.jsonl");
    writeFileSync(file, `${line({ repo, agentCmd: agent("fixes-add.sh") })}\n`);
    const outcome = await runCli([
      "batch",
      file,
      "--json",
      "--yes",
      "--sandbox",
      "none",
      "--runs-dir",
      join(root, "runs"),
      "--batch-id",
      "j",
    ]);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(JSON.parse(outcome.stdout)).toEqual(JSON.parse(readFileSync(join(root, "runs", "j", "batch.json"), "utf8")));
  }, 60_000);

  test("SIGINT mid-batch cancels the running tasks (complete run directories), records the rest not_started, writes batch.json and exits 130", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const root = tempDir("handoff-batch");
    const file = join(root, "tasks.jsonl");
    const ids = ["s1", "s2", "s3", "s4", "s5"];
    writeFileSync(file, `${ids.map((id) => line({ id, repo, agentCmd: "sleep 60" })).join("\n")}\n`);
    const runsDir = join(root, "runs");
    const cli = startCli(["batch", file, "--jobs", "2", "--yes", "--sandbox", "none", "--runs-dir", runsDir, "--batch-id", "b"]);
    const runDir = (id: string) => join(runsDir, "b", "runs", id);
    await waitFor("the first two agents starting", () => agentStarted(runDir("s1")) && agentStarted(runDir("s2")));
    cli.child.kill("SIGINT");
    const outcome = await cli.done;

    expect(outcome.code, outcome.stderr).toBe(130);
    const record = BatchRecord.parse(JSON.parse(readFileSync(join(runsDir, "b", "batch.json"), "utf8")));
    expect(record.interrupted).toBe(true);
    expect(record.tasks.map((task) => [task.id, task.outcome])).toEqual([
      ["s1", "user_cancelled"],
      ["s2", "user_cancelled"],
      ["s3", "not_started"],
      ["s4", "not_started"],
      ["s5", "not_started"],
    ]);
    for (const id of ["s1", "s2"])
      for (const artifact of ARTIFACTS) expect(existsSync(join(runDir(id), artifact)), `${id} ${artifact}`).toBe(true);
    for (const id of ["s3", "s4", "s5"]) expect(existsSync(runDir(id))).toBe(false);
    const suite = junitOf(readFileSync(join(runsDir, "b", "junit.xml"), "utf8"));
    expect(suite).toMatchObject({ "@_tests": "5", "@_skipped": "5", "@_failures": "0", "@_errors": "0" });
  }, 120_000);

  test("a batch whose handoff was killed with -9 mid-task: the next batch in the same runs directory ends the half-run runner_crashed before its own tasks", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const root = tempDir("handoff-batch");
    const file = join(root, "tasks.jsonl");
    writeFileSync(file, `${line({ id: "sleeps", repo, agentCmd: "sleep 60" })}\n`);
    const runsDir = join(root, "runs");
    const killed = startCli(["batch", file, "--yes", "--sandbox", "none", "--runs-dir", runsDir, "--batch-id", "killed"]);
    const halfRun = join(runsDir, "killed", "runs", "sleeps");
    await waitFor("the agent starting", () => agentStarted(halfRun));
    killed.child.kill("SIGKILL");
    await killed.done;
    expect(existsSync(join(halfRun, "result.json"))).toBe(false);

    writeFileSync(file, `${line({ id: "next", repo, agentCmd: "true" })}\n`);
    const next = await runCli(["batch", file, "--yes", "--sandbox", "none", "--runs-dir", runsDir, "--batch-id", "next"]);
    expect(next.code, next.stderr).toBe(3);
    expect(JSON.parse(readFileSync(join(halfRun, "result.json"), "utf8"))).toMatchObject({
      terminalReason: "user_cancelled",
      detail: "runner_crashed",
    });
  }, 120_000);

  test("without --yes and without a terminal, a batch is the usual approval-required usage error, and nothing is created", async () => {
    const root = tempDir("handoff-batch");
    const file = join(root, "tasks.jsonl");
    writeFileSync(file, `${line({ repo: root, agentCmd: "true" })}\n`);
    const outcome = await runCli(["batch", file, "--runs-dir", join(root, "runs")]);
    expectUsageError(outcome, /approval needed/);
    expect(existsSync(join(root, "runs"))).toBe(false);
  });

  test.each([
    [["--jobs", "0"], /--jobs takes a whole number from 1 to 64/],
    [["--batch-id", "../x"], /--batch-id is one path segment/],
    [["--sandbox", "nope"], /--sandbox must be auto, bwrap or none/],
  ])("handoff batch %j is a usage error", async (extra, says) => {
    const root = tempDir("handoff-batch");
    const file = join(root, "tasks.jsonl");
    writeFileSync(file, `${line({ repo: root, agentCmd: "true" })}\n`);
    expectUsageError(await runCli(["batch", file, "--yes", "--runs-dir", join(root, "runs"), ...extra]), says);
  });

  test("a batch id that is already a batch directory is a usage error that leaves the earlier batch alone", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const root = tempDir("handoff-batch");
    const file = join(root, "tasks.jsonl");
    writeFileSync(file, `${line({ repo, agentCmd: agent("does-nothing.sh") })}\n`);
    const args = ["batch", file, "--yes", "--sandbox", "none", "--runs-dir", join(root, "runs"), "--batch-id", "same"];
    expect((await runCli(args)).code).toBe(3);
    const before = readFileSync(join(root, "runs", "same", "batch.json"), "utf8");
    expectUsageError(await runCli(args), /already exists/);
    expect(readFileSync(join(root, "runs", "same", "batch.json"), "utf8")).toBe(before);
  }, 60_000);
});

describe("the batch file, line by line", () => {
  test("each kind of bad line is an invalid_task record naming its line number and its first problem; the good lines are tasks", () => {
    const cwd = tempDir("handoff-batch-file");
    const text = [
      '{"task":"one","id":"a"}', // 1
      "not json", // 2
      "[1, 2]", // 3
      "42", // 4
      '{"task":"t","verfy":["npm test"]}', // 5
      '{"task":"t","verify":"npm test"}', // 6
      '{"task":"t","id":"a"}', // 7
      JSON.stringify({ task: "x".repeat(1024 * 1024 + 1) }), // 8
      '{"task":""}', // 9
      "   ", // 10: blank, skipped
      '{"task":"crlf","repo":"sub"}\r', // 11
      '{"task":"t","id":"../escape"}', // 12
      '{"task":"t\\u0000nul"}', // 13
    ].join("\n");
    const { specs, invalid } = parseBatchText(text, cwd);
    expect(specs.map((spec) => [spec.id, spec.line, spec.repo])).toEqual([
      ["a", 1, cwd],
      ["task-11", 11, join(cwd, "sub")],
    ]);
    const problems = Object.fromEntries(invalid.map((record) => [record.line, record.summary]));
    expect(Object.keys(problems).map(Number)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 12, 13]);
    expect(problems[2]).toMatch(/^line 2: not JSON: /);
    expect(problems[3]).toBe("line 3: not a JSON object but an array");
    expect(problems[4]).toBe("line 4: not a JSON object but number");
    expect(problems[5]).toMatch(/^line 5: .*verfy/);
    expect(problems[6]).toMatch(/^line 6: verify: /);
    expect(problems[7]).toBe("line 7: id 'a' is already the id of line 1");
    expect(problems[8]).toMatch(/^line 8: task: the task is 1048577 bytes/);
    expect(problems[9]).toMatch(/^line 9: task: /);
    expect(problems[12]).toMatch(/^line 12: id: an id is one path segment/);
    expect(problems[13]).toMatch(/^line 13: task: the task holds a NUL byte/);
    for (const record of invalid) expect(record).toMatchObject({ outcome: "invalid_task", exitCode: 2, runDir: null, repo: null });
    expect(invalid.map((record) => record.id)).toEqual([
      "task-2",
      "task-3",
      "task-4",
      "task-5",
      "task-6",
      "task-7",
      "task-8",
      "task-9",
      "task-12",
      "task-13",
    ]);
  });

  test("an empty file, a file of bad lines only and a file past 64 MiB are usage errors", () => {
    const dir = tempDir("handoff-batch-file");
    const empty = join(dir, "empty.jsonl");
    writeFileSync(empty, "\n\n  \n");
    expect(() => readBatchFile(empty)).toThrow(/holds no task/);
    const bad = join(dir, "bad.jsonl");
    writeFileSync(bad, "nope\n[]\n");
    expect(() => readBatchFile(bad)).toThrow(/holds no valid task: line 1: not JSON.*\(and 1 more bad line\(s\)\)/);
    const huge = join(dir, "huge.jsonl");
    writeFileSync(huge, "");
    truncateSync(huge, MAX_BATCH_FILE_BYTES + 1);
    expect(() => readBatchFile(huge)).toThrow(/more than 67108864 bytes/);
    expect(() => readBatchFile(join(dir, "missing.jsonl"))).toThrow(/cannot read the batch file ".*missing\.jsonl": no such file$/);
  });
});

describe("a batch's outcome", () => {
  test("the exit code is 0 only when every task verified, else the code of the most severe outcome", () => {
    expect(batchExitCode([])).toBe(0);
    expect(batchExitCode(["verified", "verified"])).toBe(0);
    expect(batchExitCode(["verified", "no_changes"])).toBe(3);
    expect(batchExitCode(["no_changes", "verification_failed"])).toBe(1);
    expect(batchExitCode(["verification_failed", "timeout"])).toBe(124);
    expect(batchExitCode(["timeout", "external_agent_error"])).toBe(6);
    expect(batchExitCode(["external_agent_error", "policy_or_artifact_error"])).toBe(4);
    expect(batchExitCode(["policy_or_artifact_error", "invalid_task"])).toBe(2);
    expect(batchExitCode(["invalid_task", "internal_error"])).toBe(70);
    expect(batchExitCode(["internal_error", "not_started"])).toBe(130);
    expect(batchExitCode(["not_started", "user_cancelled", "verified"])).toBe(130);
    expect(batchExitCode(["user_cancelled", "source_repository_changed"])).toBe(5);
  });

  test("the severity order names every outcome exactly once", () => {
    expect([...SEVERITY].sort()).toEqual([...TASK_OUTCOMES].sort());
  });

  test("the JUnit file of a batch parses, and its counts match its cases, whatever a summary holds", () => {
    const outcomes: TaskOutcome[] = [
      "verified",
      "verification_failed",
      "no_changes",
      "timeout",
      "invalid_task",
      "not_started",
      "user_cancelled",
    ];
    const tasks = outcomes.map((outcome, index) => ({
      ...recordWithoutRun({ id: `t${index}`, line: index + 1, repo: null }, "invalid_task", `bad <xml> & "quotes" \u0001 \ud800`),
      outcome,
      runDir: index % 2 === 0 ? `/runs/t${index}` : null,
      durationMs: 1500,
    }));
    const record = batchRecord(
      {
        batchId: "b",
        file: "/f",
        batchDir: "/runs/b",
        via: "local",
        jobs: 2,
        unwritten: [],
        startedAt: new Date(0).toISOString(),
        durationMs: 3000,
        interrupted: true,
      },
      tasks,
    );
    const suite = junitOf(renderBatchJunit(record));
    expect(suite).toMatchObject({ "@_tests": "7", "@_failures": "2", "@_errors": "2", "@_skipped": "2", "@_time": "3.000" });
    expect(suite.testcase).toHaveLength(7);
    expect(suite.testcase[0]).toMatchObject({
      "@_name": "t0",
      "@_classname": "handoff.batch",
      "@_time": "1.500",
      "system-out": "/runs/t0",
    });
    expect(suite.testcase[1].failure["@_message"]).toContain('verification_failed: bad <xml> & "quotes"');
  });
});

/** An executor that records what it was given and ends each task as `outcomes` says, after `delayMs`. */
class FakeExecutor implements TaskExecutor {
  readonly started: string[] = [];
  maxRunning = 0;
  #running = 0;
  readonly concurrency: number;
  readonly outcome: (spec: TaskSpec, context: TaskContext) => Promise<TaskRecord>;
  constructor(concurrency: number, outcome: (spec: TaskSpec, context: TaskContext) => Promise<TaskRecord>) {
    this.concurrency = concurrency;
    this.outcome = outcome;
  }
  async run(spec: TaskSpec, context: TaskContext): Promise<TaskRecord> {
    context.started();
    this.started.push(spec.id);
    this.#running++;
    this.maxRunning = Math.max(this.maxRunning, this.#running);
    try {
      return await this.outcome(spec, context);
    } finally {
      this.#running--;
    }
  }
  async close(): Promise<void> {}
}

function specs(count: number): TaskSpec[] {
  return Array.from({ length: count }, (_, index) => ({ id: `t${index + 1}`, line: index + 1, repo: "/r", fields: { task: "t" } }));
}

describe("runBatch, the pool both executors share", () => {
  test("starts tasks in file order, never more than the executor's concurrency at once, and a throwing executor is that task's internal_error", async () => {
    const runsDir = join(tempDir("handoff-batch-pool"), "runs");
    const executor = new FakeExecutor(2, async (spec) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (spec.id === "t3") throw new Error("boom");
      return recordWithoutRun(spec, "invalid_task", "fake");
    });
    const lines: string[] = [];
    const record = await runBatch(specs(5), [], executor, {
      batchId: "b",
      file: "/f",
      runsDir,
      defaults: {},
      onProgress: (progress) => lines.push(progressLine(progress)),
    });
    expect(executor.started).toEqual(["t1", "t2", "t3", "t4", "t5"]);
    expect(executor.maxRunning).toBe(2);
    expect(record.tasks.find((task) => task.id === "t3")).toMatchObject({
      outcome: "internal_error",
      summary: expect.stringContaining("boom"),
    });
    expect(record.exitCode).toBe(70);
    expect(lines[0]).toBe("[batch] 0/5 done, 0 running");
    expect(lines.at(-1)).toBe("[batch] 5/5 done, 0 running: 4 invalid_task, 1 internal_error");
    expect(BatchRecord.parse(JSON.parse(readFileSync(join(runsDir, "b", "batch.json"), "utf8")))).toEqual(record);
  });

  test("a batch.json that cannot be written (a full disk, a directory in its place) is named in the record it returns, never a throw that loses the summary; junit.xml is still written", async () => {
    const runsDir = join(tempDir("handoff-batch-pool"), "runs");
    const executor = new FakeExecutor(1, async (spec) => {
      mkdirSync(join(runsDir, "b", "batch.json"), { recursive: true });
      return recordWithoutRun(spec, "invalid_task", "fake");
    });
    const record = await runBatch(specs(1), [], executor, { batchId: "b", file: "/f", runsDir, defaults: {} });
    expect(record.unwritten).toEqual([{ file: join(runsDir, "b", "batch.json"), message: expect.stringMatching(/^E/) }]);
    expect(record.tasks).toHaveLength(1);
    expect(junitOf(readFileSync(join(runsDir, "b", "junit.xml"), "utf8"))).toMatchObject({ "@_tests": "1", "@_errors": "1" });
    expect(readdirSync(join(runsDir, "b")).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  test("an abort records every task not yet handed to the executor as not_started", async () => {
    const controller = new AbortController();
    const executor = new FakeExecutor(1, async (spec, context) => {
      if (spec.id === "t2") controller.abort();
      return recordWithoutRun(spec, context.signal.aborted ? "not_started" : "invalid_task", "fake");
    });
    const record = await runBatch(specs(4), [], executor, {
      batchId: "b",
      file: "/f",
      runsDir: join(tempDir("handoff-batch-pool"), "runs"),
      defaults: {},
      signal: controller.signal,
    });
    expect(executor.started).toEqual(["t1", "t2"]);
    expect(record.tasks.map((task) => task.outcome)).toEqual(["invalid_task", "not_started", "not_started", "not_started"]);
    expect(record).toMatchObject({ interrupted: true, exitCode: 130 });
  });

  test("listeners a task leaves on its signal do not pile up on the batch's (no MaxListenersExceededWarning past ten tasks)", async () => {
    const controller = new AbortController();
    const executor = new FakeExecutor(2, async (spec, context) => {
      context.signal.addEventListener("abort", () => {}); // as a run does, never removed
      return recordWithoutRun(spec, "invalid_task", "fake");
    });
    await runBatch(specs(12), [], executor, {
      batchId: "b",
      file: "/f",
      runsDir: join(tempDir("handoff-batch-pool"), "runs"),
      defaults: {},
      signal: controller.signal,
    });
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  test("the local executor records a run's refusal of its input (a repository that does not exist) as invalid_task with the run's message", async () => {
    const root = tempDir("handoff-batch-local");
    const spec: TaskSpec = { id: "t", line: 1, repo: join(root, "missing"), fields: { task: "t", backend: "command", agentCmd: "true" } };
    const record = await runBatch([spec], [], new LocalExecutor({ runsDir: join(root, "runs"), jobs: 1 }), {
      batchId: "b",
      file: "/f",
      runsDir: join(root, "runs"),
      defaults: { yes: true, noVerify: true, sandbox: "none" },
    });
    expect(record.tasks[0]).toMatchObject({ outcome: "invalid_task", runDir: null, summary: expect.stringContaining("missing") });
  });
});
