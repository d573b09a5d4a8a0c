import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import type { SourceRepo } from "../clone/source-repo.js";
import { workTreeIn } from "../clone/workspace.js";
import { type SettingWords, UsageError, type UsageErrorCode } from "../lib/errors.js";
import { patchSha256 } from "../patch/patch.js";
import type { RequestJson } from "../run-dir/artifacts/request.js";
import { runNames } from "../vocabulary/run-names.js";
import { type LoadedRun, loadPatch, loadRun, readRequest } from "../run-dir/run-lookup.js";
import type { ResolvedOptions, RunOptions } from "../run/options.js";
import type { ContinueFrom } from "./continue-from.js";
import { keptHomeOf } from "./kept-home.js";
import { inheritedSettings } from "../settings/request-fields.js";
import type { Setting } from "../settings/settings.js";

/** The settings `handoff resume` takes again (rows with resume help in src/settings/settings.ts). */
type ResumeSetting = Exclude<Extract<Setting, { help: { resume: unknown } }>["option"], null>;

/** What `handoff resume` may set again; everything else comes from the earlier run's request.json. */
export type ResumeOverrides = Pick<RunOptions, Exclude<ResumeSetting, "runsDir"> | "approve" | "feedback" | "signal"> & {
  /** Where the earlier run is looked up by id, and where the new run goes (default: the earlier run's runs directory). */
  readonly runsDir?: string;
};

/** A finished run that cannot be continued: one line that says why (and what to do), exit 2, nothing created. */
export class CannotContinueError extends UsageError {
  constructor(code: UsageErrorCode, run: string, why: string | SettingWords) {
    super(code, (names) => `cannot resume run ${run}: ${typeof why === "string" ? why : why(names)}`);
  }
}

/**
 * `handoff resume`: the options of a new run that continues the recorded session of run `ref` with `instruction`.
 * The new run inherits the earlier one's settings from its request.json (repository, backend and agent, checks,
 * patch rules, limits, containment, --env names); `given` wins where it sets something. Refuses (a UsageError)
 * when the run cannot be continued: its session was not kept or is gone, a CLI backend's session id never arrived,
 * its changes.patch is not the one result.json names, its source is gone. The runner checks the rest against the
 * source once it has it (checkContinuation).
 */
export function continueRun(ref: string, instruction: string, given: ResumeOverrides = {}): RunOptions {
  const run = loadRun(ref, given.runsDir);
  const { result } = run;
  const name = result.runId;
  if (result.candidates)
    throw new CannotContinueError(
      "candidates_run",
      name,
      `it is a candidates run; resume one of its candidates instead: handoff resume ${join(run.dir, "candidates")}/<k> (k = 1…${result.candidates.length})`,
    );
  const request = readRequest(run.dir);
  if (request === null || request.runId !== result.runId)
    throw new CannotContinueError("request_unreadable", name, "its request.json is missing or not valid, so its settings are unknown");
  if (!existsSync(request.repo.path))
    throw new CannotContinueError("source_gone", name, `its source repository ${request.repo.path} is gone`);
  const patch = loadPatch(run);
  const recorded = result.patch?.sha256 ?? null;
  if (recorded === null ? patch.length > 0 : patchSha256(patch) !== recorded)
    throw new CannotContinueError(
      "patch_modified",
      name,
      "changes.patch does not match the sha256 recorded in result.json; it was modified after the run",
    );
  const recordedHoldouts = (request.holdouts ?? []).map((holdout) => holdout.sha256);
  if (recordedHoldouts.length > 0 && (given.holdoutPatches?.length ?? 0) === 0)
    throw new CannotContinueError(
      "holdouts_needed",
      name,
      ({ name }) =>
        `it verified with ${recordedHoldouts.length} held-out patch(es); give the same file(s) again with ${name("holdoutPatches")} (request.json records only their sha256)`,
    );
  const continueFrom: ContinueFrom = {
    runId: result.runId,
    runDir: run.dir,
    sessionId: lastSessionId(run),
    cwd: earlierWorkTree(request),
    home: keptHome(run, request),
    patch,
    baseCommit: request.repo.baseCommit,
    holdouts: recordedHoldouts,
  };
  const defined = Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined));
  return {
    ...inheritedOptions(request),
    runsDir: dirname(run.dir),
    ...defined,
    task: instruction,
    continueFrom,
  };
}

