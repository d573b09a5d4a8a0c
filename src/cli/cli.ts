import { join } from "node:path";
import { askOnTerminal, canAskOnTerminal } from "../approval/terminal-prompt.js";
import { applyRun } from "../review/apply.js";
import { commitRun } from "../review/commit.js";
import { COMMAND_HELP, type Command, HELP, VERSION } from "./help.js";
import { type ParsedOptions, parseOptions } from "./parse-options.js";
import { ApplyRefusedError, QueueUnavailableError, UntrustedArtifactError, UsageError } from "../lib/errors.js";
import { type ReportFormat, renderReport } from "../review/report.js";
import { type LoadedRun, loadRun } from "../run-dir/run-lookup.js";
import { escapeControls } from "../patch/rules/path-names.js";
import { ExternalCodingRunner } from "../run/runner.js";
import { EXIT_CODES } from "../verdict/decide.js";
import { MAX_TASK_BYTES } from "../run/input-limits.js";
import { readBounded } from "../lib/safe-read.js";
import { foundInText, listBackends } from "./backends-report.js";
import { batchCommand } from "./batch-command.js";
import { listCommand, namedOrLatestRun } from "./list-command.js";
import { clearCache, listCache, renderCacheClearing, renderCacheListing } from "./cache-report.js";
import { EnvironmentCache, cacheLimitBytes, defaultCacheDir } from "../environment/cache-store.js";
import { progressPrinter } from "./progress.js";
import type { RunResult } from "../verdict/result.js";
import { onInterrupt } from "./interrupts.js";
import { seconds, wholeNumber } from "./option-values.js";
import { type ResumeOverrides, continueRun } from "../repair/continue-run.js";
import { type KeptSessionEntry, collectKeptSessions } from "../repair/session-gc.js";
import { type RunOptions, type WorkspaceModeOption, defaultRunsDir } from "../run/options.js";
import type { SandboxMode } from "../containment/sandbox.js";
import type { TestEditPolicy } from "../verify/test-edits.js";

/** The CLI: parses argv, runs a command, returns the exit code. Only bin/handoff.js calls process.exit. */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case "-h":
      case "--help":
      case "help":
        // `handoff help run` is `handoff run --help`.
        process.stdout.write(command === "help" && isCommand(rest[0]) ? COMMAND_HELP[rest[0]] : HELP);
        return command === undefined ? 2 : 0;
      case "-V":
      case "--version":
        process.stdout.write(`${VERSION}\n`);
        return 0;
      case "run":
      case "show":
      case "apply":
      case "list":
      case "backends":
      case "resume":
      case "gc":
      case "cache":
      case "batch":
      case "enqueue":
      case "worker":
        if (asksForHelp(rest)) {
          process.stdout.write(COMMAND_HELP[command]);
          return 0;
        }
        return await runSubcommand(command, rest);
      default:
        throw new UsageError("unknown_command", `unknown command '${command}' (try: handoff --help)`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`handoff: ${error.message}\n`);
      return 2;
    }
    if (error instanceof ApplyRefusedError) {
      process.stderr.write(`handoff: apply refused: ${error.message}\n`);
      return 1;
    }
    if (error instanceof QueueUnavailableError) {
      process.stderr.write(`handoff: ${error.message}\n`);
      return 69;
    }
    process.stderr.write(`handoff: internal error: ${(error as Error).stack ?? error}\n`);
    return 70;
  }
}

function isCommand(word: string | undefined): word is Command {
  return word !== undefined && Object.hasOwn(COMMAND_HELP, word);
}

/** `-h` or `--help` among a command's options (not after `--`, where it would be task text). */
function asksForHelp(args: readonly string[]): boolean {
  const options = args.indexOf("--") === -1 ? args : args.slice(0, args.indexOf("--"));
  return options.includes("--help") || options.includes("-h");
}

