import { type ParseEntry, parse } from "shell-quote";
import { PATH_MAX } from "../vocabulary/input-limits.js";

/**
 * A setup or verify command read as the shell would split it, to find the files it names (inputs.ts). This is a
 * reading, not an interpreter: nothing is expanded or run. `$VAR` stays the literal `$VAR` (it names no file), a
 * glob stays a pattern, and a command shell-quote cannot read yields the words a plain split can. It never throws.
 */
export interface SimpleCommand {
  /** The command's words, its name first: leading `NAME=value` assignments, wrappers (`env`, `exec`, `time`,
   *  `timeout 60`…), shell keywords (`if`, `then`, `!`…) and redirection targets removed. */
  readonly words: readonly string[];
  /** The values of its leading `NAME=value` assignments (`CONFIG=ci.json npm test`: `ci.json`). */
  readonly assignedValues: readonly string[];
  /** Files it reads by redirection (`< input.txt`). */
  readonly reads: readonly string[];
  /** Unexpanded glob patterns among its words (`tests/*.py`). */
  readonly globs: readonly string[];
  /** The directory it runs in, relative to where the whole command starts (`""`: there); null when handoff cannot
   *  tell (`cd "$DIR"`, `cd /tmp`, `cd ..` past the top). */
  readonly cwd: string | null;
}

/** How deep `sh -c '…'` and `eval '…'` strings are read inside one another. */
export const MAX_NESTED_DEPTH = 8;

/** The shells whose `-c` string is a command and whose first operand is a script. */
export const SHELLS: ReadonlySet<string> = new Set(["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"]);
const KEYWORDS = new Set([
  "if",
  "then",
  "else",
  "elif",
  "fi",
  "do",
  "done",
  "while",
  "until",
  "!",
  "{",
  "}",
  "time",
  "exec",
  "command",
  "builtin",
  "nohup",
  "stdbuf",
]);
const SEPARATORS = new Set(["&&", "||", ";", ";;", "|", "|&", "&"]);
const OUTPUT_REDIRECTS = new Set([">", ">>", ">&", "&>", ">|"]);

/** The simple commands of `command`, in order, with those inside `sh -c`/`bash -c`/`eval` strings after the one that runs them. */
export function simpleCommands(command: string, cwd: string | null = "", depth = 0): SimpleCommand[] {
  const out: SimpleCommand[] = [];
  let current = cwd;
  const stack: (string | null)[] = [];
  let words: string[] = [];
  let globs: string[] = [];
  let reads: string[] = [];
  const flush = () => {
    if (words.length > 0 || globs.length > 0 || reads.length > 0) current = emit(out, words, globs, reads, current, depth);
    words = [];
    globs = [];
    reads = [];
  };
  const entries = tokens(command);
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    if (typeof entry === "string") {
      words.push(entry);
    } else if ("comment" in entry) {
    } else if (entry.op === "glob") {
      globs.push(entry.pattern);
      words.push(entry.pattern);
    } else if (SEPARATORS.has(entry.op)) {
      flush();
    } else if (entry.op === "(" || entry.op === "<(") {
      flush();
      stack.push(current);
    } else if (entry.op === ")") {
      flush();
      if (stack.length > 0) current = stack.pop()!;
    } else if (OUTPUT_REDIRECTS.has(entry.op)) {
      i++; // the target is written, not read
    } else if (entry.op === "<") {
      const next = entries[i + 1];
      if (typeof next === "string") reads.push(next);
      i++;
    }
  }
  flush();
  return out;
}

/**
 * Records one simple command (its wrappers stripped) and returns the directory the next one runs in: `cd`/`pushd`
 * change it, and the strings of `sh -c` and `eval` are read as commands of their own in that directory.
 */
function emit(
  out: SimpleCommand[],
  raw: readonly string[],
  globs: string[],
  reads: string[],
  cwd: string | null,
  depth: number,
): string | null {
  const assignedValues: string[] = [];
  let start = 0;
  for (; start < raw.length; start++) {
    const word = raw[start]!;
    const assignment = /^[A-Za-z_][A-Za-z0-9_]*=/u.exec(word);
    if (assignment) assignedValues.push(word.slice(assignment[0].length));
    else if (KEYWORDS.has(word)) continue;
    else if (word === "env") start = skipOptions(raw, start, ["-u", "--unset", "-C", "--chdir", "-S", "--split-string"]);
    else if (word === "nice") start = skipOptions(raw, start, ["-n", "--adjustment"]);
    else if (word === "timeout")
      start = skipOptions(raw, start, ["-s", "--signal", "-k", "--kill-after"]) + 1; // and the duration
    else break;
  }
  const words = raw.slice(start);
  const name = words[0] ?? "";
  if (name === "cd" || name === "pushd") {
    const target = words.slice(1).find((word) => !word.startsWith("-"));
    return target === undefined ? null : directoryAfterCd(cwd, target);
  }
  out.push({ words, assignedValues, reads, globs, cwd });
  if (depth < MAX_NESTED_DEPTH) {
    if (SHELLS.has(basename(name))) {
      const script = shellCommandString(words);
      if (script !== null) out.push(...simpleCommands(script, cwd, depth + 1));
    } else if (name === "eval" && words.length > 1) {
      out.push(...simpleCommands(words.slice(1).join(" "), cwd, depth + 1));
    }
  }
  return cwd;
}

