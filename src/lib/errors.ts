import type { UsageErrorCode } from "./usage-error-codes.js";

/** Errors that cross a boundary. Outcomes of a run are data (see verdict/decide.ts); these are for bad input and bugs. */

/** Bad option, bad config, or a source handoff will not work on. The CLI exits 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
  readonly code: UsageErrorCode;
  constructor(code: UsageErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/** No TTY to ask on and no `--yes`: nothing was created. The CLI exits 2. */
export class ApprovalRequiredError extends UsageError {
  constructor() {
    super(
      "approval_required",
      "approval needed: run on a terminal to answer the prompt, or pass --yes to let the agent edit the disposable clone",
    );
  }
}

/** The source has uncommitted changes and `--allow-dirty` was not given. */
export class DirtySourceError extends UsageError {
  readonly paths: readonly string[];
  constructor(paths: readonly string[]) {
    const shown = paths.slice(0, 10).join(", ") + (paths.length > 10 ? `, … (${paths.length} in all)` : "");
    super("dirty_source", `the source repository has uncommitted changes (${shown}); commit them or pass --allow-dirty`);
    this.paths = paths;
  }
}

/** `--sandbox bwrap` on a machine where bubblewrap cannot run: nothing was created. The CLI exits 2. */
export class SandboxUnavailableError extends UsageError {
  constructor(reason: string) {
    super("sandbox_unavailable", `--sandbox bwrap was asked for, but bubblewrap cannot run here: ${reason}`);
  }
}

/** A run directory that does not exist or holds no readable result. */
export class RunNotFoundError extends UsageError {
  constructor(what: string, detail?: string) {
    super("run_not_found", `no finished run at ${what}${detail ? `: ${detail}` : ""}`);
  }
}

/**
 * A run's artifact that is not a regular file of the current user (a link, a file of another user, one with a
 * second name, one others may write): `show` will not read it (exit 2); `apply` refuses (exit 1).
 */
export class UntrustedArtifactError extends UsageError {
  constructor(runRef: string, artifact: string, why: string) {
    super("untrusted_artifact", `run ${runRef}: ${artifact} is ${why}; refusing to read it (see docs/run-directory.md)`);
  }
}

/** A write to the run directory failed (ENOSPC, EIO, a replaced temp file): nothing partial was left in place. */
export class ArtifactWriteError extends Error {
  override readonly name = "ArtifactWriteError";
  readonly artifact: string;
  readonly reason: string;
  constructor(artifact: string, reason: string) {
    super(`could not write ${artifact}: ${reason}`);
    this.artifact = artifact;
    this.reason = reason;
  }
}

/** `handoff apply` will not touch the source, and says why. The CLI exits 1. */
export class ApplyRefusedError extends Error {
  override readonly name = "ApplyRefusedError";
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * Publish mode of the GitHub Action will not publish a run's artifact (not verified, tampered with, a branch it did
 * not make), and says why in one line. `code` names the refusal.
 */
export class PublishRefusedError extends Error {
  override readonly name = "PublishRefusedError";
  readonly code: string;
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/** A git call that handoff needed failed. Carries git's own stderr, trimmed. */
export class GitCommandError extends Error {
  override readonly name = "GitCommandError";
  readonly args: readonly string[];
  readonly exitCode: number | null;
  readonly stderr: string;
  constructor(args: readonly string[], exitCode: number | null, stderr: string) {
    const sub = args.find((arg) => !arg.startsWith("-") && !arg.includes("=")) ?? "git";
    super(`git ${sub} failed (exit ${exitCode ?? "signal"}): ${stderr.trim().split("\n").slice(-3).join(" | ")}`);
    this.args = args;
    this.exitCode = exitCode;
    this.stderr = stderr;
  }
}

/**
 * The queue's Redis could not be reached (or was lost) for longer than the retry period ($HANDOFF_REDIS_RETRY_SECONDS,
 * default 60 s). The message names the Redis without its password. The CLI exits 69 (EX_UNAVAILABLE).
 */
export class QueueUnavailableError extends Error {
  override readonly name = "QueueUnavailableError";
  constructor(message: string) {
    super(message);
  }
}
