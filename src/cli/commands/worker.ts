import { UsageError } from "../../lib/errors.js";
import { parseRedisUrl, redisRetryMs } from "../../queue/redis-url.js";
import { DEFAULT_QUEUE, checkQueueName } from "../../queue/queue-name.js";
import { loadQueue } from "../../queue/load-queue.js";
import { checkEnvNames, checkSandboxMode } from "../../run/options.js";
import { WORKER_OPTIONS } from "../option-tables.js";
import { parseOptions } from "../parse-options.js";
import { onInterrupt } from "../interrupts.js";
import { seconds, wholeNumber } from "../../settings/option-values.js";
import { defaultRunsDir } from "../../run-dir/default-places.js";

const USAGE = "usage: handoff worker --redis URL [--queue NAME] [--concurrency N] [--runs-dir DIR] [--grace SECONDS] [...]";
const DEFAULT_GRACE_SECONDS = 300;
const DEFAULT_LOCK_SECONDS = 30;

/**
 * `handoff worker`: takes task jobs from the queue until SIGTERM/SIGINT (then lets running jobs finish, up to --grace,
 * and exits 0; a second signal kills what runs and exits 130). Progress goes to stderr, one line per event.
 */
export async function command(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseOptions("worker", args, WORKER_OPTIONS);
  if (positionals.length > 0) throw new UsageError("bad_arguments", USAGE);
  if (values.redis === undefined) throw new UsageError("no_redis", `--redis URL is required (${USAGE})`);
  const sandbox = values.sandbox === undefined ? undefined : checkSandboxMode(values.sandbox);
  // Checked here, not by each job's run: a bad name would make every task this worker takes invalid.
  checkEnvNames(values.env ?? []);
  const queue = checkQueueName(values.queue ?? DEFAULT_QUEUE);
  const options = {
    redis: parseRedisUrl(values.redis),
    queue,
    concurrency: wholeNumber("--concurrency", values.concurrency) ?? 1,
    runsDir: values["runs-dir"] ?? defaultRunsDir(),
    graceMs: seconds("--grace", values.grace) ?? DEFAULT_GRACE_SECONDS * 1000,
    sandbox,
    workspacesDir: values["workspace-dir"],
    cliHomesDir: values["cli-home-dir"],
    env: values.env,
    lockMs: seconds("$HANDOFF_QUEUE_LOCK_SECONDS", process.env.HANDOFF_QUEUE_LOCK_SECONDS || undefined) ?? DEFAULT_LOCK_SECONDS * 1000,
    retryMs: redisRetryMs(),
    log: (line: string) => process.stderr.write(`handoff worker: ${line}\n`),
  };
  const { runWorker } = await loadQueue();
  const stop = new AbortController();
  const stopHandling = onInterrupt(() => {
    options.log("stop asked: taking no new jobs (again to kill the running ones)");
    stop.abort();
  });
  try {
    await runWorker(options, stop.signal);
    options.log("stopped");
    return 0;
  } finally {
    stopHandling();
  }
}