async function runSubcommand(command: Command, args: readonly string[]): Promise<number> {
  switch (command) {
    case "run":
      return await runCommand(args);
    case "show":
      return await showCommand(args);
    case "apply":
      return await applyCommand(args);
    case "list":
      return await listCommand(args);
    case "backends":
      return await backendsCommand(args);
    case "resume":
      return await resumeCommand(args);
    case "gc":
      return gcCommand(args);
    case "cache":
      return cacheCommand(args);
    case "batch":
      return await batchCommand(args);
    case "enqueue":
      return await batchCommand(args, "enqueue");
    case "worker":
      // Loaded only for a worker: BullMQ and its Redis client cost every other command a fifth of a second to start.
      return await (await import("./worker-command.js")).workerCommand(args);
  }
}

export const RUN_OPTIONS = {
  repo: { type: "string", short: "C" },
  backend: { type: "string", short: "b", multiple: true },
  candidates: { type: "string" },
  jobs: { type: "string" },
  "agent-cmd": { type: "string" },
  bin: { type: "string" },
  model: { type: "string", short: "m" },
  verify: { type: "string", multiple: true },
  "no-verify": { type: "boolean" },
  "test-edits": { type: "string" },
  junit: { type: "string", multiple: true },
  "holdout-patch": { type: "string", multiple: true },
  setup: { type: "string", multiple: true },
  "setup-inputs": { type: "string", multiple: true },
  "workspace-mode": { type: "string" },
  baseline: { type: "boolean" },
  yes: { type: "boolean", short: "y" },
  timeout: { type: "string" },
  "idle-timeout": { type: "string" },
  "verify-timeout": { type: "string" },
  allow: { type: "string", multiple: true },
  deny: { type: "string", multiple: true },
  protect: { type: "string", multiple: true },
  "allow-config": { type: "string", multiple: true },
  expose: { type: "string", multiple: true },
  env: { type: "string", multiple: true },
  "runs-dir": { type: "string" },
  "run-id": { type: "string" },
  "workspace-dir": { type: "string" },
  "cli-home-dir": { type: "string" },
  json: { type: "boolean" },
  "keep-workspace": { type: "boolean" },
  "allow-dirty": { type: "boolean" },
  "task-file": { type: "string" },
  sandbox: { type: "string" },
  "verify-network": { type: "boolean" },
  "max-processes": { type: "string" },
  "max-memory": { type: "string" },
  "max-files": { type: "string" },
  "max-file-size": { type: "string" },
  "max-patch-size": { type: "string" },
  "max-workspace-entries": { type: "string" },
  "max-depth": { type: "string" },
  attempts: { type: "string" },
  "total-timeout": { type: "string" },
  "keep-session": { type: "boolean" },
} as const;

function mebibytes(value: number | undefined): number | undefined {
  return value === undefined ? undefined : value * 1024 * 1024;
}

function readTask(positionals: readonly string[], taskFile: string | undefined, usage = "handoff run [options] -- <task text>"): string {
  if (taskFile !== undefined) {
    if (positionals.length > 0) throw new UsageError("two_tasks", "give the task as text or with --task-file, not both");
    let bytes: Buffer;
    try {
      bytes = readBounded(taskFile === "-" ? 0 : taskFile, MAX_TASK_BYTES + 1);
    } catch (error) {
      throw new UsageError("task_file", `cannot read --task-file ${taskFile}: ${(error as NodeJS.ErrnoException).code ?? error}`);
    }
    if (bytes.length > MAX_TASK_BYTES)
      throw new UsageError(
        "task_too_large",
        `--task-file ${taskFile} holds more than ${MAX_TASK_BYTES} bytes (1 MiB), the most handoff takes as a task`,
      );
    if (bytes.includes(0))
      throw new UsageError("task_nul", `--task-file ${taskFile} holds a NUL byte (is it a binary file?); give the task as text`);
    return bytes.toString("utf8");
  }
  if (positionals.length === 0) throw new UsageError("no_task", `no task given: ${usage}`);
  return positionals.join(" ");
}

