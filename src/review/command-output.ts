import { type LoadedRun, readRunFile } from "../run-dir/run-lookup.js";
import { escapeControls } from "../vocabulary/display.js";
import type { RunResult } from "../verdict/result.js";
import { commandEnding, commandPassed, verificationCommands } from "../verify/shell-commands.js";
import { excerptExtent, failureExcerpt, REPORT_EXCERPT } from "../lib/failure-excerpt.js";
import { ownFilesPrefix } from "./run-files.js";

type CommandEntry = RunResult["verification"]["commands"][number];

/**
 * The output of the first failing setup or verify command, as the reports show it: the part of it from test.log that
 * names the failure (failureExcerpt), plain text and escaped; `extent` says which part ("" when all of it).
 */
export type FailureOutput =
  | { readonly kind: "lines"; readonly command: CommandEntry; readonly lines: readonly string[]; readonly extent: string }
  | { readonly kind: "unavailable"; readonly command: CommandEntry; readonly why: string };
/** A test.log larger than this is named, not read (each command's output in it is bounded to 512 KiB). */
const TEST_LOG_MAX_BYTES = 64 * 1024 * 1024;

/** A run's test.log (its winner's, of a candidates run), or why a report cannot show it. */
export type TestLog = { readonly kind: "log"; readonly bytes: Buffer } | { readonly kind: "unavailable"; readonly why: string };

/** test.log of the run's own files (ownFilesPrefix), read as readRunFile reads one: the one reading every report uses. */
export function readTestLog(run: LoadedRun): TestLog {
  const prefix = ownFilesPrefix(run);
  if (prefix === null) return { kind: "unavailable", why: "the run has no winner, so no test.log of its own" };
  const read = readRunFile(run, `${prefix}test.log`, TEST_LOG_MAX_BYTES);
  switch (read.kind) {
    case "bytes":
      return { kind: "log", bytes: read.bytes };
    case "missing":
      return { kind: "unavailable", why: "test.log is missing" };
    case "untrusted":
      return { kind: "unavailable", why: `test.log not shown, handoff did not write it (${read.why})` };
    case "too_large":
      return { kind: "unavailable", why: `test.log is ${read.size} bytes, too large to read here` };
    case "unreadable":
      return { kind: "unavailable", why: `test.log cannot be read (${read.message})` };
  }
}

/**
 * The first command of result.json's verification that failed (the patched run's, then the run held to the base,
 * where a patch that edited the tests fails), and the part of its section of test.log that names the failure; null
 * when none failed.
 */
export function firstFailureOutput(run: LoadedRun): FailureOutput | null {
  const v = run.result.verification;
  const command = verificationCommands(v).find((c) => !commandPassed(c));
  if (!command) return null;
  const log = readTestLog(run);
  if (log.kind === "unavailable") return { kind: "unavailable", command, why: log.why };
  const output = commandOutput(log.bytes, command);
  if (output === null) return { kind: "unavailable", command, why: "its output is not in test.log" };
  const excerpt = failureExcerpt(output.toString("utf8"), REPORT_EXCERPT);
  return { kind: "lines", command, lines: excerpt.lines.map(escapeControls), extent: excerptExtent(excerpt) };
}

/**
 * A command's output in test.log: between its `$ command    [phase]` line and its `[ending, N ms]` line
 * (src/verify/shell-commands.ts writes both). The last such section: test.log has every attempt's, and the result the
 * last attempt's commands. Takes result.json's entries and the records the pipeline holds alike.
 */
export function commandOutput(
  log: Buffer,
  c: Pick<CommandEntry, "command" | "phase" | "durationMs"> & Parameters<typeof commandEnding>[0],
): Buffer | null {
  const header = Buffer.from(`$ ${c.command}    [${c.phase ?? "verify"}]\n`);
  const trailer = Buffer.from(`[${commandEnding(c)}, ${c.durationMs} ms]\n`);
  const end = log.lastIndexOf(trailer);
  if (end < 0) return null;
  const start = log.lastIndexOf(header, end);
  if (start < 0) return null;
  return log.subarray(start + header.length, end);
}
