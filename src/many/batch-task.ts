import { resolve } from "node:path";
import { type BatchTask, optionsFromLine } from "../settings/file-schema.js";
import type { RunOptions } from "../run/options.js";

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

/** The run options of one task: its line's keys as the command line would give them, then the batch's defaults. */
export function taskRunOptions(spec: TaskSpec, runsDir: string, defaults: BatchRunDefaults): RunOptions {
  const task = spec.fields;
  return {
    ...(optionsFromLine(task) as Omit<RunOptions, "task">),
    repo: spec.repo,
    task: task.task,
    runId: spec.id,
    runsDir,
    // A line that names an agent command means the command backend, as `--agent-cmd` does on its own line.
    backend: task.backend ?? (task.agentCmd === undefined ? undefined : "command"),
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
