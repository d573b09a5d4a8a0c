import { askOnTerminal } from "../approval/terminal-prompt.js";
import type { ResumeOverrides } from "../repair/continue-run.js";
import type { RunOptions } from "../run/options.js";
import { ExternalCodingRunner } from "../run/runner.js";
import { type FlagValues, optionsFromFlags } from "../settings/command-line.js";
import { EXIT_CODES } from "../vocabulary/terminal-reasons.js";
import type { RunResult } from "../verdict/result.js";
import { onInterrupt } from "./interrupts.js";
import { progressPrinter } from "./progress.js";

/**
 * The `RunOptions` a `run` or `resume` command line gives: every flag of the settings table in the library's unit at
 * its field (src/settings/), one -b as the backend and several as one candidate per backend, and the terminal's
 * question as the approval unless `--yes` or no terminal to ask on.
 */
export function runOptionsFromFlags(command: "run", values: FlagValues, interactive: boolean): Omit<RunOptions, "task">;
export function runOptionsFromFlags(command: "resume", values: FlagValues, interactive: boolean): ResumeOverrides;
export function runOptionsFromFlags(command: "run" | "resume", values: FlagValues, interactive: boolean): Omit<RunOptions, "task"> {
  const { backend, ...options } = optionsFromFlags(command, values) as Omit<RunOptions, "task" | "backend"> & {
    backend?: readonly string[];
  };
  return {
    // The library takes no default repository: the command line's is -C, else the current directory.
    ...(command === "run" ? { repo: process.cwd() } : {}),
    ...options,
    // One -b is the backend; repeated, a candidate per backend (docs/many-tasks.md).
    ...(backend === undefined ? {} : backend.length > 1 ? { backends: backend } : { backend: backend[0] }),
    approve: values.yes || !interactive ? undefined : askOnTerminal,
  };
}

/**
 * Runs one run (`run`, `resume`) with Ctrl-C wired to its signal, and prints its outcome: result.json with --json,
 * else the verdict, the hint and the run directory. Returns the verdict's exit code.
 */
export async function runAndReport(json: boolean, request: (signal: AbortSignal) => RunOptions): Promise<number> {
  const controller = new AbortController();
  // Built first: a bad option is a usage error before any handler is installed.
  const options = request(controller.signal);
  const stopHandling = onInterrupt(() => {
    process.stderr.write("handoff: interrupted; stopping the agent and writing the run directory (again to force)\n");
    controller.abort();
  });
  try {
    // A candidate's progress lines begin with its number: `[2] agent working…`.
    const candidatePrinters = new Map<number, ReturnType<typeof progressPrinter>>();
    const onCandidateEvent = (k: number, event: Parameters<ReturnType<typeof progressPrinter>>[0]) => {
      if (!candidatePrinters.has(k)) candidatePrinters.set(k, progressPrinter(json, `[${k}] `));
      candidatePrinters.get(k)!(event);
    };
    // The verdict lines as soon as result.json holds them, before the workspaces are removed; --json waits for the
    // whole result, the clean-up's timing included.
    let printed = false;
    const onDecided = json
      ? undefined
      : (decided: RunResult) => {
          printVerdict(decided);
          printed = true;
        };
    const runner = new ExternalCodingRunner({ onEvent: progressPrinter(json), onCandidateEvent, onDecided });
    const result = await runner.run(options);
    if (json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else if (!printed) printVerdict(result);
    return EXIT_CODES[result.terminalReason];
  } finally {
    stopHandling();
  }
}

/** A run's verdict on stdout: the terminal reason and summary, the hint, the winner of a candidates run, the run directory. */
function printVerdict(result: RunResult): void {
  process.stdout.write(`${result.terminalReason}${result.detail ? ` (${result.detail})` : ""}: ${result.summary}\n`);
  if (result.hint) process.stdout.write(`hint: ${result.hint}\n`);
  if (result.candidates)
    process.stdout.write(
      `winner: ${result.winner === null || result.winner === undefined ? "none" : `candidate ${result.winner}`} of ${result.candidates.length}\n`,
    );
  process.stdout.write(`run directory: ${result.runDir}\n`);
}