async function runCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseOptions("run", args, RUN_OPTIONS);
  const task = readTask(positionals, values["task-file"]);
  const interactive = canAskOnTerminal(values["task-file"] === "-");
  return await runAndReport(values.json === true, (signal) => ({
    repo: values.repo,
    task,
    // One -b is the backend; repeated, a candidate per backend (docs/many-tasks.md).
    ...((values.backend?.length ?? 0) > 1 ? { backends: values.backend } : { backend: values.backend?.[0] }),
    candidates: wholeNumber("--candidates", values.candidates),
    jobs: wholeNumber("--jobs", values.jobs),
    agentCmd: values["agent-cmd"],
    bin: values.bin,
    model: values.model,
    verify: values.verify,
    noVerify: values["no-verify"],
    testEdits: values["test-edits"] as TestEditPolicy | undefined, // checked with the other options in resolveOptions
    junit: values.junit,
    setup: values.setup,
    setupInputs: values["setup-inputs"],
    workspaceMode: values["workspace-mode"] as WorkspaceModeOption | undefined, // checked with the other options in resolveOptions
    baseline: values.baseline,
    allow: values.allow,
    deny: values.deny,
    protect: values.protect,
    allowConfig: values["allow-config"],
    expose: values.expose,
    workspacesDir: values["workspace-dir"],
    cliHomesDir: values["cli-home-dir"],
    sandbox: values.sandbox as SandboxMode | undefined, // checked with the other options in resolveOptions
    verifyNetwork: values["verify-network"],
    caps: {
      processes: wholeNumber("--max-processes", values["max-processes"]),
      memoryBytes: mebibytes(wholeNumber("--max-memory", values["max-memory"])),
    },
    limits: {
      maxFiles: wholeNumber("--max-files", values["max-files"]),
      maxFileBytes: mebibytes(wholeNumber("--max-file-size", values["max-file-size"])),
      maxPatchBytes: mebibytes(wholeNumber("--max-patch-size", values["max-patch-size"])),
      maxWorkspaceEntries: wholeNumber("--max-workspace-entries", values["max-workspace-entries"]),
      maxDepth: wholeNumber("--max-depth", values["max-depth"]),
    },
    ...sharedRunOptions(values, interactive),
    signal,
  }));
}

/**
 * Runs one run (`run`, `resume`) with Ctrl-C wired to its signal, and prints its outcome: result.json with --json,
 * else the verdict, the hint and the run directory. Returns the verdict's exit code.
 */
