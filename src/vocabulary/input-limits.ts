import { UsageError } from "../lib/errors.js";

/**
 * Bounds on what handoff passes to a process, checked when options are resolved so that a task or a command the
 * kernel would refuse (E2BIG) or Node cannot pass (a NUL byte) is a usage error before anything is created.
 */

/** The largest task: far beyond any prompt, small enough to read whole. It reaches the agent on stdin only. */
export const MAX_TASK_BYTES = 1024 * 1024;

/** Linux's MAX_ARG_STRLEN (32 pages of 4 KiB) counts the terminating NUL: one argument or variable is at most this. */
export const MAX_ARGUMENT_BYTES = 128 * 1024 - 1;

/** Linux's PATH_MAX: a path of this many bytes or more names no file (and no directory a `cd` can reach). */
export const PATH_MAX = 4096;

/** The longest timeout: Node's timers hold at most 2^31-1 ms (about 24.8 days); past that one fires at once. */
export const MAX_TIMEOUT_SECONDS = 24 * 24 * 3600;

/** The most `pids.max` accepts (the kernel's PID_MAX_LIMIT). */
export const MAX_PROCESSES = 4_194_304;

/** The most `--max-memory` takes, in MiB: its bytes stay an exact integer (2^53). */
export const MAX_MEMORY_MIB = 2 ** 33 - 1;

/** The task as handoff will hand it over: not empty, no NUL byte, at most MAX_TASK_BYTES. */
export function checkTask(task: string): void {
  if (task.trim() === "") throw new UsageError("empty_task", "the task text is empty");
  if (task.includes("\0")) throw new UsageError("task_nul", "the task holds a NUL byte (is it a binary file?); give the task as text");
  const bytes = Buffer.byteLength(task);
  if (bytes > MAX_TASK_BYTES)
    throw new UsageError("task_too_large", `the task is ${bytes} bytes; the most handoff takes is ${MAX_TASK_BYTES} (1 MiB)`);
}

/** What is wrong with one string handed to a process as a single argument (a `/bin/sh -c` command, a model name, a path), or null. */
export function argumentProblem(value: string): { code: "nul_in_argument" | "argument_too_large"; why: string } | null {
  if (value.includes("\0")) return { code: "nul_in_argument", why: `holds a NUL byte, which no process can be given: ${preview(value)}` };
  const bytes = Buffer.byteLength(value);
  if (bytes > MAX_ARGUMENT_BYTES)
    return {
      code: "argument_too_large",
      why: `is ${bytes} bytes; one argument to a process is at most ${MAX_ARGUMENT_BYTES} bytes on Linux: ${preview(value)}`,
    };
  return null;
}

/** The same, as a usage error that names the argument `what`. */
export function checkArgument(what: string, value: string): void {
  const problem = argumentProblem(value);
  if (problem !== null) throw new UsageError(problem.code, `${what} ${problem.why}`);
}

function preview(value: string): string {
  const head = value.slice(0, 60).replaceAll("\0", "\\0").replaceAll("\n", "\\n");
  return `'${head}${value.length > 60 ? "…" : ""}'`;
}
