import { UsageError } from "../lib/errors.js";
import { readBounded } from "../lib/safe-read.js";
import { whyUnreadable } from "../lib/unreadable.js";
import { escapeControls } from "../vocabulary/display.js";
import { MAX_TASK_BYTES } from "../vocabulary/input-limits.js";

/** The task (or resume's instruction): the words after the options, or the text of `--task-file` (- for stdin). */
export function readTask(
  positionals: readonly string[],
  taskFile: string | undefined,
  usage = "handoff run [options] -- <task text>",
): string {
  if (taskFile !== undefined) {
    if (positionals.length > 0) throw new UsageError("two_tasks", "give the task as text or with --task-file, not both");
    let bytes: Buffer;
    try {
      bytes = readBounded(taskFile === "-" ? 0 : taskFile, MAX_TASK_BYTES + 1);
    } catch (error) {
      throw new UsageError("task_file", `cannot read the task file "${escapeControls(taskFile)}" (--task-file): ${whyUnreadable(error)}`);
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
