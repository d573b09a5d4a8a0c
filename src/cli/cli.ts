import { UsageError } from "../lib/errors.js";
import { COMMAND_EXIT_CODES } from "../vocabulary/command-exit-codes.js";
import { COMMANDS, type Command, VERSION, isCommand } from "./command-names.js";

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
        return command === undefined ? COMMAND_EXIT_CODES.usage : 0;
      }
      case "-V":
      case "--version":
        process.stdout.write(`${VERSION}\n`);
        return 0;
      default:
        if (!isCommand(command)) throw await unknownCommand(command);
        if (options(rest).some((arg) => arg === "--help" || arg === "-h")) {
          process.stdout.write((await import("./help.js")).COMMAND_HELP[command]);
          return 0;
        }
        return await (await COMMAND_MODULES[command]()).command(rest);
    }
  } catch (error) {
    // The library names settings by RunOptions field, the command line by flag (the table loaded only for a usage error).
    // Loaded only on failure, so that `handoff --version` loads this file alone.
    const { reportOf } = await import("./command-failure.js");
    const report = reportOf(error, error instanceof UsageError ? (await import("../settings/setting-names.js")).FLAG_NAMES : undefined);
    process.stderr.write(report.line);
    // A script that asked for JSON gets the error as JSON too: one document on stdout, the same exit code.
    if (options(rest).includes("--json")) process.stdout.write(`${JSON.stringify(report.json)}\n`);
    return report.exitCode;
  }
}

/** A command's options: its arguments before `--` (after it, `--help` or `--json` is task text). */
function options(args: readonly string[]): readonly string[] {
  return args.indexOf("--") === -1 ? args : args.slice(0, args.indexOf("--"));
}

/** `handoff runn`: a usage error naming the command it most likely meant, when one is close. */
async function unknownCommand(command: string): Promise<UsageError> {
  const { closest } = await import("../lib/suggest.js");
  const { escapeControls } = await import("../vocabulary/display.js");
  const shown = escapeControls(command.slice(0, 100));
  const near = closest(command, COMMANDS);
  return new UsageError("unknown_command", `unknown command '${shown}' (${near ? `did you mean ${near}?` : "see handoff --help"})`);
}