/**
 * The checks that need the source as the runner found it, before anything is created: its HEAD is still the earlier
 * run's base (the patch is applied to a clone of it), and the held-out patches given are the ones the run recorded.
 */
export function checkContinuation(source: SourceRepo, options: ResolvedOptions): void {
  const earlier = options.continueFrom;
  if (earlier === null) return;
  if (source.baseCommit !== earlier.baseCommit)
    throw new CannotContinueError(
      "base_moved",
      earlier.runId,
      `the source repository's HEAD is at ${source.baseCommit.slice(0, 12)} now, no longer at the run's base commit ${earlier.baseCommit.slice(0, 12)}; check that commit out again (git -C ${source.topLevel} switch --detach ${earlier.baseCommit}, or the branch that was at it) to resume`,
    );
  const given = options.holdouts.map((holdout) => holdout.sha256).sort();
  const recorded = [...new Set(earlier.holdouts)].sort();
  if (given.join() !== recorded.join())
    throw new CannotContinueError(
      "holdouts_differ",
      earlier.runId,
      ({ name }) =>
        `the ${name("holdoutPatches")} files given (${given.length}) are not the ${recorded.length} the run verified with (compared by sha256)`,
    );
}

/**
 * The settings of the earlier run, as its request.json recorded them after `.handoff.json` and the defaults: every
 * setting the table marks inherited (src/settings/settings.ts), and the rules that span several.
 */
function inheritedOptions(request: RequestJson): Omit<RunOptions, "task"> {
  return {
    ...(inheritedSettings(request) as Omit<RunOptions, "task">),
    repo: request.repo.path,
    // --no-verify is inherited as it was given; its empty verify list is not a list of commands.
    verify: request.noVerify ? undefined : request.commands?.verify,
    cacheDir: request.cacheDir,
  };
}

/** The session the run's last attempt reported (or, when that one reported none, the latest an attempt did). */
function lastSessionId(run: LoadedRun): string | null {
  const attempts = run.result.attempts ?? [];
  return run.result.backend.sessionId ?? [...attempts].reverse().find((attempt) => attempt.sessionId !== null)?.sessionId ?? null;
}

/** Where the earlier run's agent worked (removed by now): claude, pi and omp key a session by it. */
function earlierWorkTree(request: RequestJson): string {
  const names = request.nonce && request.workspacesDir ? runNames(request.runId, request.nonce) : null;
  return names && request.workspacesDir ? workTreeIn(join(request.workspacesDir, names.workspace)) : request.repo.path;
}

/**
 * The kept CLI home the new run moves in. A CLI backend's session lives there: without it, or without the session id
 * it reported, there is nothing to continue. The command backend keeps no session: its resume runs the command again
 * on the earlier patch, and a home it kept (`--keep-session`) is moved in only when it is there.
 */
function keptHome(run: LoadedRun, request: RequestJson): string | null {
  const name = run.result.runId;
  const found = keptHomeOf(name, run.result.session, request);
  const command = request.backend.name === "command";
  switch (found.kind) {
    case "kept":
      if (found.expired && !command)
        throw new CannotContinueError(
          "session_expired",
          name,
          `its kept session expired at ${found.keptUntil ?? "an unreadable date"}; start a new run`,
        );
      if (!command && lastSessionId(run) === null)
        throw new CannotContinueError(
          "no_session_id",
          name,
          `the ${request.backend.name} agent never reported a session id, so there is no session to continue`,
        );
      return found.expired ? null : found.home;
    case "not_kept":
      if (command) return null;
      throw new CannotContinueError(
        "session_not_kept",
        name,
        ({ name }) =>
          `it did not keep its session; only a run started with ${name("keepSession")} can be resumed (start a new run, with ${name("keepSession")} to resume that one later)`,
      );
    case "gone":
      if (command) return null;
      throw new CannotContinueError(
        "session_gone",
        name,
        `its kept session ${found.home} is gone: it was already continued by handoff resume, or expired and removed (handoff gc)`,
      );
    case "not_ours":
      throw new CannotContinueError(
        "session_not_ours",
        name,
        `its recorded session home ${found.home} is not one handoff kept (${found.why})`,
      );
  }
}
