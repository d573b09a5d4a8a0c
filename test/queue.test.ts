import { type ChildProcess, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Queue } from "bullmq";
import { describe, expect, onTestFinished, test } from "vitest";
import { QueueUnavailableError } from "../src/lib/errors.js";
import { BatchRecord, type TaskRecord } from "../src/many/batch-record.js";
import { type TaskSpec, taskSpec } from "../src/many/batch-task.js";
import { BatchTask } from "../src/settings/file-schema.js";
import type { TaskExecutor } from "../src/many/task-executor.js";
import { parseRedisUrl } from "../src/queue/redis-url.js";
import { queueExecutor } from "../src/queue/queue-executor.js";
import { freeRunId } from "../src/queue/worker.js";
import { type CliOutcome, HANDOFF_BIN, expectUsageError, runCli, startCli } from "./helpers/cli.js";
import { type TestRedis, freePort, redisServer, startRedis } from "./helpers/redis.js";
import { makeRepo, tempDir } from "./helpers/repo.js";

// The queue end to end: a real redis-server, real `handoff worker` processes (bin/handoff.js over dist/: run
// `npm run build` first), the command backend on real repositories. Workers hand a dead worker's job on after their
// lock lapses: 3 s here, so a crash costs seconds, not the default 30.
const LOCK_SECONDS = "3";
const WORKS = "sleep 1; echo done > out.txt";
const DOES_NOTHING = "sleep 1";

