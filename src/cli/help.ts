import { HELP_WIDTH, helpLines, labelledLines, settingsOf } from "../settings/command-line.js";
import { fill } from "../lib/fill.js";
import { KEPT_SESSION_DAYS } from "../repair/kept-home.js";
import { REPORT_FORMATS } from "../review/report-formats.js";
import { type Command, VERSION } from "./command-names.js";
import { BATCH_ROWS, MCP_ROWS, WORKER_ROWS } from "./option-tables.js";

/** Sentences filled to the help's width, as lines. */
function prose(...sentences: readonly string[]): string {
  return `${fill(sentences.join(" "), HELP_WIDTH, HELP_WIDTH).join("\n")}\n`;
}

/** A command of the overview: its usage, and what it does from column 49 (on a line of its own below a long usage). */
function overviewLine(usage: string, what: string): string {
  const head = `  ${usage}`;
  const lines = fill(what, HELP_WIDTH - 49, HELP_WIDTH - 49).map((line) => `${" ".repeat(49)}${line}`);
  if (head.length <= 47) lines[0] = `${head.padEnd(49)}${lines[0]!.trimStart()}`;
  else lines.unshift(head);
  return `${lines.join("\n")}\n`;
}

const OVERVIEW = `handoff ${VERSION}: delegate a coding task to an agent CLI on a disposable clone.
The agent owns its loop; handoff owns the workspace, the patch and the verdict.

Usage:
${[
  overviewLine("handoff run [options] [--] <task text...>", "delegate one task (--task-file FILE, - for stdin)"),
  overviewLine("handoff resume <run-id|run-dir> [options] [--] <instruction...>", "continue a run's kept session as a new run"),
  overviewLine("handoff batch FILE [options]", "every task of a JSON Lines file, --jobs N at once"),
  overviewLine("handoff batch FILE --redis URL [options]", "the same on that Redis's workers (handoff enqueue)"),
  overviewLine("handoff backends [-b NAME [--bin PATH]] [--json]", "the agent CLIs installed here, usable or why not"),
  overviewLine("handoff list [-C DIR | --all] [--limit N] [--json]", "this repository's recent runs (--all: every one)"),
  overviewLine(`handoff show [<run-id|run-dir>] [-C DIR] [--format ${REPORT_FORMATS.join("|")}]`, "a run's report (of a batch: its runs)"),
  overviewLine("handoff apply [<run-id|run-dir>] [-C DIR] [--candidate k]", "stage a verified run's patch in the repository"),
  overviewLine(
    "handoff apply [<run-id|run-dir>] --commit [--branch NAME] [--message TEXT] [--push REMOTE]",
    "or commit it on a new branch at the run's base",
  ),
  overviewLine("handoff gc [--runs-dir DIR] [--all] [--json]", `remove kept sessions past ${KEPT_SESSION_DAYS} days (--all: every one)`),
  overviewLine("handoff cache list|clear [--json]", "the cached base environments (--setup)"),
  overviewLine("handoff worker --redis URL [--concurrency N]", "run tasks from a queue on Redis, until SIGTERM"),
  overviewLine("handoff mcp [run options] [--allow-repo DIR]", "handoff as an MCP server (stdio) for an agent"),
  overviewLine("handoff <command> --help", "that command's own usage, options and exit codes"),
].join("")}  (show and apply without an id: the latest finished run of this repository)
`;

// Each command's option lines are derived from the settings table (src/settings/settings.ts).
const RUN_OPTIONS = `Run options:\n${helpLines("run", settingsOf("run"))}`;

const JSON_ERRORS = 'With --json, an error is also one JSON object on stdout: { "error": { "code", "message" } }.';

const RUN_EXIT_CODES = prose(
  "Exit codes: 0 verified, 1 verification_failed, 2 usage error, 3 no_changes, 4 policy_or_artifact_error,",
  "5 source_repository_changed, 6 external_agent_error, 7 environment_unavailable, 124 timeout, 130 user_cancelled.",
  JSON_ERRORS,
);

const APPLY_EXIT_CODES = prose(
  "handoff apply: 0 applied, 1 refused (says why), 2 usage error (also: no run named and no finished run of the",
  "repository; a batch named), 78 apply --commit without a git identity.",
);

