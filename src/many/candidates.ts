import { join } from "node:path";
import { resolveBackend } from "../../backends/index.js";
import type { ExternalAgentBackend } from "../agent/backend.js";
import { approvalQuestion } from "../approval/approval.js";
import { compareSnapshots, takeSourceSnapshot } from "../clone/source-snapshot.js";
import { UsageError } from "../lib/errors.js";
import type { RunOptions } from "../run/options.js";
import { preflightRun } from "../run/preflight.js";
import type { RunnerHooks } from "../run/pipeline.js";
import { sweepCrashedRuns } from "../run-dir/crash-sweep.js";
import { Redactor, envSecrets } from "../run-dir/redact.js";
import { RunDirectory, currentOwner, generateRunId } from "../run-dir/run-dir.js";
import type { RunResult } from "../verdict/result.js";
import { CANDIDATES_RECORD, candidatesResult, finishCandidatesRun } from "./candidates-result.js";

/** The most candidates one run may have (`--candidates` times the backends): each is a whole run. */
export const MAX_CANDIDATES = 20;
/** `--jobs` when not given: every candidate at once, but no more than this many. */
export const DEFAULT_MAX_JOBS = 4;

/** The backend each candidate runs, k = 1…N: each backend in the order given, `candidates` times. */
export type CandidatePlan = readonly (ExternalAgentBackend | string | undefined)[];

/**
 * The candidates a request asks for, checked: `candidates` (1…MAX_CANDIDATES) times each of `backends` (or the one
 * `backend`). One candidate is a plain run; more are a candidates run (runCandidates).
 */
export function candidatePlan(request: RunOptions): CandidatePlan {
  const whole = (field: "candidates" | "jobs", value: number | undefined) => {
    if (value !== undefined && (!Number.isInteger(value) || value <= 0))
      throw new UsageError("bad_number", ({ name }) => `${name(field)} must be a positive whole number`);
    return value;
  };
  const each = whole("candidates", request.candidates) ?? 1;
  whole("jobs", request.jobs);
  if (request.backends !== undefined && request.backend !== undefined)
    throw new UsageError("backend_and_backends", "give the backends as a list (`backends`, repeated -b) or one `backend`, not both");
  if (request.backends !== undefined && request.backends.length === 0) throw new UsageError("no_backends", "`backends` is empty");
  const backends = request.backends ?? [request.backend];
  if (request.bin !== undefined && new Set(backends.map((backend) => (typeof backend === "object" ? backend : String(backend)))).size > 1)
    throw new UsageError(
      "bin_with_backends",
      ({ surface, name }) =>
        `${name("bin")} names one agent CLI's executable: with more than one ${surface === "library" ? "backend" : "-b"}, put each CLI on PATH instead`,
    );
  if (each * backends.length > MAX_CANDIDATES)
    throw new UsageError(
      "too_many_candidates",
      ({ name }) =>
        `${each * backends.length} candidates (${backends.length} backend(s) × ${name("candidates")} ${each}) is more than ${MAX_CANDIDATES}, the most one run may have`,
    );
  const plan = backends.flatMap((backend) => Array.from({ length: each }, () => backend));
  if (request.jobs !== undefined && plan.length === 1)
    throw new UsageError("jobs_without_candidates", ({ surface, name }) =>
      surface === "library"
        ? `${name("jobs")} is how many candidates run at once, and this run has one: set ${name("candidates")} or more backends`
        : `${name("jobs")} is how many candidates run at once, and this run has one: add ${name("candidates")} N or another -b`,
    );
  return plan;
}

/**
 * A best-of-N run (docs/many-tasks.md#best-of-n-candidates): the request checked once, approval asked once for all,
 * then each candidate a whole run through ExternalCodingRunner in `<run>/candidates/<k>/` (every gate its own),
 * `--jobs` at a time, one signal cancelling all. The run's result.json is the winner's verdict (src/many/winner.ts)
 * with every candidate listed; a changed source repository, seen by any candidate or between their own checks by
 * the snapshots taken before and after them all, ends the whole run `source_repository_changed` with no winner.
 */
/** One whole run with its own hooks: `ExternalCodingRunner.run`, handed in by the runner (which calls this module). */
export type RunOne = (request: RunOptions, hooks: RunnerHooks) => Promise<RunResult>;

export async function runCandidates(request: RunOptions, plan: CandidatePlan, hooks: RunnerHooks, runOne: RunOne): Promise<RunResult> {
  const startedAt = new Date();
  // Every check a candidate's own run makes before it creates anything, made here first: a bad input is a usage error
  // before the run's directory exists, never a directory left without a verdict.
  const { source, options } = await preflightRun({ ...request, backend: plan[0], backends: undefined, candidates: undefined });
  const names = plan.map((backend) => checkedBackend(backend ?? options.backendName, request).name);
  await sweepCrashedRuns(options.runsDir);
  const dir = RunDirectory.create(options.runsDir, options.runId ?? generateRunId(startedAt), new Redactor(envSecrets(options.envNames)));
  try {
    // Who runs it and how many candidates it has: what the crash sweep needs to finish it if this handoff dies.
    dir.writeJson(CANDIDATES_RECORD, { owner: currentOwner(), total: plan.length, startedAt: startedAt.toISOString() });
    dir.event({
      type: "run.started",
      runId: dir.runId,
      repo: source.topLevel,
      baseCommit: source.baseCommit,
      backend: [...new Set(names)].join(","),
    });
    // Asked once, about all of them: every candidate's own question gets this one answer.
    const ask = request.approve;
    let answer: Promise<boolean> | undefined;
    const question = approvalQuestion({
      backendName: `${plan.length} candidates (${[...new Set(names)].join(", ")})`,
      repo: source.topLevel,
      baseCommit: source.baseCommit,
    });
    const approve = ask && (() => (answer ??= ask(question)));
    // The candidates' own checks cover their own runs; this pair covers the time between them too.
    const before = await takeSourceSnapshot(source);
    const jobs = request.jobs ?? Math.min(plan.length, DEFAULT_MAX_JOBS);
    const results: RunResult[] = [];
    let next = 0;
    const worker = async () => {
      while (next < plan.length) {
        const index = next++;
        const k = index + 1;
        const onEvent = hooks.onCandidateEvent
          ? (event: Parameters<typeof hooks.onCandidateEvent>[1]) => hooks.onCandidateEvent!(k, event)
          : hooks.onEvent;
        results[index] = await runOne(
          {
            ...request,
            backend: plan[index],
            backends: undefined,
            candidates: undefined,
            jobs: undefined,
            candidate: k,
            approve,
            // Checked once, above: a source made dirty by then was changed during the run, which the snapshots catch.
            allowDirty: true,
            runsDir: join(dir.path, "candidates"),
            runId: String(k),
          },
          { onEvent },
        );
      }
    };
    await Promise.all(Array.from({ length: Math.min(jobs, plan.length) }, worker));
    const between = compareSnapshots(before, await takeSourceSnapshot(source));
    const entries = results.map((result, index) => ({ k: index + 1, result }));
    const result = candidatesResult(dir, startedAt, entries, between);
    return finishCandidatesRun(dir, result, entries);
  } finally {
    dir.close();
  }
}

/** The backend a candidate names, resolved now so that a bad one is a usage error before anything is created. */
function checkedBackend(backend: ExternalAgentBackend | string, request: RunOptions): ExternalAgentBackend {
  return typeof backend === "object" ? backend : resolveBackend({ name: backend, agentCmd: request.agentCmd, bin: request.bin });
}
