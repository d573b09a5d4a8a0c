import { canAskOnTerminal } from "../../approval/terminal-prompt.js";
import { RUN_OPTIONS } from "../option-tables.js";
import { parseOptions } from "../parse-options.js";
import { runAndReport, runOptionsFromFlags } from "../run-and-report.js";
import { readTask } from "../task-text.js";

/** `handoff run`: one task through the four gates; the verdict's exit code. */
export async function command(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseOptions("run", args, RUN_OPTIONS);
  const task = readTask(positionals, values["task-file"]);
  const interactive = canAskOnTerminal(values["task-file"] === "-");
  return await runAndReport(values.json === true, (signal) => ({ ...runOptionsFromFlags("run", values, interactive), task, signal }));
}