/** Index of the last word that belongs to wrapper `raw[at]` and its options (`valued` take the next word). */
function skipOptions(raw: readonly string[], at: number, valued: readonly string[]): number {
  let i = at;
  while (i + 1 < raw.length && raw[i + 1]!.startsWith("-")) {
    i++;
    if (valued.includes(raw[i]!)) i++;
  }
  return i;
}

/** The string a shell runs with `-c` (`sh -c 'x'`, `bash -ec 'x'`, `bash -c -- 'x'`), or null. */
function shellCommandString(words: readonly string[]): string | null {
  for (let i = 1; i < words.length; i++) {
    const word = words[i]!;
    if (word === "--") return null;
    if (!word.startsWith("-")) return null;
    if (/^-[A-Za-z]*c[A-Za-z]*$/u.test(word)) {
      const next = words[i + 1] === "--" ? words[i + 2] : words[i + 1];
      return next ?? null;
    }
  }
  return null;
}

/** The directory after `cd target`; null when unknown, and past PATH_MAX (no shell could go there, and a chain of
 *  16,000 `cd a &&` would otherwise cost a walk of the whole path for every later word). */
function directoryAfterCd(cwd: string | null, target: string): string | null {
  if (cwd === null || target === "-" || target.startsWith("~") || target.includes("$")) return null;
  const path = repoPath(cwd, target);
  return path !== null && path.length < PATH_MAX ? path : null;
}

/**
 * `word`, relative to `cwd`, as a path from the top of the repository: `./` and empty segments dropped, `..` collapsed
 * while it stays inside; null for an absolute path, one that leaves the top, or one that is empty. An unknown `cwd`
 * (null) is taken as the top: an extra input only holds more to the base, a missed one lets a change through.
 */
export function repoPath(cwd: string | null, word: string): string | null {
  if (word.startsWith("/") || word.startsWith("~") || word === "") return null;
  const parts = cwd ? cwd.split("/") : [];
  for (const segment of word.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") {
      if (parts.length === 0) return null;
      parts.pop();
    } else {
      parts.push(segment);
    }
  }
  return parts.length > 0 ? parts.join("/") : null;
}

function basename(word: string): string {
  return word.slice(word.lastIndexOf("/") + 1);
}

/**
 * shell-quote's reading of `command`, with `$NAME` kept literal. Unquoted newlines separate commands as `;` does
 * (shell-quote would join the lines); backslash-newline continues a line. What shell-quote throws on (`${`) is read
 * with a plain split on blanks and operators instead.
 */
function tokens(command: string): ParseEntry[] {
  const text = newlinesAsSeparators(command);
  try {
    return parse(text, (name) => `$${name}`) as ParseEntry[];
  } catch {
    const entries: ParseEntry[] = [];
    for (const piece of text.split(/\s+|(&&|\|\||[;&|()])/u)) {
      if (piece === undefined || piece === "") continue;
      entries.push(/^(&&|\|\||[;&|()])$/u.test(piece) ? { op: piece as "&&" } : piece.replace(/^['"]|['"]$/gu, ""));
    }
    return entries;
  }
}

function newlinesAsSeparators(command: string): string {
  if (!command.includes("\n") && !command.includes("#")) return command;
  let out = "";
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < command.length; i++) {
    const ch = command[i]!;
    if (ch === "\\" && quote !== "'") {
      const next = command[i + 1];
      if (next === "\n") {
        i++;
        continue;
      }
      out += ch + (next ?? "");
      i++;
    } else if (quote !== null) {
      if (ch === quote) quote = null;
      out += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else if (ch === "#" && (i === 0 || /[\s;&|()]/u.test(command[i - 1]!))) {
      // A comment runs to the end of its line (shell-quote would take it to the end of the whole script).
      const end = command.indexOf("\n", i);
      if (end === -1) break;
      i = end - 1;
    } else {
      out += ch === "\n" ? " ; " : ch;
    }
  }
  return out;
}