async function runAndReport(json: boolean, request: (signal: AbortSignal) => RunOptions): Promise<number> {
  const controller = new AbortController();
  // Built first: a bad option is a usage error before any handler is installed.
  const options = request(controller.signal);
  const stopHandling = onInterrupt(() => {
    process.stderr.write("handoff: interrupted; stopping the agent and writing the run directory (again to force)\n");
    controller.abort();
  });
  try {
    // A candidate's progress lines begin with its number: `[2] agent working…`.
    const candidatePrinters = new Map<number, ReturnType<typeof progressPrinter>>();
    const onCandidateEvent = (k: number, event: Parameters<ReturnType<typeof progressPrinter>>[0]) => {
      if (!candidatePrinters.has(k)) candidatePrinters.set(k, progressPrinter(json, `[${k}] `));
      candidatePrinters.get(k)!(event);
    };
    // The verdict lines as soon as result.json holds them, before the workspaces are removed; --json waits for the
    // whole result, the clean-up's timing included.
    let printed = false;
    const onDecided = json
      ? undefined
      : (decided: RunResult) => {
          printVerdict(decided);
          printed = true;
        };
    const runner = new ExternalCodingRunner({ onEvent: progressPrinter(json), onCandidateEvent, onDecided });
    const result = await runner.run(options);
    if (json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else if (!printed) printVerdict(result);
    return EXIT_CODES[result.terminalReason];
  } finally {
    stopHandling();
  }
}

/** A run's verdict on stdout: the terminal reason and summary, the hint, the winner of a candidates run, the run directory. */
function printVerdict(result: RunResult): void {
  process.stdout.write(`${result.terminalReason}${result.detail ? ` (${result.detail})` : ""}: ${result.summary}\n`);
  if (result.hint) process.stdout.write(`hint: ${result.hint}\n`);
  if (result.candidates)
    process.stdout.write(
      `winner: ${result.winner === null || result.winner === undefined ? "none" : `candidate ${result.winner}`} of ${result.candidates.length}\n`,
    );
  process.stdout.write(`run directory: ${result.runDir}\n`);
}

/** The `run` options `handoff resume` takes again (the rest come from the earlier run's request.json). */
export const RESUME_OPTIONS = pickOptions(RUN_OPTIONS, [
  "yes",
  "json",
  "run-id",
  "runs-dir",
  "task-file",
  "attempts",
  "timeout",
  "idle-timeout",
  "verify-timeout",
  "total-timeout",
  "keep-session",
  "keep-workspace",
  "allow-dirty",
  "env",
  "holdout-patch",
]);

/** The options `run` and `resume` share (the ones `resume` takes again), converted the one way both use. */
function sharedRunOptions(values: ParsedOptions<typeof RESUME_OPTIONS>["values"], interactive: boolean): ResumeOverrides {
  return {
    yes: values.yes,
    approve: values.yes || !interactive ? undefined : askOnTerminal,
    runId: values["run-id"],
    runsDir: values["runs-dir"],
    attempts: wholeNumber("--attempts", values.attempts),
    timeoutMs: seconds("--timeout", values.timeout),
    idleTimeoutMs: seconds("--idle-timeout", values["idle-timeout"]),
    verifyTimeoutMs: seconds("--verify-timeout", values["verify-timeout"]),
    totalTimeoutMs: seconds("--total-timeout", values["total-timeout"]),
    keepSession: values["keep-session"],
    keepWorkspace: values["keep-workspace"],
    allowDirty: values["allow-dirty"],
    env: values.env,
    holdoutPatches: values["holdout-patch"],
  };
}

function pickOptions<T extends object, K extends keyof T>(options: T, names: readonly K[]): Pick<T, K> {
  return Object.fromEntries(names.map((name) => [name, options[name]])) as Pick<T, K>;
}

const RESUME_USAGE = "handoff resume <run-id|run-dir> [options] [--] <instruction...>";

/** `handoff resume`: a new run that continues a finished run's kept session with the user's instruction. */
async function resumeCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseOptions("resume", args, RESUME_OPTIONS);
  const [ref, ...words] = positionals;
  if (ref === undefined) throw new UsageError("bad_arguments", `usage: ${RESUME_USAGE}`);
  const instruction = readTask(words, values["task-file"], RESUME_USAGE);
  const interactive = canAskOnTerminal(values["task-file"] === "-");
  return await runAndReport(values.json === true, (signal) =>
    continueRun(ref, instruction, { ...sharedRunOptions(values, interactive), signal }),
  );
}

export const GC_OPTIONS = { "runs-dir": { type: "string" }, all: { type: "boolean" }, json: { type: "boolean" } } as const;

/** `handoff gc`: removes the expired kept sessions now (every kept one with --all), and says what it removed and kept. */
function gcCommand(args: readonly string[]): number {
  const { values, positionals } = parseOptions("gc", args, GC_OPTIONS);
  if (positionals.length > 0) throw new UsageError("bad_arguments", "usage: handoff gc [--runs-dir DIR] [--all] [--json]");
  const collection = collectKeptSessions(values["runs-dir"] ?? defaultRunsDir(), { all: values.all === true });
  if (values.json) {
    process.stdout.write(`${JSON.stringify(collection, null, 2)}\n`);
    return 0;
  }
  const line = (what: string, entry: KeptSessionEntry, why = "") =>
    process.stdout.write(`${what} ${escapeControls(entry.runId)}  ${entry.keptUntil ?? "-"}  ${escapeControls(entry.home)}${why}\n`);
  for (const entry of collection.removed) line("removed  ", entry);
  for (const entry of collection.kept) line("kept     ", entry);
  for (const entry of collection.leftAlone) line("left     ", entry, `  (${escapeControls(entry.why)})`);
  if (collection.removed.length + collection.kept.length + collection.leftAlone.length === 0) process.stdout.write("no kept sessions\n");
  return 0;
}

export const CACHE_OPTIONS = { json: { type: "boolean" }, "keep-downloads": { type: "boolean" } } as const;
const CACHE_USAGE = "usage: handoff cache list [--json] | handoff cache clear [--keep-downloads] [--json]";

