import { resolve } from "node:path";
import { UsageError } from "../lib/errors.js";
import { readBounded } from "../lib/safe-read.js";
import { whyUnreadable } from "../lib/unreadable.js";
import { escapeControls } from "../vocabulary/display.js";
import { checkTask } from "../vocabulary/input-limits.js";
import { isSafeRunId } from "../run-dir/run-dir.js";
import { type TaskRecord, recordWithoutRun } from "./batch-record.js";
import { type TaskSpec, taskSpec } from "./batch-task.js";
import { BatchTask } from "../settings/file-schema.js";

/** The largest batch file handoff reads: thousands of tasks fit many times over; /dev/zero or an endless pipe does not. */
export const MAX_BATCH_FILE_BYTES = 64 * 1024 * 1024;

/** A batch file read and checked line by line: the tasks to run, and a record for each line that is not one. */
export interface BatchFile {
  /** The file as given, resolved (`-` for stdin). */
  readonly file: string;
  readonly specs: readonly TaskSpec[];
  /** One `invalid_task` record per bad line, naming its line number and its first problem. */
  readonly invalid: readonly TaskRecord[];
}

/**
 * Reads FILE (`-`: stdin; relative to `cwd`) and parses it, a line's relative `repo` (and a line without one) taken
 * from `repoBase`; a file that cannot be read, is too large or holds no valid task is a UsageError.
 */
export function readBatchFile(file: string, cwd: string = process.cwd(), repoBase: string = cwd): BatchFile {
  const shown = escapeControls(file);
  let bytes: Buffer;
  try {
    bytes = readBounded(file === "-" ? 0 : resolve(cwd, file), MAX_BATCH_FILE_BYTES + 1);
  } catch (error) {
    throw new UsageError("batch_file", `cannot read the batch file "${shown}": ${whyUnreadable(error)}`);
  }
  if (bytes.length > MAX_BATCH_FILE_BYTES)
    throw new UsageError(
      "batch_file_too_large",
      `the batch file ${shown} holds more than ${MAX_BATCH_FILE_BYTES} bytes (64 MiB), the most handoff reads`,
    );
  const { specs, invalid } = parseBatchText(bytes.toString("utf8"), resolve(cwd, repoBase));
  if (specs.length === 0 && invalid.length === 0)
    throw new UsageError("empty_batch", `the batch file ${shown} holds no task (one JSON object a line)`);
  if (specs.length === 0) {
    const more = invalid.length > 1 ? ` (and ${invalid.length - 1} more bad line(s))` : "";
    throw new UsageError("no_valid_task", `the batch file ${shown} holds no valid task: ${invalid[0]!.summary}${more}`);
  }
  return { file: file === "-" ? "-" : resolve(cwd, file), specs, invalid };
}

/**
 * JSON Lines: split on `\n` only (one trailing `\r` stripped: a file saved on Windows), blank lines skipped, each
 * other line one task. A bad line becomes an `invalid_task` record; it never stops the others.
 */
export function parseBatchText(text: string, cwd: string = process.cwd()): { specs: TaskSpec[]; invalid: TaskRecord[] } {
  const specs: TaskSpec[] = [];
  const invalid: TaskRecord[] = [];
  const lineOfId = new Map<string, number>();
  text.split("\n").forEach((raw, index) => {
    const line = index + 1;
    const content = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (content.trim() === "") return;
    const parsed = parseLine(content);
    if (parsed.kind === "bad") {
      // A bad line keeps its own id when that is a usable one not taken yet: the report names it as the user did.
      const own = typeof parsed.id === "string" && isSafeRunId(parsed.id) && !lineOfId.has(parsed.id) ? parsed.id : null;
      if (own !== null) lineOfId.set(own, line);
      invalid.push(badLine(line, own ?? `task-${line}`, parsed.problem));
      return;
    }
    const spec = taskSpec(parsed.task, line, cwd);
    const earlier = lineOfId.get(spec.id);
    if (earlier !== undefined) {
      invalid.push(badLine(line, `task-${line}`, `id '${spec.id}' is already the id of line ${earlier}`));
      return;
    }
    lineOfId.set(spec.id, line);
    specs.push(spec);
  });
  return { specs, invalid };
}

type ParsedLine =
  | { readonly kind: "task"; readonly task: BatchTask }
  | { readonly kind: "bad"; readonly id: unknown; readonly problem: string };

function parseLine(content: string): ParsedLine {
  let json: unknown;
  try {
    json = JSON.parse(content);
  } catch (error) {
    return { kind: "bad", id: null, problem: `not JSON: ${(error as Error).message}` };
  }
  if (typeof json !== "object" || json === null || Array.isArray(json))
    return {
      kind: "bad",
      id: null,
      problem: `not a JSON object but ${Array.isArray(json) ? "an array" : json === null ? "null" : typeof json}`,
    };
  const id = (json as Record<string, unknown>).id;
  const checked = BatchTask.safeParse(json);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    return { kind: "bad", id, problem: `${issue.path.length > 0 ? `${issue.path.join(".")}: ` : ""}${issue.message}` };
  }
  try {
    checkTask(checked.data.task);
  } catch (error) {
    return { kind: "bad", id, problem: `task: ${(error as Error).message}` };
  }
  return { kind: "task", task: checked.data };
}

/** A bad line's record: `invalid_task`, its summary the line number and the first problem. */
function badLine(line: number, id: string, problem: string): TaskRecord {
  return recordWithoutRun({ id, line, repo: null }, "invalid_task", `line ${line}: ${escapeControls(problem.slice(0, 300))}`);
}
