import { basename, isAbsolute } from "node:path";
import { plainText } from "../lib/plain-text.js";
import { simpleCommands } from "./command-words.js";

/** Shell builtins and keywords: nothing to find on PATH. */
const BUILTINS = new Set([
  ".",
  ":",
  "[",
  "[[",
  "alias",
  "break",
  "cd",
  "continue",
  "declare",
  "echo",
  "eval",
  "exit",
  "export",
  "false",
  "hash",
  "let",
  "local",
  "printf",
  "pwd",
  "read",
  "return",
  "set",
  "shift",
  "source",
  "test",
  "trap",
  "true",
  "type",
  "ulimit",
  "umask",
  "unset",
  "wait",
]);

/**
 * The programs `command` starts from PATH or by absolute path, each once: the first word of each simple command.
 * Builtins, words the shell would expand (`$TOOL`, globs) and the project's own scripts (`./test.sh`, `bin/x`) are left
 * out: the project's files are the patch's business.
 */
export function programsOf(command: string): string[] {
  const programs = new Set<string>();
  const defined = definedNames(command);
  for (const simple of simpleCommands(command)) {
    const word = simple.words[0];
    if (!word || BUILTINS.has(word) || defined.has(word) || /[$`*?[\]{}~]/.test(word)) continue;
    if (word.includes("/") && !isAbsolute(word)) continue;
    programs.add(word);
  }
  return [...programs];
}

/** Names the command defines for itself: shell functions (`f() {…}`, `function f {…}`) and aliases. */
function definedNames(command: string): Set<string> {
  const names = new Set<string>(["function"]);
  for (const match of command.matchAll(/(?:^|[\s;&|{(])(?:function\s+)?([A-Za-z_][\w.:-]*)\s*\(\s*\)/g)) names.add(match[1]!);
  for (const match of command.matchAll(/(?:^|[\s;&|{(])function\s+([A-Za-z_][\w.:-]*)/g)) names.add(match[1]!);
  for (const match of command.matchAll(/(?:^|[\s;&|{(])alias\s+([A-Za-z_][\w.:-]*)=/g)) names.add(match[1]!);
  return names;
}

/** What starting a program found on PATH printed that shows it cannot run here (a shim whose manager is missing). */
const CANNOT_RUN =
  /No such file or directory|command not found|: not found|Permission denied|is not installed|could not choose a version|no default toolchain|no override and no default|No version is set|cannot execute/i;

/** Whether a start of a found program (`--version`) shows it cannot run: exit 126/127, or a failure in those words. */
export function startProblem(exitCode: number | null, output: string): boolean {
  if (exitCode === 126 || exitCode === 127) return true;
  return exitCode !== 0 && CANNOT_RUN.test(output);
}

/** The first lines of what a program printed, plain and short, for a one-line summary and the report. */
export function saidLines(output: string, lines = 3): string {
  return plainText(output)
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .slice(0, lines)
    .join(" / ")
    .slice(0, 400);
}

/**
 * A command that exited 126 or 127 because its own program could not start, told by the shell's words: `sh: 1: X: not
 * found`, `X: command not found`, `X: Permission denied`, or a shim of that name failing to reach its manager
 * (`/root/.pyenv/shims/python3: line 12: /root/.pyenv/libexec/pyenv: No such file or directory`). A script inside the
 * project that fails the same way names another program, and stays the command's failure.
 */
export function startFailure(command: string, exitCode: number | null, output: string | Buffer): { program: string; said: string } | null {
  // Decoded only for a 126/127: every verify command's output passes here.
  if (exitCode !== 126 && exitCode !== 127) return null;
  const programs = programsOf(command);
  if (programs.length === 0) return null;
  const names = new Set(programs.flatMap((program) => [program, basename(program)]));
  for (const line of plainText(output.toString()).split("\n")) {
    const shell = line.match(/^(?:\S*sh: )?(?:\d+: |line \d+: )?(\S+): (?:command not found|not found|Permission denied)\s*$/);
    if (shell && names.has(shell[1]!)) return { program: shell[1]!, said: line.trim() };
    const shim = line.match(/^(\/\S+): line \d+: (\/\S+): (?:No such file or directory|Permission denied)/);
    if (shim && names.has(basename(shim[1]!))) return { program: basename(shim[1]!), said: line.trim() };
  }
  return null;
}