interface TestWorker {
  readonly child: ChildProcess;
  readonly done: Promise<CliOutcome>;
  readonly runsDir: string;
  stderr(): string;
  /** Resolves with the first match of `pattern` in the worker's stderr (waiting for it to appear). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

function startWorker(
  redis: TestRedis,
  queue: string,
  runsDir: string,
  extra: readonly string[] = ["--sandbox", "none"],
  env: Record<string, string> = {},
): TestWorker {
  const { child, done } = startCli(["worker", "--redis", redis.url, "--queue", queue, "--runs-dir", runsDir, ...extra], {
    env: { HANDOFF_QUEUE_LOCK_SECONDS: LOCK_SECONDS, ...env },
  });
  let stderr = "";
  child.stderr!.on("data", (text: string) => (stderr += text));
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await done.catch(() => {});
  });
  return {
    child,
    done,
    runsDir,
    stderr: () => stderr,
    async waitFor(pattern, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = stderr.match(pattern);
        if (match) return match;
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`worker stderr never matched ${pattern}:\n${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

async function withRedis(): Promise<TestRedis> {
  const redis = await startRedis();
  onTestFinished(() => redis.stop());
  return redis;
}

async function executorFor(redis: TestRedis, queue: string, tasks: number): Promise<TaskExecutor> {
  const executor = await queueExecutor({ redis: redis.url, queue, tasks, pollMs: 500 });
  onTestFinished(() => executor.close());
  return executor;
}

function specOf(repo: string, id: string, line: number, agentCmd: string): TaskSpec {
  return taskSpec(BatchTask.parse({ task: `task ${id}`, repo, id, backend: "command", agentCmd, verify: ["test -f out.txt"] }), line);
}

function runAll(executor: TaskExecutor, batchId: string, specs: readonly TaskSpec[], signal = new AbortController().signal) {
  const started: string[] = [];
  const records = Promise.all(
    specs.map((spec) => executor.run(spec, { batchId, defaults: { yes: true }, signal, started: () => started.push(spec.id) })),
  );
  return { started, records };
}

function resultOf(runDir: string): Record<string, any> {
  return JSON.parse(readFileSync(join(runDir, "result.json"), "utf8"));
}

/** Resolves once the run's checkpoint says its agent phase began. */
async function agentPhase(runDir: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      if (JSON.parse(readFileSync(join(runDir, "checkpoint.json"), "utf8")).phase === "agent") return;
    } catch {
      // not written yet
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${runDir} never reached its agent phase`);
}

/** Each record names a run directory on its worker whose result.json says what the record says. */
function expectRecordsMatchTheirRuns(records: readonly TaskRecord[]): void {
  for (const record of records) {
    expect(record.runDir, record.id).not.toBeNull();
    const result = resultOf(record.runDir!);
    expect(result.terminalReason, record.id).toBe(record.outcome);
    expect(result.runId).toBe(record.runId);
  }
}

/** The batch's records, or a failure that shows every worker's log when they do not all come within `ms`. */
async function recordsWithin(records: Promise<TaskRecord[]>, workers: readonly TestWorker[], ms = 90_000): Promise<TaskRecord[]> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `the batch did not end within ${ms / 1000} s; the workers said:\n${workers.map((worker) => worker.stderr()).join("\n---\n")}`,
          ),
        ),
      ms,
    );
  });
  try {
    return await Promise.race([records, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe.skipIf(!redisServer.ok)("handoff worker on a real Redis", () => {
  test("3 workers, 20 tasks, one worker killed with -9 mid-job: every task ends with exactly one record and verdict, and the killed worker's half-run is swept to runner_crashed when it starts again", async () => {
    const redis = await withRedis();
    const repo = await makeRepo({ "README.md": "queue\n" });
    const base = tempDir("handoff-workers");
    const workers = [1, 2, 3].map((n) => startWorker(redis, "q20", join(base, `w${n}`)));
    const executor = await executorFor(redis, "q20", 20);
    const specs = Array.from({ length: 20 }, (_, i) => specOf(repo, `t${i + 1}`, i + 1, i % 5 === 4 ? DOES_NOTHING : WORKS));
    const batch = runAll(executor, "b20", specs);

    const [, killedJob] = await workers[0]!.waitFor(/took job (b20\.t\d+)/);
    // Killed once its run is under way (its run directory made, its agent sleeping), not between taking and starting.
    await agentPhase(join(workers[0]!.runsDir, "b20", "runs", killedJob!.slice("b20.".length)));
    workers[0]!.child.kill("SIGKILL");
    const records = await recordsWithin(batch.records, workers, 120_000);

    expect(records.map((record) => record.id)).toEqual(specs.map((spec) => spec.id));
    expect(new Set(records.map((record) => record.id)).size).toBe(20);
    const logs = () => workers.map((worker) => worker.stderr()).join("");
    for (const [i, record] of records.entries())
      expect(record.outcome, `${record.id}: ${record.summary}\n${logs()}`).toBe(i % 5 === 4 ? "no_changes" : "verified");
    expectRecordsMatchTheirRuns(records);
    expect(new Set(batch.started).size).toBe(20);
    // The killed worker's job was handed on and ended on a live worker.
    const handedOn = records.find((record) => `b20.${record.id}` === killedJob)!;
    expect(handedOn.worker).not.toMatch(new RegExp(`:${workers[0]!.child.pid}$`));

    const restarted = startWorker(redis, "q20", workers[0]!.runsDir);
    const [, sweptDir] = await restarted.waitFor(/swept crashed run (\S+): user_cancelled \(runner_crashed\)/);
    expect(sweptDir).toBe(join(workers[0]!.runsDir, "b20", "runs", killedJob!.slice("b20.".length)));
    expect(resultOf(sweptDir!)).toMatchObject({ terminalReason: "user_cancelled", detail: "runner_crashed" });
    for (const worker of [workers[1]!, workers[2]!, restarted]) worker.child.kill("SIGTERM");
    for (const worker of [workers[1]!, workers[2]!, restarted]) expect((await worker.done).code, worker.stderr()).toBe(0);
  }, 150_000);

  test("handoff batch FILE --jobs 4 here and handoff batch FILE --redis URL on two workers give the same summary; enqueue is the same as batch --redis", async () => {
    const redis = await withRedis();
    const repo = await makeRepo({ "README.md": "queue\n" });
    const base = tempDir("handoff-batch-both");
    const lines = [
      { id: "works", agentCmd: WORKS },
      { id: "idle", agentCmd: DOES_NOTHING },
      { id: "fails", agentCmd: "sleep 1; echo no > other.txt" },
      { id: "works-too", agentCmd: WORKS },
      { id: "crashes", agentCmd: "exit 1" },
    ].map((line) => JSON.stringify({ ...line, repo, task: `task ${line.id}`, verify: ["test -f out.txt"] }));
    const file = join(base, "tasks.jsonl");
    writeFileSync(file, `${[...lines, '{"id": "typo", "task": "x", "verfy": []}'].join("\n")}\n`);

    const here = await runCli(["batch", file, "--jobs", "4", "--yes", "--json", "--sandbox", "none", "--runs-dir", join(base, "here")]);
    const workers = [1, 2].map((n) => startWorker(redis, "qs", join(base, `w${n}`)));
    const queued = await runCli([
      "batch",
      file,
      "--redis",
      redis.url,
      "--queue",
      "qs",
      "--yes",
      "--json",
      "--runs-dir",
      join(base, "submitted"),
    ]);
    const enqueued = await runCli([
      "enqueue",
      file,
      "--redis",
      redis.url,
      "--queue",
      "qs",
      "--batch-id",
      "again",
      "--yes",
      "--json",
      "--runs-dir",
      join(base, "submitted"),
    ]);

    const summary = (outcome: CliOutcome) => {
      const record = BatchRecord.parse(JSON.parse(outcome.stdout));
      return {
        code: outcome.code,
        counts: record.counts,
        worst: record.worst,
        exitCode: record.exitCode,
        tasks: record.tasks.map((task) => [task.id, task.outcome, task.exitCode]),
      };
    };
    expect(summary(here).tasks).toEqual([
      ["works", "verified", 0],
      ["idle", "no_changes", 3],
      ["fails", "verification_failed", 1],
      ["works-too", "verified", 0],
      ["crashes", "external_agent_error", 6],
      ["typo", "invalid_task", 2],
    ]);
    expect(summary(queued), queued.stderr).toEqual(summary(here));
    expect(summary(enqueued), enqueued.stderr).toEqual(summary(here));
    const queuedRecord = BatchRecord.parse(JSON.parse(queued.stdout));
    expect(queuedRecord.via).toEqual({ redis: redis.url, queue: "qs" });
    // Each queued task's run directory is on the worker that ran it, and says what the record says.
    const ran = queuedRecord.tasks.filter((task) => task.outcome !== "invalid_task");
    for (const task of ran)
      expect(task.runDir!.startsWith(join(base, "w1")) || task.runDir!.startsWith(join(base, "w2")), task.runDir!).toBe(true);
    expectRecordsMatchTheirRuns(ran);
    expect(queued.stderr).toMatch(/\[batch\] 6\/6 done, 0 running: 2 verified/);
    for (const worker of workers) worker.child.kill("SIGTERM");
    for (const worker of workers) expect((await worker.done).code, worker.stderr()).toBe(0);
  }, 180_000);

  test("a Redis restart mid-batch (SHUTDOWN with save, started again on the same port and dir): the batch completes, each task once", async () => {
    const redis = await withRedis();
    const repo = await makeRepo({ "README.md": "queue\n" });
    const base = tempDir("handoff-workers");
    const workers = [1, 2].map((n) => startWorker(redis, "qr", join(base, `w${n}`)));
    const executor = await executorFor(redis, "qr", 6);
    const specs = Array.from({ length: 6 }, (_, i) => specOf(repo, `t${i + 1}`, i + 1, WORKS));
    const batch = runAll(executor, "br", specs);

    await workers[0]!.waitFor(/took job/);
    await redis.restart();
    const records = await recordsWithin(batch.records, workers);

    const logs = () => workers.map((worker) => worker.stderr()).join("\n---\n");
    for (const record of records) expect(record.outcome, `${record.id}: ${record.summary}\n${logs()}`).toBe("verified");
    expectRecordsMatchTheirRuns(records);
    for (const worker of workers) worker.child.kill("SIGTERM");
    for (const worker of workers) expect((await worker.done).code, worker.stderr()).toBe(0);
  }, 120_000);

  test("SIGTERM to a worker while its job runs: the job finishes verified, then the worker exits 0; the same batch submitted again gets that record, not a second run", async () => {
    const redis = await withRedis();
    const repo = await makeRepo({ "README.md": "queue\n" });
    const worker = startWorker(redis, "qt", join(tempDir("handoff-workers"), "w"));
    const executor = await executorFor(redis, "qt", 1);
    const spec = specOf(repo, "slow", 1, `sleep 1; ${WORKS}`);
    const batch = runAll(executor, "bt", [spec]);

    await worker.waitFor(/took job bt\.slow/);
    worker.child.kill("SIGTERM");
    const [record] = await batch.records;
    const outcome = await worker.done;

    expect(outcome.code, outcome.stderr).toBe(0);
    expect(record).toMatchObject({ id: "slow", outcome: "verified", runDir: join(worker.runsDir, "bt", "runs", "slow") });
    expect(worker.stderr()).toMatch(/stopping: no new jobs; waiting up to 300 s for 1 running job/);
    const [again] = await runAll(executor, "bt", [spec]).records;
    expect(again).toEqual(record);
  }, 60_000);

  test("SIGTERM with a short --grace: the running job is cancelled (its run here ends user_cancelled, complete) and handed back to the queue, where another worker ends it", async () => {
    const redis = await withRedis();
    const repo = await makeRepo({ "README.md": "queue\n" });
    const base = tempDir("handoff-workers");
    const first = startWorker(redis, "qg", join(base, "w1"), ["--sandbox", "none", "--grace", "1"]);
    const executor = await executorFor(redis, "qg", 1);
    const batch = runAll(executor, "bg", [specOf(repo, "long", 1, `sleep 3; ${WORKS}`)]);

    await first.waitFor(/took job bg\.long/);
    first.child.kill("SIGTERM");
    expect((await first.done).code, first.stderr()).toBe(0);
    expect(first.stderr()).toMatch(/returned job bg\.long to the queue/);
    expect(resultOf(join(first.runsDir, "bg", "runs", "long")).terminalReason).toBe("user_cancelled");

    const second = startWorker(redis, "qg", join(base, "w2"));
    const [record] = await batch.records;
    expect(record).toMatchObject({ outcome: "verified", runDir: join(second.runsDir, "bg", "runs", "long") });
    expect(record!.worker).toMatch(new RegExp(`:${second.child.pid}$`));
    second.child.kill("SIGTERM");
    expect((await second.done).code).toBe(0);
  }, 60_000);

  test("an interrupted batch: the running task is cancelled on its worker (user_cancelled), the waiting one is removed from the queue (not_started)", async () => {
    const redis = await withRedis();
    const repo = await makeRepo({ "README.md": "queue\n" });
    const worker = startWorker(redis, "qi", join(tempDir("handoff-workers"), "w"));
    const executor = await executorFor(redis, "qi", 2);
    const interrupt = new AbortController();
    const batch = runAll(
      executor,
      "bi",
      [specOf(repo, "a", 1, `sleep 30; ${WORKS}`), specOf(repo, "b", 2, `sleep 30; ${WORKS}`)],
      interrupt.signal,
    );

    const [, taken] = await worker.waitFor(/took job bi\.(a|b)/);
    interrupt.abort();
    const records = await batch.records;
    const ran = records.find((record) => record.id === taken)!;
    const waited = records.find((record) => record.id !== taken)!;

    expect(ran.outcome).toBe("user_cancelled");
    expect(resultOf(ran.runDir!).terminalReason).toBe("user_cancelled");
    expect(waited).toMatchObject({ outcome: "not_started", runDir: null });
    const queue = new Queue("qi", { connection: parseRedisUrl(redis.url).options });
    onTestFinished(() => queue.close());
    expect(await queue.getJob(`bi.${waited.id}`)).toBeUndefined();
    worker.child.kill("SIGTERM");
    expect((await worker.done).code).toBe(0);
  }, 60_000);

  test("a job cannot switch the sandbox off: a worker without --sandbox runs every job with its own default (auto), whatever the job asks", async () => {
    const redis = await withRedis();
    const repo = await makeRepo({ "README.md": "queue\n" });
    const worker = startWorker(redis, "qsb", join(tempDir("handoff-workers"), "w"), []);
    const executor = await executorFor(redis, "qsb", 1);
    const [record] = await executor
      .run(specOf(repo, "t1", 1, WORKS), {
        batchId: "bsb",
        defaults: { yes: true, sandbox: "none" },
        signal: new AbortController().signal,
        started: () => {},
      })
      .then((one) => [one]);
    expect(record!.outcome, record!.summary).toBe("verified");
    expect(resultOf(record!.runDir!).containment.requested).toBe("auto");
    worker.child.kill("SIGTERM");
    expect((await worker.done).code, worker.stderr()).toBe(0);
  }, 60_000);

  test("a job that is not a handoff task fails at once with the reason, and is not retried", async () => {
    const redis = await withRedis();
    const worker = startWorker(redis, "qb", join(tempDir("handoff-workers"), "w"));
    const queue = new Queue("qb", { connection: parseRedisUrl(redis.url).options });
    onTestFinished(() => queue.close());
    const job = await queue.add("task", { schemaVersion: 1, batchId: "../x" }, { attempts: 5 });

    await worker.waitFor(/refused job/);
    for (let i = 0; i < 100 && (await job.getState()) !== "failed"; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    const failed = (await queue.getJob(job.id!))!;
    expect(await failed.getState()).toBe("failed");
    expect(failed.failedReason).toMatch(/not a handoff task job/);
    expect(failed.attemptsMade).toBe(1);
    worker.child.kill("SIGTERM");
    expect((await worker.done).code).toBe(0);
  }, 60_000);

  test("Redis unreachable: the worker and the submitter give up after the retry period with one clear line (exit 69), never showing the password", async () => {
    const port = await freePort();
    const url = `redis://handoff:s3cret-pw@127.0.0.1:${port}`;
    const outcome = await runCli(["worker", "--redis", url], { env: { HANDOFF_REDIS_RETRY_SECONDS: "1" } });
    expect(outcome.code, outcome.stderr).toBe(69);
    expect(
      outcome.stderr
        .trimEnd()
        .split("\n")
        .filter((line) => line.startsWith("handoff: ")),
    ).toEqual([
      expect.stringMatching(new RegExp(`^handoff: cannot reach Redis at redis://handoff@127\\.0\\.0\\.1:${port}: retried for 1 s`)),
    ]);
    expect(outcome.stderr).not.toContain("s3cret");
    const submitting = queueExecutor({ redis: url, retryMs: 500 });
    await expect(submitting).rejects.toBeInstanceOf(QueueUnavailableError);
    await expect(submitting).rejects.not.toThrow(/s3cret/);
  }, 30_000);

  test("a worker started while Redis is down says it waits, then connects when Redis comes back and runs the batch", async () => {
    const redis = await withRedis();
    await redis.shutdown();
    const repo = await makeRepo({ "README.md": "queue\n" });
    const worker = startWorker(redis, "qw", join(tempDir("handoff-workers"), "w"));
    await worker.waitFor(/waiting for Redis at redis:\/\/127\.0\.0\.1:\d+ \(.*\); retrying for \d+ s/);
    await redis.restart();
    await worker.waitFor(/on queue 'qw'/);
    const executor = await executorFor(redis, "qw", 1);
    const [record] = await recordsWithin(runAll(executor, "bw", [specOf(repo, "late", 1, WORKS)]).records, [worker]);
    expect(record, worker.stderr()).toMatchObject({ id: "late", outcome: "verified" });
    worker.child.kill("SIGTERM");
    expect((await worker.done).code, worker.stderr()).toBe(0);
  }, 60_000);

  test("SIGTERM to a worker still waiting for Redis stops it at once with exit 0", async () => {
    const redis = await withRedis();
    await redis.shutdown();
    const worker = startWorker(redis, "qs", join(tempDir("handoff-workers"), "w"));
    await worker.waitFor(/waiting for Redis/);
    worker.child.kill("SIGTERM");
    const outcome = await worker.done;
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stderr).toMatch(/stopping: never connected, no job taken\n.*stopped\n$/);
  }, 30_000);

  test("Redis lost while a worker waits for jobs: it retries, then gives up after the retry period with exit 69", async () => {
    const redis = await withRedis();
    const worker = startWorker(redis, "ql", join(tempDir("handoff-workers"), "w"), [], { HANDOFF_REDIS_RETRY_SECONDS: "2" });
    await worker.waitFor(/on queue 'ql'/);
    await redis.shutdown();
    const outcome = await worker.done;
    expect(outcome.code, outcome.stderr).toBe(69);
    expect(outcome.stderr).toMatch(new RegExp(`handoff: cannot reach Redis at redis://127\\.0\\.0\\.1:${redis.port}: retried for 2 s`));
  }, 30_000);
});

