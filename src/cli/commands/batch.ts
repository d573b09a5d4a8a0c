import { existsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { askOnTerminal, canAskOnTerminal } from "../../approval/terminal-prompt.js";
import { ApprovalRequiredError, UsageError } from "../../lib/errors.js";
import { type BatchFile, readBatchFile } from "../../many/batch-file.js";
import type { BatchRecord } from "../../many/batch-record.js";
import { batchPaths, runBatch } from "../../many/batch.js";
import { progressWriter } from "../../many/batch-progress.js";
import { writeFileAtomically } from "../../many/atomic-file.js";
import { renderBatchJunit } from "../../many/junit.js";
import { LocalExecutor } from "../../many/local-executor.js";
import type { TaskExecutor } from "../../many/task-executor.js";
import { escapeControls } from "../../vocabulary/display.js";
import { checkEnvNames, checkSandboxMode } from "../../run/options.js";
import { generateRunId, isSafeRunId } from "../../run-dir/run-dir.js";
import { BATCH_OPTIONS, MAX_JOBS } from "../option-tables.js";
import { parseOptions } from "../parse-options.js";
import { batchExitCode } from "../../many/outcome.js";
import { onInterrupt } from "../interrupts.js";
import { type RedisTarget, parseRedisUrl } from "../../queue/redis-url.js";
import { DEFAULT_QUEUE, checkQueueName } from "../../queue/queue-name.js";
import { loadQueue } from "../../queue/load-queue.js";
import { defaultRunsDir } from "../../run-dir/default-places.js";

const BATCH_USAGE =
  "usage: handoff batch FILE [--jobs N | --redis URL] [--json] [--junit PATH] [--runs-dir DIR] [--batch-id ID] [--yes] ...";

/**
 * `handoff batch FILE`: every task of a JSON Lines file, `--jobs` at once, each through the four gates in its own run
 * directory; a progress line on stderr, the summary on stdout, batch.json and junit.xml in the batch directory.
 * Returns the batch's exit code: 0 only when every task verified, else the most severe outcome's.
 */
export async function batchOrEnqueue(args: readonly string[], command: "batch" | "enqueue" = "batch"): Promise<number> {
  const { values, positionals } = parseOptions(command, args, BATCH_OPTIONS);
  if (positionals.length !== 1) throw new UsageError("bad_arguments", BATCH_USAGE.replace("batch", command));
  if (command === "enqueue" && values.redis === undefined)
    throw new UsageError("no_redis", "handoff enqueue submits to the workers' queue: --redis URL is required");
  if (values.redis !== undefined && values.jobs !== undefined)
    throw new UsageError("jobs_with_redis", "--jobs is for a batch run here; with --redis, each worker's --concurrency decides");
  const queue = queueOption(values.redis, values.queue);
  const workerChoices = (["sandbox", "env", "workspace-dir", "cli-home-dir"] as const).filter((name) => values[name] !== undefined);
  if (queue && workerChoices.length > 0)
    throw new UsageError(
      "worker_option_with_redis",
      `--${workerChoices[0]} is the worker's to choose with --redis (handoff worker --${workerChoices[0]}): a job cannot pass it`,
    );
  const jobs = jobsOption(values.jobs);
  const batchId = values["batch-id"] ?? `batch-${generateRunId()}`;
  if (!isSafeRunId(batchId))
    throw new UsageError(
      "bad_batch_id",
      `--batch-id is one path segment of letters, digits, '.', '_' or '-' (at most 128), not '${escapeControls(batchId.slice(0, 100))}'`,
    );
  const sandbox = values.sandbox === undefined ? undefined : checkSandboxMode(values.sandbox);
  checkEnvNames(values.env ?? []);
  const junitCopy = values.junit === undefined ? null : resolve(values.junit);
  if (junitCopy !== null && !(existsSync(dirname(junitCopy)) && statSync(dirname(junitCopy)).isDirectory()))
    throw new UsageError("bad_directory", `--junit ${escapeControls(values.junit!)}: ${dirname(junitCopy)} is not a directory`);
  const runsDir = resolve(values["runs-dir"] ?? defaultRunsDir());

  const batch = readBatchFile(positionals[0]!, process.cwd(), values.repo ?? process.cwd());
  if (!values.yes) {
    // One question for the whole batch; every task then runs approved, as with --yes.
    if (!canAskOnTerminal(batch.file === "-")) throw new ApprovalRequiredError();
    if (!(await askOnTerminal(batchQuestion(batch)))) {
      process.stderr.write("handoff: not approved; no task was started\n");
      return 130;
    }
  }

  // Here, --jobs at once; or on the workers that share the Redis (a QueueUnavailableError exits 69 before anything is written).
  const executor: TaskExecutor = queue
    ? // Loaded only here: BullMQ and its Redis client (optional peer dependencies) cost every other command a fifth of a second.
      await (await loadQueue()).queueExecutor({
        redis: queue.target,
        queue: queue.name,
        tasks: batch.specs.length,
      })
    : new LocalExecutor({ runsDir, jobs });
  const controller = new AbortController();
  const stopHandling = onInterrupt(() => {
    process.stderr.write(
      `${process.stderr.isTTY ? "\n" : ""}handoff: interrupted; cancelling the running tasks and writing their run directories and batch.json (again to force)\n`,
    );
    controller.abort();
  });
  const progress = progressWriter();
  try {
    const record = await runBatch(batch.specs, batch.invalid, executor, {
      batchId,
      file: batch.file,
      runsDir,
      defaults: {
        yes: true,
        noVerify: values["no-verify"],
        sandbox,
        env: values.env,
        workspacesDir: values["workspace-dir"],
        cliHomesDir: values["cli-home-dir"],
      },
      signal: controller.signal,
      jobs: queue ? null : jobs,
      via: queue ? { redis: queue.target.shown, queue: queue.name } : "local",
      onProgress: (state) => progress.update(state),
    });
    progress.finish();
    process.stdout.write(values.json ? `${JSON.stringify(record, null, 2)}\n` : renderSummary(record, runsDir));
    if (junitCopy !== null) {
      try {
        writeFileAtomically(junitCopy, renderBatchJunit(record));
      } catch (error) {
        record.unwritten.push({ file: junitCopy, message: (error as NodeJS.ErrnoException).code ?? (error as Error).message });
      }
    }
    for (const file of record.unwritten)
      process.stderr.write(`handoff: could not write ${escapeControls(file.file)}: ${escapeControls(file.message)}\n`);
    // A record that could not be written is an artifact error of the batch's own (4), unless its tasks' is worse.
    return record.unwritten.length > 0 ? batchExitCode([record.worst, "policy_or_artifact_error"]) : record.exitCode;
  } finally {
    progress.finish();
    stopHandling();
    await executor.close();
  }
}

/** `--redis URL` (checked, its password kept out of every record) and `--queue NAME`; null for a batch run here. */
function queueOption(redis: string | undefined, queue: string | undefined): { target: RedisTarget; name: string } | null {
  if (redis === undefined) {
    if (queue !== undefined) throw new UsageError("queue_without_redis", "--queue names the workers' queue: give --redis URL too");
    return null;
  }
  return { target: parseRedisUrl(redis), name: checkQueueName(queue ?? DEFAULT_QUEUE) };
}

function jobsOption(value: string | undefined): number {
  if (value === undefined) return 1;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1 || number > MAX_JOBS)
    throw new UsageError("bad_number", `--jobs takes a whole number from 1 to ${MAX_JOBS}, not '${escapeControls(value.slice(0, 100))}'`);
  return number;
}

