import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as core from "@actions/core";
import { z } from "zod";
import { packageRoot } from "../lib/package-root.js";
import { runProcess } from "../process/process.js";
import { renderReport } from "../review/report.js";
import { type LoadedRun, loadRun } from "../run-dir/run-lookup.js";
import { EXIT_CODES } from "../vocabulary/terminal-reasons.js";
import { assertNever } from "../lib/assert-never.js";
import { uploadRunDir } from "./artifact.js";
import {
  type EnvironmentCachePlan,
  type EnvironmentRestore,
  planEnvironmentCache,
  restoreEnvironment,
  saveEnvironment,
} from "./environment-cache.js";
import { taskSource } from "./event-task.js";
import type { RunInputs } from "./inputs.js";
import { writeStepSummary } from "./summary.js";

/**
 * Run mode: `handoff run` as a child process in the job's checkout, its run directory uploaded as the artifact, its
 * report in the step summary, its verdict in the outputs. Nothing here writes to the repository or to GitHub's API:
 * the job needs only `contents: read` (the artifact goes to the results service with the job's runtime token).
 */

/** The CLI of the same clone as this action (run from action/main.js or dist/src/action/): its bin/handoff.js, built with `npm run build`. */
function handoffBin(): string | null {
  const root = packageRoot();
  return root === null ? null : join(root, "bin", "handoff.js");
}

/** The runner sends SIGINT on cancel, SIGTERM 7.5 s later: the CLI gets its SIGTERM and that long to finish the run directory. */
const CANCEL_GRACE_MS = 7000;

/** What a run mode step did; main.ts turns it into the step's success or its one-line failure. */
export type RunModeOutcome =
  /** Not a request to handoff (a comment without /handoff): nothing ran. */
  | { readonly kind: "ignored"; readonly why: string }
  /** The task or the job cannot be run: nothing ran. */
  | { readonly kind: "invalid"; readonly why: string }
  /** The CLI refused the options before making a run directory (exit 2): its one line. */
  | { readonly kind: "refused"; readonly exitCode: number | null; readonly line: string }
  /** The run ended with a verdict in result.json. */
  | {
      readonly kind: "finished";
      readonly verdict: string;
      readonly exitCode: number;
      readonly runId: string;
      readonly summary: string;
      readonly uploadError: string | null;
    }
  /** The CLI ended without a verdict (a crash): what its run directory holds was uploaded. */
  | { readonly kind: "unfinished"; readonly exitCode: number | null; readonly line: string; readonly uploadError: string | null };

/** The variables the CLI does not need and must not hold: the inputs, and the job's tokens for GitHub's services. */
const WITHHELD = /^(INPUT_|ACTIONS_RUNTIME_|ACTIONS_RESULTS_URL$|ACTIONS_CACHE_URL$|ACTIONS_ID_TOKEN_REQUEST_)/;

function cliEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !WITHHELD.test(name)) env[name] = value;
  return env;
}

/** The last line of the CLI's stderr that says something: its usage error, or the end of a crash's trace. */
function lastLine(stderr: string): string {
  const lines = stderr.split("\n").filter((line) => line.trim() !== "");
  return lines.at(-1)?.trim() ?? "";
}

const JsonLine = z.looseObject({ runDir: z.string() });

/** The run directory the CLI reported on stdout, else the one directory it made in this step's fresh runs directory. */
function findRunDir(stdout: string, runsDir: string): string | null {
  try {
    const parsed = JsonLine.safeParse(JSON.parse(stdout));
    if (parsed.success && existsSync(parsed.data.runDir)) return parsed.data.runDir;
  } catch {
    // not JSON: the CLI ended before printing its result
  }
  const made = readdirSync(runsDir, { withFileTypes: true }).filter((entry) => entry.isDirectory());
  return made.length === 1 ? join(runsDir, made[0]!.name) : null;
}

async function upload(name: string, runDir: string): Promise<string | null> {
  try {
    const uploaded = await uploadRunDir(name, runDir);
    core.info(
      `uploaded the run directory as artifact ${name} (${uploaded.files} files${uploaded.id !== undefined ? `, id ${uploaded.id}` : ""})`,
    );
    return null;
  } catch (error) {
    const message = `the run directory could not be uploaded as artifact ${name}: ${(error as Error).message}`;
    core.error(message);
    return message;
  }
}

async function summarize(markdown: string): Promise<void> {
  try {
    const written = await writeStepSummary(markdown);
    if (written.kind === "no_summary_file") core.info("no $GITHUB_STEP_SUMMARY: the report is only in the artifact");
  } catch (error) {
    core.warning(`the step summary could not be written: ${(error as Error).message}`);
  }
}

/** The markdown report; a report that cannot be made (an unreadable patch) must not keep the artifact from being uploaded. */
function report(run: LoadedRun): string {
  try {
    return renderReport(run, "markdown");
  } catch (error) {
    return `**${run.result.terminalReason}**: ${run.result.summary}\n\nThe report could not be made (${(error as Error).message}); the run directory is in the artifact.\n`;
  }
}

/** The environment cache's plan; one it cannot make (an unreadable .handoff.json) is the run's to report, not the cache's. */
async function planEnvironment(workspace: string, cliArgs: readonly string[]): Promise<EnvironmentCachePlan> {
  try {
    return await planEnvironmentCache(workspace, cliArgs, cliEnvironment());
  } catch (error) {
    return { kind: "skipped", why: (error as Error).message.split("\n")[0]! };
  }
}

