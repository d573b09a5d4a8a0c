import { type ParseArgsConfig, parseArgs } from "node:util";
import { UsageError } from "../lib/errors.js";
import { closest } from "../lib/suggest.js";
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

/** The real long option a mistyped one most likely meant (`--verfy`, `--verif`, `--jsn`); none for a short option. */
export function nearestOption(written: string, options: ParseArgsOptionsConfig): string | null {
  if (!written.startsWith("--")) return null;
  const near = closest(written.slice(2), Object.keys(options));
  return near === null ? null : `--${near}`;
}
