/** The version `handoff --version` prints. */
export const VERSION = "0.1.0";

/** The commands, each a file in src/cli/commands/ loaded only when it runs, each with its own help (`handoff <command> --help`). */
export const COMMANDS = ["run", "resume", "batch", "enqueue", "show", "apply", "list", "gc", "cache", "backends", "worker", "mcp"] as const;
export type Command = (typeof COMMANDS)[number];

export function isCommand(word: string | undefined): word is Command {
  return word !== undefined && (COMMANDS as readonly string[]).includes(word);
}
