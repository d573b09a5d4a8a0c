import { sourceTarget } from "../clone/source-repo.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import { sweepCrashedRuns } from "../run-dir/crash-sweep.js";
import { sweepExpiredSessions } from "../repair/session-gc.js";
import { RunDirectory, generateRunId } from "../run-dir/run-dir.js";
import { Redactor, envSecrets } from "../run-dir/redact.js";
import type { RunResult } from "../verdict/result.js";
import { findInputsAtBase, readBaseForInputs } from "../verify/changed-inputs.js";
import { holdoutRecord } from "../verify/holdouts.js";
import type { RunOptions } from "./options.js";
import { preflightRun } from "./preflight.js";
import { PipelineRun, type RunnerHooks } from "./pipeline.js";
import { candidatePlan, runCandidates } from "../many/candidates.js";

export type { RunnerHooks } from "./pipeline.js";

/**
 * The four-gate pipeline: approval, disposable clone + source invariant, patch extraction and validation,
 * verification owned by handoff. Bad input throws a UsageError before anything is created; once a run directory
 * exists, every path ends in a RunResult and a complete run directory (the run itself is pipeline.ts).
 */
export class ExternalCodingRunner {
  readonly #hooks: RunnerHooks;
  constructor(hooks: RunnerHooks = {}) {
    this.#hooks = hooks;
  }

  async run(given: RunOptions): Promise<RunResult> {
    // More than one candidate (`--candidates`, repeated `-b`) is a candidates run: each candidate one run like this.
    const plan = candidatePlan(given);
    if (plan.length > 1)
      return await runCandidates(given, plan, this.#hooks, (options, hooks) => new ExternalCodingRunner(hooks).run(options));
    const request: RunOptions = given.backends ? { ...given, backend: plan[0], backends: undefined } : given;
    const startedAt = new Date();
    const { source, options, backend, dirty, unverified, sandbox, workspaceMode } = await preflightRun(request);
    await sweepCrashedRuns(options.runsDir);
    sweepExpiredSessions(options.runsDir);
    // What decides verification is read from the base before anything is created: the agent's tree never names it.
    const base = await readBaseForInputs(source);
    const inputs = await findInputsAtBase(source, base, {
      commands: [...options.setup, ...options.verify],
      protect: options.protect,
      allowConfig: options.allowConfig,
    });

    const dir = RunDirectory.create(options.runsDir, options.runId ?? generateRunId(startedAt), new Redactor(envSecrets(options.envNames)));
    // Each holdout's files, for the record (result.json names them; their content never leaves memory).
    const holdouts = await Promise.all(options.holdouts.map((holdout) => holdoutRecord(sourceTarget(source), holdout)));
    const warnings = [
      ...(dirty.length > 0 ? [dirtySourceWarning(dirty)] : []),
      ...(unverified.length > 0 ? [unverifiedFilteredWarning(unverified)] : []),
    ];
    const run = new PipelineRun({
      dir,
      source,
      options,
      backend,
      sandbox,
      workspaceMode,
      verificationBase: { base, inputs, holdouts },
      startedAt,
      hooks: this.#hooks,
      warnings,
    });
    try {
      return await run.execute();
    } finally {
      dir.close();
    }
  }
}

/** `--allow-dirty`: the source's uncommitted changes are not part of the clone. */
function dirtySourceWarning(paths: readonly string[]): PolicyFinding {
  return {
    path: "",
    rule: "dirty_source_not_cloned",
    message: `the source had ${paths.length} uncommitted change(s) that are not part of the clone: ${paths.slice(0, 10).join(", ")}`,
  };
}

/** Files under one of the source's own filters that handoff (which runs none of them) could not tell clean or not. */
function unverifiedFilteredWarning(paths: readonly string[]): PolicyFinding {
  return {
    path: "",
    rule: "filtered_source_unverified",
    message: `${paths.length} file(s) of the source use a filter from its git config that handoff does not run, so it could not tell whether they have uncommitted changes (if they do, those are not part of the clone): ${paths.slice(0, 10).join(", ")}`,
  };
}