const RESUME_OPTIONS = `Resume options (everything else is the earlier run's, from its request.json):\n${helpLines("resume", settingsOf("resume"))}`;

/** `handoff batch` and `handoff enqueue` take the same options. */
const BATCH_OPTIONS_AND_EXIT_CODES = `Batch options:
${helpLines("batch", BATCH_ROWS)}
${prose(
  "Exit codes: 0 every task verified; otherwise the code of the most severe outcome, in this order:",
  "source_repository_changed 5, user_cancelled 130, not_started 130, internal_error 70, invalid_task 2,",
  "environment_unavailable 7, policy_or_artifact_error 4, external_agent_error 6, timeout 124, verification_failed 1,",
  "no_changes 3. 2 also for a usage error (nothing run): a bad option, an unreadable or empty file, no valid task,",
  "no approval. 69 with --redis: Redis could not be reached for $HANDOFF_REDIS_RETRY_SECONDS (default 60).",
)}`;

const DOCS = prose("Docs: docs/ in the handoff repository (gates, containment, run directory, threat model, crash safety).");

/** `handoff --help`, `handoff help` (and, exit 2, `handoff` alone). */
export const HELP = `${OVERVIEW}\n${RUN_OPTIONS}\n${RUN_EXIT_CODES}${APPLY_EXIT_CODES}\n${DOCS}`;