function restoreFailed(error: unknown): EnvironmentRestore {
  return { kind: "skipped", why: `the Actions cache could not be read: ${(error as Error).message.split("\n")[0]}` };
}

function describeRestore(key: string, restore: EnvironmentRestore): string {
  const named = `base environment ${key.slice(0, 12)}`;
  switch (restore.kind) {
    case "restored":
      return `${named} restored from the Actions cache (${restore.cacheKey}); the run checks it before it takes it`;
    case "missed":
      return `${named} is not in the Actions cache: the run builds it, and this step saves it after the run`;
    case "refused":
      return `${named} from the Actions cache (${restore.cacheKey}) refused: ${restore.why}; the run builds it again`;
    case "skipped":
      return `${named}: the Actions cache is not used (${restore.why})`;
    default:
      return assertNever(restore);
  }
}

export async function runMode(inputs: RunInputs): Promise<RunModeOutcome> {
  const source = taskSource(inputs.task);
  if (source.kind !== "task") return source;
  const workspace = process.env.GITHUB_WORKSPACE;
  if (!workspace) return { kind: "invalid", why: "GITHUB_WORKSPACE is not set: run mode runs in a job that checked out the repository" };
  const bin = handoffBin();
  if (bin === null || !existsSync(join(bin, "..", "..", "dist", "src", "cli", "cli.js")))
    return {
      kind: "invalid",
      why: "run mode starts the handoff CLI of the checkout the action runs from, and it is not built: check out handoff and run `npm ci --ignore-scripts && npm run build` in it before `uses: ./<that path>` (docs/github.md)",
    };
  // A fresh runs directory per step, outside the checkout: the run directory is then the only one in it.
  const runsDir = mkdtempSync(join(process.env.RUNNER_TEMP || tmpdir(), "handoff-runs-"));
  core.info(`handoff run in ${workspace} (task from the ${source.from}: ${source.text.split("\n")[0]!.slice(0, 120)})`);

  const plan = await planEnvironment(workspace, inputs.cliArgs);
  if (plan.kind === "planned") core.info(describeRestore(plan.key, await restoreEnvironment(plan).catch(restoreFailed)));

  const cancel = new AbortController();
  const onSignal = () => cancel.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let stdout = "";
  let stderr = "";
  const ended = await runProcess({
    file: process.execPath,
    // The task on stdin: a comment can be longer than one argument may be.
    args: [bin, "run", "--yes", "--json", "--runs-dir", runsDir, "--task-file", "-", ...inputs.cliArgs],
    cwd: workspace,
    env: cliEnvironment(),
    stdin: source.text,
    signal: cancel.signal,
    graceMs: CANCEL_GRACE_MS,
    onStdout: (chunk) => {
      stdout += chunk.toString("utf8");
    },
    // The progress lines go to the job's log as they come.
    onStderr: (chunk) => {
      process.stderr.write(chunk);
      stderr = (stderr + chunk.toString("utf8")).slice(-64 * 1024);
    },
  });
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  if (ended.spawnError) return { kind: "invalid", why: `handoff could not be started (${ended.spawnError.message})` };

  const runDir = findRunDir(stdout, runsDir);
  if (runDir === null) {
    const line = lastLine(stderr) || `handoff run ended with exit ${ended.exitCode ?? ended.signal} and no run directory`;
    core.setOutput("exit-code", String(ended.exitCode ?? ""));
    await summarize(`**handoff refused the run** (exit ${ended.exitCode ?? ended.signal}): ${line}\n`);
    return { kind: "refused", exitCode: ended.exitCode, line };
  }
  core.setOutput("run-dir", runDir);
  if (!existsSync(join(runDir, "result.json"))) {
    const line = lastLine(stderr) || `handoff run ended with exit ${ended.exitCode ?? ended.signal} before writing result.json`;
    core.setOutput("exit-code", String(ended.exitCode ?? ""));
    await summarize(`**handoff ended without a verdict** (exit ${ended.exitCode ?? ended.signal}): ${line}\n`);
    return { kind: "unfinished", exitCode: ended.exitCode, line, uploadError: await upload(inputs.artifactName, runDir) };
  }

  let run: LoadedRun;
  try {
    run = loadRun(runDir);
  } catch (error) {
    const line = `result.json of ${runDir} cannot be read: ${(error as Error).message}`;
    await summarize(`**handoff ended without a readable verdict**: ${line}\n`);
    return { kind: "unfinished", exitCode: ended.exitCode, line, uploadError: await upload(inputs.artifactName, runDir) };
  }
  const result = run.result;
  core.setOutput("verdict", result.terminalReason);
  const exitCode = EXIT_CODES[result.terminalReason];
  core.setOutput("exit-code", String(exitCode));
  core.setOutput("run-id", result.runId);
  core.setOutput("patch-sha256", result.patch?.sha256 ?? "");
  await summarize(report(run));
  const uploadError = await upload(inputs.artifactName, runDir);
  if (plan.kind === "planned") {
    const saved = await saveEnvironment(plan, result.environment).catch(
      (error: unknown) => ({ kind: "not_saved", why: (error as Error).message }) as const,
    );
    core.info(
      saved.kind === "saved"
        ? `base environment ${plan.key.slice(0, 12)} saved to the Actions cache as ${saved.cacheKey}`
        : `base environment ${plan.key.slice(0, 12)} not saved: ${saved.why}`,
    );
  }
  return { kind: "finished", verdict: result.terminalReason, exitCode, runId: result.runId, summary: result.summary, uploadError };
}
