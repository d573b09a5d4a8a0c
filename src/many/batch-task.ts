import { resolve } from "node:path";
import { z } from "zod";
import { HandoffConfig } from "../run/config.js";
import type { RunOptions, WorkspaceModeOption } from "../run/options.js";
import { isSafeRunId } from "../run-dir/run-dir.js";
import type { TestEditPolicy } from "../verify/test-edits.js";

/**
 * One line of a batch file (JSON Lines): the keys of `.handoff.json`, plus `task` (the task text), `repo` (default:
 * the current directory; relative to it), `id` (default: `task-<line>`; names the task's run directory) and
 * `agentCmd` (the `command` backend's shell command; it implies `backend: "command"`). A line's keys win over the repository's `.handoff.json`, as
 * command-line options do. Unknown keys are an error: a misspelt `verfy` must not run a task unverified.
 */
export const BatchTask = HandoffConfig.extend({
  task: z.string().min(1),
  repo: z.string().min(1).optional(),
  id: z.string().refine(isSafeRunId, "an id is one path segment of letters, digits, '.', '_' or '-' (at most 128)").optional(),
  agentCmd: z.string().min(1).optional(),
});
export type BatchTask = z.infer<typeof BatchTask>;

/** A validated task with its id (given, or from its line) and its repository as an absolute path. */
export interface TaskSpec {
  readonly id: string;
  /** The line of the batch file it came from (1-based). */
  readonly line: number;
  readonly repo: string;
  readonly fields: BatchTask;
}

export function taskSpec(fields: BatchTask, line: number, cwd: string = process.cwd()): TaskSpec {
  return { id: fields.id ?? `task-${line}`, line, repo: resolve(cwd, fields.repo ?? "."), fields };
}

/** What the batch command line gives every task (a line cannot set these: they are the batch runner's choices). */
export interface BatchRunDefaults {
  readonly yes?: boolean;
  readonly noVerify?: boolean;
  readonly sandbox?: RunOptions["sandbox"];
  readonly env?: readonly string[];
  readonly workspacesDir?: string;
  readonly cliHomesDir?: string;
  readonly cacheDir?: string;
  readonly signal?: AbortSignal;
}

const SECOND = 1000;
const MIB = 1024 * 1024;

/** The run options of one task: its line's keys as the command line would give them, then the batch's defaults. */
export function taskRunOptions(spec: TaskSpec, runsDir: string, defaults: BatchRunDefaults): RunOptions {
  const task = spec.fields;
  const ms = (seconds: number | undefined) => (seconds === undefined ? undefined : seconds * SECOND);
  const bytes = (mib: number | undefined) => (mib === undefined ? undefined : mib * MIB);
  return {
    repo: spec.repo,
    task: task.task,
    runId: spec.id,
    runsDir,
    // A line that names an agent command means the command backend, as `--agent-cmd` does on its own line.
    backend: task.backend ?? (task.agentCmd === undefined ? undefined : "command"),
    agentCmd: task.agentCmd,
    model: task.model,
    verify: task.verify,
    setup: task.setup,
    setupInputs: task.setupInputs,
    allow: task.allow,
    deny: task.deny,
    protect: task.protect,
    allowConfig: task.allowConfig,
    expose: task.expose,
    junit: task.junit,
    testEdits: task.testEdits as TestEditPolicy | undefined, // checked with the other options in resolveOptions
    workspaceMode: task.workspaceMode as WorkspaceModeOption | undefined, // likewise
    timeoutMs: ms(task.timeout),
    idleTimeoutMs: ms(task.idleTimeout),
    verifyTimeoutMs: ms(task.verifyTimeout),
    totalTimeoutMs: ms(task.totalTimeout),
    attempts: task.attempts,
    keepSession: task.keepSession,
    limits: {
      maxFiles: task.maxFiles,
      maxFileBytes: bytes(task.maxFileSize),
      maxPatchBytes: bytes(task.maxPatchSize),
      maxWorkspaceEntries: task.maxWorkspaceEntries,
      maxDepth: task.maxDepth,
    },
    yes: defaults.yes,
    noVerify: defaults.noVerify,
    sandbox: defaults.sandbox,
    env: defaults.env,
    workspacesDir: defaults.workspacesDir,
    cliHomesDir: defaults.cliHomesDir,
    cacheDir: defaults.cacheDir,
    signal: defaults.signal,
  };
}