/** `handoff <command> --help`: that command's usage, each of its options on one line, its exit codes. */
export const COMMAND_HELP: Readonly<Record<Command, string>> = {
  run: `Usage: handoff run [options] [--] <task text...>
Delegate one task to an agent CLI on a disposable clone (or --task-file FILE, - for stdin).

${RUN_OPTIONS}
${RUN_EXIT_CODES}`,
  resume: `Usage: handoff resume <run-id|run-dir> [options] [--] <instruction...>
${prose(
  "Continue a finished run's recorded session with a new instruction, as a new run linked to it (resumedFrom): a",
  "fresh clone with the earlier patch applied, the kept session resumed, all four gates again.",
)}
${RESUME_OPTIONS}
${prose(
  "Exit codes: those of handoff run (the new run's verdict); 2 also when the run cannot be continued (its session",
  "was not kept or is gone, its patch was modified, the source's HEAD moved, it is a candidates run: resume",
  "<run>/candidates/<k> instead, ...): one line says why, and nothing is created.",
  JSON_ERRORS,
)}`,
  enqueue: `Usage: handoff enqueue FILE --redis URL [options]
${prose(
  "handoff batch FILE --redis URL under the name of what it does: submit every task of the file to the workers' queue",
  "(handoff worker), wait for each, and report as handoff batch does. Without --redis it is a usage error.",
)}
${BATCH_OPTIONS_AND_EXIT_CODES}`,
  batch: `Usage: handoff batch FILE [options]
${prose(
  'Run every task of a batch file (JSON Lines, - for stdin): one JSON object a line with "task", and optionally "repo"',
  '(default: -C, else the current directory), "id" (default: task-<line>), "agentCmd" (the command backend\'s command)',
  "and any key of .handoff.json. Each task passes the four gates in its own run directory,",
  "<runs-dir>/<batch-id>/runs/<id>/. A bad line is reported with its line number (invalid_task) and the others run.",
  "A progress line goes to stderr; the summary to stdout; batch.json and junit.xml (one test case per task) to",
  "<runs-dir>/<batch-id>/. Ctrl-C cancels the running tasks, records the rest as not_started and writes the summary",
  "(again to force).",
)}
${BATCH_OPTIONS_AND_EXIT_CODES}`,
  show: `Usage: handoff show [<run-id|run-dir>] [options]
${prose(
  "Print a finished run's report: the verdict, the patch, the verification and the timings; of a candidates run, its",
  "candidates side by side first (verdict, warnings, patch size, time, cost, agreement; the winner marked *). Of a",
  "batch: its runs (id, outcome, run directory), each of which show and apply take. Without a run: the latest finished",
  "run of the repository (-C, else the current directory's; stderr says which).",
)}
Show options:
${labelledLines([
  ["-C, --repo DIR", "without a run: the repository whose latest run is shown (default: the current directory's)"],
  [
    "    --format FORMAT",
    "text (default), markdown, json (result.json), junit (the verdict as JUnit XML) or html (one self-contained page: verdict, task, verification output, the diff with line numbers, the timeline; nothing in it loads anything)",
  ],
  ["    --json", "the same as --format json"],
  ["    --runs-dir DIR", "where a run id is looked up (default: $XDG_STATE_HOME/handoff/runs)"],
])}
${prose(
  "Exit codes: 0 shown, 2 usage error (no such run, a result.json that is missing, invalid or not trusted; without a",
  "run: not inside a repository, or no finished run of it).",
  JSON_ERRORS,
)}`,
  apply: `Usage: handoff apply [<run-id|run-dir>] [options]
${prose(
  "Apply a verified run's changes.patch to the source repository (work tree and index; nothing is committed). Of a",
  "candidates run (--candidates), the winner's; none when it has no winner (refused). With --commit: a commit of the",
  "patch on a new branch whose parent is the run's base commit, with the trailers Handoff-Run, Handoff-Verdict,",
  "Handoff-Backend and Handoff-Model; your branch, HEAD, index and work tree are not touched. Without a run: the",
  "latest finished run of the repository applied to (-C, else the current directory's), said on stderr; it is",
  "refused as any run is unless it verified. A batch is not applied: apply one of its runs (handoff show BATCH lists them).",
)}
Apply options:
${labelledLines([
  ["-C, --repo DIR", "the repository to apply to (default: the run's source repository)"],
  ["    --runs-dir DIR", "where a run id is looked up (default: $XDG_STATE_HOME/handoff/runs)"],
  ["    --candidate K", "of a candidates run: apply candidate K instead of the winner (it must have verified)"],
  ["    --commit", "commit instead, as your git identity (user.name, user.email), dated the run's end"],
  ["    --branch NAME", "the new branch (default: handoff/<run id>); an existing branch is refused"],
  ["    --message TEXT", "the commit message instead of the task's first line and a short body (the trailers stay)"],
  ["    --push REMOTE", "then push that branch alone to REMOTE (refused if REMOTE already has the branch)"],
  ["    --json", "print what was applied or committed as a JSON object"],
])}
${APPLY_EXIT_CODES}${prose(JSON_ERRORS)}`,
  gc: `Usage: handoff gc [options]
${prose(
  `Remove the kept sessions (--keep-session) whose ${KEPT_SESSION_DAYS} days are over, and list what was removed and what is kept.`,
  "Every handoff run and resume start does the same for the expired ones.",
)}
Gc options:
${labelledLines([
  ["    --all", "remove every kept session, expired or not"],
  ["    --runs-dir DIR", "the runs whose kept sessions are collected (default: $XDG_STATE_HOME/handoff/runs)"],
  ["    --json", "print what was removed, kept and left alone as JSON"],
])}
Exit codes: 0 done, 2 usage error.
`,
  cache: `Usage: handoff cache list [--json]
       handoff cache clear [--keep-downloads] [--json]
${prose(
  "The cache of base environments: a checkout of a base commit after the setup commands (--setup) ran in it, built",
  "once and reused by every later run on the same commit, setup and setup inputs. It lives in $HANDOFF_CACHE_DIR,",
  "else $XDG_CACHE_HOME/handoff, else ~/.cache/handoff, and holds at most $HANDOFF_CACHE_LIMIT (default 10G; K, M,",
  "G, T are powers of 1024): past it, handoff removes the least recently used environments. One a running handoff",
  "uses is never removed.",
)}
${labelledLines([
  [
    "list",
    "a header, then one line per environment, most recently used first: key, repository, base commit, size, last use, whether in use, the setup commands; then the total and the limit",
  ],
  ["clear", "remove every environment not in use, and the package managers' download caches"],
])}
Cache options:
${labelledLines([
  ["    --keep-downloads", "with clear: keep the download caches (npm, pip, cargo, go)"],
  ["    --json", "print the list, or what clear removed, as JSON"],
])}
Exit codes: 0 done (also for an empty or missing cache), 2 usage error.
`,
  worker: `Usage: handoff worker --redis URL [options]
${prose(
  "Take the tasks of batches (handoff batch FILE --redis URL) from a queue on Redis and run each here, through the",
  "same gates as handoff run, in RUNS-DIR/<batch id>/runs/<task id>; its record and result.json go back through the",
  "queue. SIGTERM or SIGINT: take no new jobs, let the running ones finish (after --grace, cancel them and hand their",
  "jobs back to the queue), then exit 0; a second signal kills them and exits 130. On start, a run left half-done by",
  "a worker that was killed here ends user_cancelled (runner_crashed).",
)}
Worker options:
${helpLines("worker", WORKER_ROWS)}
${prose(
  "A lost Redis is retried for $HANDOFF_REDIS_RETRY_SECONDS (default 60), then the worker cancels its running jobs",
  "and exits 69. Exit codes: 0 stopped by a signal, 2 usage error, 69 Redis unreachable, 130 stopped by a second",
  "signal.",
)}`,
  backends: `Usage: handoff backends [options]
${prose(
  "Which agent CLIs are installed here, their versions, and whether they are usable (or why not). Each CLI is looked",
  "for as handoff run looks for it: on PATH, then in handoff's own install dir (test/agent-clis/<name>/ of handoff's",
  "clone, where npm run agent-clis and npm run demo install them; $HANDOFF_AGENT_CLIS_DIR names another); each",
  "executable found says where (PATH, handoff's install dir, --bin).",
)}
Backends options:
${labelledLines([
  ["-b, --backend NAME", "only this backend"],
  ["    --bin PATH", "with -b: this executable for it, as handoff run -b NAME --bin PATH would start it"],
  ["    --json", "print the list as JSON"],
])}
${prose("Exit codes: 0 listed (also when a CLI is unusable), 2 usage error (an unknown backend, --bin without -b).", JSON_ERRORS)}`,
  list: `Usage: handoff list [options]
${prose(
  "The recent runs in the runs directory, newest first: id, start time, backend, verdict, repository. Inside a git",
  "repository (or with -C), only the runs of that repository (the first line says which); outside one, or with",
  "--all, every repository's. A run still running, or whose handoff died (crashed, until the next handoff run ends",
  "it), says so; a candidates run is one line (its backends, the winner's verdict); a batch is one line (its worst",
  "outcome, counts).",
)}
List options:
${labelledLines([
  ["-C, --repo DIR", "the runs of this repository (default: the current directory's)"],
  ["    --all", "every repository's runs"],
  ["    --limit N", "at most N runs (default 20)"],
  ["    --json", "print the runs as a JSON array, and nothing else"],
  ["    --runs-dir DIR", "the runs directory (default: $XDG_STATE_HOME/handoff/runs)"],
])}
${prose("Exit codes: 0 listed (also none), 2 usage error.", JSON_ERRORS)}`,
  mcp: `Usage: handoff mcp [run options] [--allow-repo DIR]
${prose(
  "handoff as an MCP server on stdin/stdout, for an agent (Claude Code, Codex, Cursor, …) to delegate a subtask",
  "through: the tools delegate (one task through the four gates; the answer is the verdict, the patch, the run",
  "directory), list_runs, show_run and apply_run (stages a verified patch; never an unverified one). docs/mcp.md has",
  "the client configurations.",
)}
${prose(
  "The options are handoff run's, the settings every delegated task shares. A tool call may add verify and setup",
  "commands, deny and protect globs and a baseline, and choose the backend, model, candidates, attempts and timeout",
  "where this command line does not fix them; it can never switch the sandbox off, widen the network, change the",
  "test-edits policy, or name another repository than the server's (-C, else the current directory) unless",
  "--allow-repo allows it. Approval: --yes consents to every delegated task; without it, each is asked through the",
  "client (MCP elicitation), and a client that cannot ask gets an error.",
)}
Options:
${helpLines("run", MCP_ROWS)}
${prose("Exit codes: 0 the client closed the connection (runs under way end user_cancelled first), 2 usage error.")}`,
};
