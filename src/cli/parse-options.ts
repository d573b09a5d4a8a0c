import { type ParseArgsConfig, parseArgs } from "node:util";
import { UsageError } from "../lib/errors.js";
import { escapeControls } from "../vocabulary/display.js";
import type { Command } from "./command-names.js";

export type ParseArgsOptionsConfig = NonNullable<ParseArgsConfig["options"]>;
/** What `parseArgs` returns for a command's options, named so that the declaration can say it. */
export type ParsedOptions<T extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: T; allowPositionals: true; strict: true }>
>;

/**
 * A command's argv parsed strictly against its options. Node's own error for an unknown option is a paragraph whose
 * first line leaves a quote open: it becomes one line that names the option, the command, and the nearest real
 * option when one is close (`handoff: unknown option '--verfy' for 'handoff run' (did you mean --verify?)`).
 */
export function parseOptions<T extends ParseArgsOptionsConfig>(command: Command, args: readonly string[], options: T): ParsedOptions<T> {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: true, strict: true } as const);
  } catch (error) {
    const unknown = (error as NodeJS.ErrnoException).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" ? unknownOption(args, options) : null;
    if (unknown === null) throw new UsageError("bad_option", shown((error as Error).message.split("\n")[0]!, 300));
    const near = nearestOption(unknown, options);
    const hint = near ? `did you mean ${near}?` : `see handoff ${command} --help`;
    throw new UsageError("unknown_option", `unknown option '${shown(unknown, 100)}' for 'handoff ${command}' (${hint})`);
  }
}

/** Text from argv as one printable line: control characters escaped (a newline or an escape sequence is shown, not obeyed), and cut. */
function shown(text: string, max: number): string {
  const escaped = escapeControls(text);
  return escaped.length > max ? `${escaped.slice(0, max)}…` : escaped;
}

/** The first option on the command line (before `--`) that the command does not have, as it was written. */
function unknownOption(args: readonly string[], options: ParseArgsOptionsConfig): string | null {
  const { tokens } = parseArgs({ args: [...args], options, allowPositionals: true, strict: false, tokens: true });
  // A known short option's token carries its long name; an unknown one's, the letter written.
  const token = tokens.find((token) => token.kind === "option" && !Object.hasOwn(options, token.name));
  return token?.kind === "option" ? token.rawName : null;
}

/**
 * The real long option a mistyped one most likely meant: one a prefix of it names (`--verif`), or the closest within
 * two edits that leave more than half of it (`--verfy`, `--jsn`; not `--x` for `--yes`). None for a short option.
 */
export function nearestOption(written: string, options: ParseArgsOptionsConfig): string | null {
  if (!written.startsWith("--")) return null;
  const name = written.slice(2);
  const names = Object.keys(options);
  const prefixed = names.filter((candidate) => name.length >= 3 && candidate.startsWith(name)).sort((a, b) => a.length - b.length);
  if (prefixed.length > 0) return `--${prefixed[0]}`;
  let best: { name: string; distance: number } | null = null;
  for (const candidate of names) {
    const distance = editDistance(name, candidate);
    if (distance <= 2 && distance * 2 < name.length && (best === null || distance < best.distance)) best = { name: candidate, distance };
  }
  return best ? `--${best.name}` : null;
}

/** Levenshtein distance: the fewest single-character insertions, deletions and substitutions from `a` to `b`. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
