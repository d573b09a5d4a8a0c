import { settingsOf } from "../settings/command-line.js";
import { type OptionTableOf, optionTable } from "../settings/option-table.js";
import type { OptionRow } from "../settings/setting.js";
import { REPO_SETTING } from "../settings/repo-setting.js";

// The option tables of the commands that take run settings, derived from the settings table (src/settings/settings.ts)
// plus each command's own options; the other commands' few options are in their own files.

export const RUN_OPTIONS = optionTable(settingsOf("run"));
/** The `run` options `handoff resume` takes again (the rest come from the earlier run's request.json). */
export const RESUME_OPTIONS = optionTable(settingsOf("resume"));

/** `handoff mcp`'s own option: the repositories a tool call may name besides the server's. */
export const MCP_OWN_ROWS = [
  {
    flag: "allow-repo",
    kind: "list",
    meta: "DIR",
    help: { run: ["a tool call may name a repository inside DIR besides the server's (repeatable)"] },
  },
] as const satisfies readonly OptionRow[];

/** The `run` options that name one run, never every run of a server: not `handoff mcp`'s. */
const PER_RUN_FLAGS: readonly string[] = ["task-file", "json", "run-id"];

/** `handoff mcp`'s options: the `run` options, as the settings every delegated task shares, and its own. */
export const MCP_ROWS = [...settingsOf("run").filter((row) => !PER_RUN_FLAGS.includes(row.flag)), ...MCP_OWN_ROWS];
export const MCP_OPTIONS = optionTable(MCP_ROWS);

/** The most tasks one handoff runs at once: each is an agent, a clone and a verification. */
export const MAX_JOBS = 64;

/** The options of `batch` and `worker` that are not run settings: how the tasks are spread, and where they are recorded. */
const QUEUE_ROWS = [
  {
    flag: "redis",
    kind: "value",
    meta: "URL",
    help: {
      batch: [
        "run the tasks on the workers that share this Redis (handoff worker) instead of here; the",
        "progress, summary, batch.json and junit.xml are the same; run directories stay on the workers",
      ],
      worker: ["redis://[user:password@]host:port[/db] or rediss://… (TLS); required"],
    },
  },
  {
    flag: "queue",
    kind: "value",
    meta: "NAME",
    help: { batch: ["the workers' queue (default handoff)"], worker: ["the queue (default handoff)"] },
  },
] as const satisfies readonly OptionRow[];

const BATCH_OWN_ROWS = [
  { ...REPO_SETTING, help: { batch: ['the repository of a line without "repo", and what a relative one is in (default: .)'] } },
  { flag: "jobs", short: "j", kind: "value", meta: "N", help: { batch: [`how many tasks run at once (default 1, at most ${MAX_JOBS})`] } },
  { flag: "junit", kind: "value", meta: "PATH", help: { batch: ["also write the batch's JUnit XML to PATH"] } },
  { flag: "batch-id", kind: "value", meta: "ID", help: { batch: ["name of the batch directory (default: batch-<time>-<random>)"] } },
  ...QUEUE_ROWS,
] as const satisfies readonly OptionRow[];

const WORKER_OWN_ROWS = [
  ...QUEUE_ROWS,
  { flag: "concurrency", kind: "value", meta: "N", help: { worker: ["jobs run at once (default 1)"] } },
  { flag: "grace", kind: "value", meta: "SEC", help: { worker: ["how long running jobs may finish after a stop (default 300)"] } },
] as const satisfies readonly OptionRow[];

/** Rows in the order a command's help lists them. */
function inOrder<R extends OptionRow>(rows: readonly R[], flags: readonly R["flag"][]): readonly R[] {
  return [...rows].sort((a, b) => flags.indexOf(a.flag) - flags.indexOf(b.flag));
}

/** `batch`'s and `enqueue`'s options, as `handoff batch --help` lists them. */
export const BATCH_ROWS = inOrder(
  [...settingsOf("batch"), ...BATCH_OWN_ROWS],
  [
    "repo",
    "jobs",
    "yes",
    "json",
    "junit",
    "runs-dir",
    "batch-id",
    "no-verify",
    "sandbox",
    "env",
    "workspace-dir",
    "cli-home-dir",
    "redis",
    "queue",
  ],
);
export const BATCH_OPTIONS: OptionTableOf<(typeof BATCH_ROWS)[number]> = optionTable(BATCH_ROWS);

/** `worker`'s options, as `handoff worker --help` lists them. */
export const WORKER_ROWS = inOrder(
  [...settingsOf("worker"), ...WORKER_OWN_ROWS.filter((row) => "worker" in row.help)],
  ["redis", "queue", "concurrency", "runs-dir", "grace", "sandbox", "workspace-dir", "cli-home-dir", "env"],
);
export const WORKER_OPTIONS: OptionTableOf<(typeof WORKER_ROWS)[number]> = optionTable(WORKER_ROWS);
