import * as core from "@actions/core";
import { assertNever } from "../lib/assert-never.js";
import { readInputs } from "./inputs.js";
import { type PublishModeOutcome, publishMode } from "./publish-mode.js";
import { type RunModeOutcome, runMode } from "./run-mode.js";

/**
 * The GitHub Action's entry (action.yml `runs.main`): read the inputs, run the mode, and decide the step. The only
 * place that fails the step (core.setFailed, which sets the exit code): every mode has already written its
 * outputs, summary and artifact by then, failures included.
 */

/** The step's failure line for a run mode outcome, or null when the step succeeds. */
function runModeFailure(outcome: RunModeOutcome): string | null {
  switch (outcome.kind) {
    case "ignored":
      core.notice(`handoff: nothing to do: ${outcome.why}`);
      return null;
    case "invalid":
      return outcome.why;
    case "refused":
      return `handoff refused the run (exit ${outcome.exitCode ?? "none"}): ${outcome.line}`;
    case "unfinished":
      return `handoff ended without a verdict (exit ${outcome.exitCode ?? "none"}): ${outcome.line}`;
    case "finished":
      if (outcome.verdict !== "verified") return `${outcome.verdict} (exit ${outcome.exitCode}): ${outcome.summary.split("\n")[0]}`;
      return outcome.uploadError;
    default:
      return assertNever(outcome);
  }
}

function publishModeFailure(outcome: PublishModeOutcome): string | null {
  switch (outcome.kind) {
    case "published":
      return null;
    case "invalid":
    case "refused":
      return outcome.why;
    default:
      return assertNever(outcome);
  }
}

async function main(): Promise<void> {
  const read = readInputs();
  if (!read.ok) {
    core.setFailed(read.message);
    return;
  }
  const inputs = read.inputs;
  const failure = inputs.mode === "run" ? runModeFailure(await runMode(inputs)) : publishModeFailure(await publishMode(inputs));
  if (failure !== null) core.setFailed(failure);
}

try {
  await main();
} catch (error) {
  // A bug or an environment the action cannot work in: one line for the step, the stack in the log.
  core.info((error as Error).stack ?? String(error));
  core.setFailed(`handoff action: internal error: ${(error as Error).message}`);
}
