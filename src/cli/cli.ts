import { ApplyRefusedError, QueueUnavailableError, UsageError } from "../lib/errors.js";
import { type Command, VERSION, isCommand } from "./command-names.js";

/** A command's module: src/cli/commands/<name>.ts, whose `command` runs it and returns the exit code. */
interface CommandModule {
  command(args: readonly string[]): number | Promise<number>;
}

/**
 * Each command loaded only when it runs: `handoff --version` loads this file alone, `handoff list` no pipeline, and
 * only `handoff worker` (and `batch --redis`) loads BullMQ.
 */
const COMMAND_MODULES: Readonly<Record<Command, () => Promise<CommandModule>>> = {
  run: () => import("./commands/run.js"),
  resume: () => import("./commands/resume.js"),
  batch: () => import("./commands/batch.js"),
  enqueue: () => import("./commands/enqueue.js"),
  show: () => import("./commands/show.js"),
  apply: () => import("./commands/apply.js"),
  list: () => import("./commands/list.js"),
  gc: () => import("./commands/gc.js"),
  cache: () => import("./commands/cache.js"),
  backends: () => import("./commands/backends.js"),
  worker: () => import("./commands/worker.js"),
  mcp: () => import("./commands/mcp.js"),
};

/** The CLI: parses argv, runs a command, returns the exit code. Only bin/handoff.js calls process.exit. */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case "-h":
      case "--help":
      case "help": {
        const { COMMAND_HELP, HELP } = await import("./help.js");
        // `handoff help run` is `handoff run --help`.
        process.stdout.write(command === "help" && isCommand(rest[0]) ? COMMAND_HELP[rest[0]] : HELP);
        return command === undefined ? 2 : 0;
      }
      case "-V":
      case "--version":
        process.stdout.write(`${VERSION}\n`);
        return 0;
      default:
        if (!isCommand(command)) throw new UsageError("unknown_command", `unknown command '${command}' (try: handoff --help)`);
        if (asksForHelp(rest)) {
          process.stdout.write((await import("./help.js")).COMMAND_HELP[command]);
          return 0;
        }
        return await (await COMMAND_MODULES[command]()).command(rest);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`handoff: ${error.message}\n`);
      return 2;
    }
    if (error instanceof ApplyRefusedError) {
      process.stderr.write(`handoff: apply refused: ${error.message}\n`);
      return 1;
    }
    if (error instanceof QueueUnavailableError) {
      process.stderr.write(`handoff: ${error.message}\n`);
      return 69;
    }
    process.stderr.write(`handoff: internal error: ${(error as Error).stack ?? error}\n`);
    return 70;
  }
}

/** `-h` or `--help` among a command's options (not after `--`, where it would be task text). */
function asksForHelp(args: readonly string[]): boolean {
  const options = args.indexOf("--") === -1 ? args : args.slice(0, args.indexOf("--"));
  return options.includes("--help") || options.includes("-h");
}
