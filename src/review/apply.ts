import { ApplyRefusedError, UntrustedArtifactError } from "../lib/errors.js";
import { git } from "../process/git.js";
import { numstatPaths, patchSha256 } from "../patch/patch.js";
import { type LoadedRun, loadPatch, runLabel } from "../run-dir/run-lookup.js";
import { inspectSource, listDirtyPaths, sourceTarget } from "../clone/source-repo.js";

export interface ApplyOutcome {
  readonly repo: string;
  readonly files: readonly string[];
  /** The source had moved past the run's base commit, and the patch still applied cleanly. */
  readonly rebased: boolean;
}

/**
 * `handoff apply`: a verified run's changes.patch onto the source, refusing unless it applies exactly (no fuzz,
 * never --unsafe-paths) and touches no file with uncommitted changes. Applied to the work tree and the index.
 */
export async function applyRun(run: LoadedRun, repo?: string): Promise<ApplyOutcome> {
  const result = run.result;
  const patch = applicablePatch(run);
  const source = await inspectSource(repo ?? result.repo.path);
  const target = sourceTarget(source);
  // git reads the bytes that were hashed, on stdin: never the file again, which could have changed since.
  const touched = numstatPaths((await git(target, ["apply", "--numstat", "-z", "-"], { input: patch })).stdout);
  const dirty = new Set(await listDirtyPaths(source));
  const dirtyTouched = touched.filter((path) => dirty.has(path));
  if (dirtyTouched.length > 0) {
    throw new ApplyRefusedError("dirty_files", `the patch touches files with uncommitted changes: ${dirtyTouched.join(", ")}`);
  }
  const rebased = source.baseCommit !== result.repo.baseCommit;
  // Writing your repository is your git's work: your own filters run here, as in `git apply --index` (G18).
  const withYourFilters = { ...target, config: [] };
  const check = await git(withYourFilters, ["apply", "--check", "--index", "--whitespace=nowarn", "-"], {
    input: patch,
    okExitCodes: [1, 128],
  });
  if (check.exitCode !== 0) {
    const why = check.stderr.trim().split("\n").slice(0, 3).join("; ");
    throw new ApplyRefusedError(
      "does_not_apply",
      `the patch no longer applies cleanly to ${source.topLevel} (HEAD ${source.baseCommit.slice(0, 12)}, run base ${result.repo.baseCommit.slice(0, 12)}): ${why}`,
    );
  }
  await git(withYourFilters, ["apply", "--index", "--whitespace=nowarn", "-"], { input: patch });
  return { repo: source.topLevel, files: touched, rebased };
}

/**
 * "May this run be applied": the bytes of its changes.patch, refused (ApplyRefusedError) unless the run verified, the
 * file is one handoff wrote (never a link or another user's file), and its sha256 is the one result.json records.
 * `apply` and `apply --commit` (commit.ts) act on exactly these bytes, never on the file read again.
 */
export function applicablePatch(run: LoadedRun): Buffer {
  const result = run.result;
  if (result.terminalReason !== "verified") {
    throw new ApplyRefusedError("not_verified", `${runLabel(run)} ended ${result.terminalReason}; only a verified run can be applied`);
  }
  const patch = readPatch(run);
  if (!result.patch || patchSha256(patch) !== result.patch.sha256) {
    throw new ApplyRefusedError(
      "patch_modified",
      "changes.patch does not match the sha256 recorded in result.json; it was modified after the run",
    );
  }
  return patch;
}

/** changes.patch, refused unless it is a regular file of this user: a link or another user's file may be a forgery. */
function readPatch(run: LoadedRun): Buffer {
  try {
    return loadPatch(run);
  } catch (error) {
    if (error instanceof UntrustedArtifactError) throw new ApplyRefusedError("untrusted_artifact", error.message);
    throw error;
  }
}