function batchQuestion(batch: BatchFile): string {
  const repos = [...new Set(batch.specs.map((spec) => spec.repo))];
  const shown = repos.slice(0, 3).map(escapeControls).join(", ") + (repos.length > 3 ? `, … (${repos.length} in all)` : "");
  return `Let agents edit disposable clones for ${batch.specs.length} task(s) of ${escapeControls(batch.file)} (${shown})? (the repositories themselves stay read-only)`;
}

/** Without --json: one row per task (id, outcome, its run directory or why it has none), then where the records are. */
function renderSummary(record: BatchRecord, runsDir: string): string {
  const width = Math.min(40, Math.max(2, ...record.tasks.map((task) => task.id.length)));
  const rows = record.tasks.map(
    (task) => `${escapeControls(task.id).padEnd(width)}  ${task.outcome.padEnd(25)}  ${escapeControls(task.runDir ?? task.summary)}`,
  );
  const paths = batchPaths(runsDir, record.batchId);
  return [
    `${"id".padEnd(width)}  ${"outcome".padEnd(25)}  run directory`,
    ...rows,
    `batch ${record.batchId}: ${record.worst}, exit ${record.exitCode}${record.interrupted ? " (interrupted)" : ""}`,
    `batch.json: ${paths.batchJson}`,
    `junit.xml: ${paths.junitXml}`,
    "",
  ].join("\n");
}

/** `handoff batch FILE`. */
export async function command(args: readonly string[]): Promise<number> {
  return await batchOrEnqueue(args, "batch");
}
