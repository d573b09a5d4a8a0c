import { canAskOnTerminal } from "../../approval/terminal-prompt.js";
import { UsageError } from "../../lib/errors.js";
import { continueRun } from "../../repair/continue-run.js";
import { RESUME_OPTIONS } from "../option-tables.js";
import { parseOptions } from "../parse-options.js";
import { runAndReport, runOptionsFromFlags } from "../run-and-report.js";
import { readTask } from "../task-text.js";

const USAGE = "handoff resume <run-id|run-dir> [options] [--] <instruction...>";

/** `handoff resume`: a new run that continues a finished run's kept session with the user's instruction. */
export async function command(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseOptions("resume", args, RESUME_OPTIONS);
  const [ref, ...words] = positionals;
  if (ref === undefined) throw new UsageError("bad_arguments", `usage: ${USAGE}`);
  const instruction = readTask(words, values["task-file"], USAGE);
  const interactive = canAskOnTerminal(values["task-file"] === "-");
  return await runAndReport(values.json === true, (signal) =>
    continueRun(ref, instruction, { ...runOptionsFromFlags("resume", values, interactive), signal }),
  );
}