describe("what loads BullMQ", () => {
  // A resolve hook that refuses bullmq and ioredis: whatever imports either fails loudly.
  const refuseQueue = `data:text/javascript,${encodeURIComponent(`
    import { register } from "node:module";
    register("data:text/javascript," + encodeURIComponent(\`export async function resolve(specifier, context, next) {
      if (specifier === "bullmq" || specifier === "ioredis") throw new Error("loaded " + specifier);
      return next(specifier, context);
    }\`));`)}`;
  const node = (args: readonly string[]) => spawnSync(process.execPath, ["--import", refuseQueue, ...args], { encoding: "utf8" });

  test("import 'handoff' and every command but a queued batch and the worker start without it (it costs a fifth of a second)", () => {
    const library = node([
      "--input-type=module",
      "-e",
      `await import(${JSON.stringify(join(import.meta.dirname, "../dist/src/index.js"))});`,
    ]);
    expect(library.status, library.stderr).toBe(0);
    const help = node([HANDOFF_BIN, "batch", "--help"]);
    expect(help.status, help.stderr).toBe(0);
    const worker = node([HANDOFF_BIN, "worker", "--redis", "redis://127.0.0.1:1"]);
    expect(worker.stderr).toMatch(/loaded (bullmq|ioredis)/);
  });
});

describe("handoff worker options", () => {
  test.each([
    ["http://127.0.0.1:6379", /--redis takes a redis:\/\/ or rediss:\/\/ URL/],
    ["not a url", /--redis takes redis:\/\//],
    ["redis://127.0.0.1:6379/abc", /a database is a number/],
  ])("--redis %s is a usage error", async (url, says) => {
    expectUsageError(await runCli(["worker", "--redis", url]), says);
  });

  test("a bad --redis URL with a password is refused without showing it", async () => {
    const outcome = await runCli(["worker", "--redis", "redis://user:hunter2@host:99999"]);
    expectUsageError(outcome, /--redis/);
    expect(outcome.stderr).not.toContain("hunter2");
  });

  test("the Redis URL parsed: host, port, db, user and password go to the connection; what is shown has no password", () => {
    const target = parseRedisUrl("rediss://ops:p%40ss@redis.internal:6380/2");
    expect(target.shown).toBe("rediss://ops@redis.internal:6380/2");
    expect(target.options).toMatchObject({
      host: "redis.internal",
      port: 6380,
      db: 2,
      username: "ops",
      password: "p@ss",
      maxRetriesPerRequest: null,
    });
    expect(target.options.tls).toEqual({ servername: "redis.internal" });
  });

  test("a job run again on the same worker gets a run directory of its own: <task id>-2, -3…", () => {
    const runs = tempDir("handoff-runs");
    expect(freeRunId(runs, "t1")).toBe("t1");
    mkdirSync(join(runs, "t1"));
    mkdirSync(join(runs, "t1-2"));
    expect(freeRunId(runs, "t1")).toBe("t1-3");
  });

  test.each([
    [["enqueue", "tasks.jsonl"], /handoff enqueue submits to the workers' queue: --redis URL is required/],
    [
      ["batch", "tasks.jsonl", "--redis", "redis://127.0.0.1:1", "--jobs", "2"],
      /--jobs is for a batch run here; with --redis, each worker's --concurrency decides/,
    ],
    [["batch", "tasks.jsonl", "--redis", "redis://127.0.0.1:1", "--env", "HOME"], /--env is the worker's to choose with --redis/],
    [["batch", "tasks.jsonl", "--queue", "q"], /--queue names the workers' queue: give --redis URL too/],
    [["batch", "tasks.jsonl", "--redis", "redis://127.0.0.1:1", "--sandbox", "none"], /--sandbox is the worker's to choose with --redis/],
  ])("handoff %j is a usage error before anything is read or submitted", async (args, says) => {
    expectUsageError(await runCli(args, { cwd: tempDir("handoff-batch-args") }), says);
  });

  test.each([
    [["--env", "NOT A NAME"], /--env takes a variable name, not 'NOT A NAME'/],
    [["--sandbox", "off\u001b[2J"], /--sandbox must be auto, bwrap or none, not 'off\\x1b\[2J'/],
  ])("handoff worker %j is a usage error before it connects to anything", async (extra, says) => {
    expectUsageError(await runCli(["worker", "--redis", "redis://127.0.0.1:1", ...extra]), says);
  });

  test("without --redis the worker refuses to start (exit 2) and starts nothing", async () => {
    expectUsageError(await runCli(["worker"]), /--redis URL is required/);
  });
});