/** `handoff cache list|clear`: the cached base environments ($HANDOFF_CACHE_DIR, else $XDG_CACHE_HOME/handoff), listed or removed. */
function cacheCommand(args: readonly string[]): number {
  const { values, positionals } = parseOptions("cache", args, CACHE_OPTIONS);
  const [subcommand, ...extra] = positionals;
  if (subcommand === undefined || extra.length > 0) throw new UsageError("bad_arguments", CACHE_USAGE);
  if (subcommand !== "list" && subcommand !== "clear")
    throw new UsageError("unknown_subcommand", `unknown cache subcommand '${escapeControls(subcommand.slice(0, 100))}' (${CACHE_USAGE})`);
  if (subcommand === "list" && values["keep-downloads"])
    throw new UsageError("bad_option", "--keep-downloads is an option of 'handoff cache clear', not of 'handoff cache list'");
  const cache = new EnvironmentCache(defaultCacheDir(), cacheLimitBytes());
  const report = subcommand === "list" ? listCache(cache) : clearCache(cache, values["keep-downloads"] === true);
  if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else process.stdout.write("limitBytes" in report ? renderCacheListing(report) : renderCacheClearing(report));
  return 0;
}

export const SHOW_OPTIONS = { format: { type: "string" }, "runs-dir": { type: "string" }, json: { type: "boolean" } } as const;

async function showCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseOptions("show", args, SHOW_OPTIONS);
  if (positionals.length > 1)
    throw new UsageError("bad_arguments", "usage: handoff show [<run-id|run-dir>] [--format text|markdown|json|junit|html]");
  const format = (values.json ? "json" : (values.format ?? "text")) as ReportFormat;
  if (!["text", "markdown", "json", "junit", "html"].includes(format))
    throw new UsageError("bad_format", `--format must be text, markdown, json, junit or html, not '${format}'`);
  process.stdout.write(renderReport(await namedOrLatestRun(positionals[0], values["runs-dir"], process.cwd()), format));
  return 0;
}

export const APPLY_OPTIONS = {
  repo: { type: "string", short: "C" },
  "runs-dir": { type: "string" },
  candidate: { type: "string" },
  commit: { type: "boolean" },
  branch: { type: "string" },
  message: { type: "string" },
  push: { type: "string" },
  json: { type: "boolean" },
} as const;

async function applyCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseOptions("apply", args, APPLY_OPTIONS);
  if (positionals.length > 1)
    throw new UsageError(
      "bad_arguments",
      "usage: handoff apply [<run-id|run-dir>] [-C repo] [--candidate k] [--commit [--branch NAME] [--message TEXT] [--push REMOTE]]",
    );
  const withoutCommit = (["branch", "message", "push"] as const).find((name) => values[name] !== undefined && !values.commit);
  if (withoutCommit) throw new UsageError("bad_arguments", `--${withoutCommit} goes with --commit`);
  // Without an id: the latest finished run of the repository it applies to (-C, else the current directory's).
  const named = await namedOrLatestRun(positionals[0], values["runs-dir"], values.repo ?? process.cwd(), loadTrustedRun);
  const { run, k } = chosenCandidate(named, wholeNumber("--candidate", values.candidate));
  if (values.commit) {
    const candidateOf = k === null ? undefined : { runId: named.result.runId, k };
    const committed = await commitRun(run, {
      repo: values.repo,
      branch: values.branch,
      message: values.message,
      push: values.push,
      candidateOf,
    });
    notesOnTheRun(run);
    if (values.json) process.stdout.write(`${JSON.stringify(committed, null, 2)}\n`);
    else {
      process.stderr.write(
        `handoff: committed ${committed.files.length} file(s) on the new branch ${committed.branch} at the run's base ${committed.baseCommit.slice(0, 12)}${committed.pushedTo === null ? "" : `, pushed to ${escapeControls(committed.pushedTo)}`}; your branch, index and work tree are as they were\n`,
      );
      process.stdout.write(`branch ${committed.branch}\ncommit ${committed.commit}\n`);
      for (const file of committed.files) process.stdout.write(`file ${file}\n`);
    }
    return 0;
  }
  const outcome = await applyRun(run, values.repo);
  notesOnTheRun(run);
  process.stderr.write(
    `handoff: applied ${outcome.files.length} file(s) to ${outcome.repo}${outcome.rebased ? " (HEAD had moved; the patch still applied cleanly)" : ""}\n`,
  );
  if (values.json) process.stdout.write(`${JSON.stringify(outcome, null, 2)}\n`);
  else for (const file of outcome.files) process.stdout.write(`${file}\n`);
  return 0;
}

/** What `apply` says about a run whose patch nothing checked, or that changes verification inputs. */
function notesOnTheRun(run: LoadedRun): void {
  if (run.result.verification.skipped === "no_verify") {
    process.stderr.write(
      `handoff: note: run ${escapeControls(run.result.runId)} was not verified (--no-verify); nothing checked this patch\n`,
    );
  }
  const edits = run.result.verification.testEdits;
  // New test files are what a good patch brings: no note for them.
  const changed = (edits?.changed ?? []).filter((input) => !(input.change === "added" && input.reason === "test_file"));
  if (edits && changed.length > 0) {
    const held = run.result.verification.heldToBase;
    const how =
      edits.policy === "allow"
        ? "allowed as patched by --test-edits allow, not held to the base"
        : `held to the base${held ? ` (${held.passed ? "passed" : "failed"})` : ""}`;
    process.stderr.write(
      `handoff: note: this patch changes verification inputs, ${how}: ${changed.map((input) => escapeControls(input.path)).join(", ")}\n`,
    );
  }
}

/** `apply` of a candidates run: the winner, or candidate k (`--candidate k`), loaded from `<run>/candidates/<k>/`. */
function chosenCandidate(run: LoadedRun, k: number | undefined): { run: LoadedRun; k: number | null } {
  const candidates = run.result.candidates;
  if (!candidates) {
    if (k !== undefined)
      throw new UsageError(
        "not_a_candidates_run",
        `--candidate applies to a candidates run; run ${escapeControls(run.result.runId)} has none`,
      );
    return { run, k: null };
  }
  const chosen = k ?? run.result.winner ?? null;
  if (chosen === null)
    throw new ApplyRefusedError(
      "no_winner",
      `candidates run ${escapeControls(run.result.runId)} has no winner (${run.result.terminalReason}); nothing is applied (--candidate k applies one by choice)`,
    );
  if (!candidates.some((candidate) => candidate.k === chosen))
    throw new UsageError(
      "bad_candidate",
      `run ${escapeControls(run.result.runId)} has candidates 1 to ${candidates.length}, not ${chosen}`,
    );
  return { run: loadTrustedRun(join(run.dir, "candidates", String(chosen)), undefined), k: chosen };
}

/** For `apply`, a result.json that is a link or another user's file is a refusal (exit 1), not a usage error. */
function loadTrustedRun(ref: string, runsDir: string | undefined) {
  try {
    return loadRun(ref, runsDir);
  } catch (error) {
    if (error instanceof UntrustedArtifactError) throw new ApplyRefusedError("untrusted_artifact", error.message);
    throw error;
  }
}

export const BACKENDS_OPTIONS = { json: { type: "boolean" }, backend: { type: "string", short: "b" }, bin: { type: "string" } } as const;

async function backendsCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseOptions("backends", args, BACKENDS_OPTIONS);
  if (positionals.length > 0) throw new UsageError("bad_arguments", "usage: handoff backends [-b NAME [--bin PATH]] [--json]");
  const report = await listBackends(process.env.PATH, { only: values.backend, bin: values.bin });
  if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else {
    for (const entry of report) {
      const where = entry.foundIn ? ` (${foundInText(entry.foundIn)})` : "";
      process.stdout.write(
        `${entry.name.padEnd(9)} ${entry.usable ? "usable  " : "unusable"} ${entry.version ?? "-"}  ${entry.executable ?? "not found"}${where}${entry.hint ? `\n          ${entry.hint}` : ""}\n`,
      );
    }
  }
  return 0;
}
