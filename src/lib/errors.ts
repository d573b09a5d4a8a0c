/** Errors that cross a boundary. Outcomes of a run are data (see verdict/decide.ts); these are for bad input and bugs. */

/** Every usage error's code, each listed in docs/cli.md ("Usage errors"; test/error-codes.test.ts checks the table). */
export const USAGE_ERROR_CODES = [
  "agent_cmd_without_command",
  "approval_required",
  "argument_too_large",
  "backend_and_backends",
  "bad_allow_config",
  "bad_arguments",
  "bad_batch_id",
  "bad_branch",
  "bad_cache_limit",
  "bad_candidate",
  "bad_directory",
  "bad_env_name",
  "bad_expose",
  "bad_format",
  "bad_glob",
  "bad_holdout",
  "bad_junit_path",
  "bad_number",
  "bad_option",
  "bad_queue",
  "bad_redis_url",
  "bad_remote",
  "bad_run_id",
  "bad_sandbox",
  "bad_egress_blocked",
  "bad_allow_net",
  "allow_net_any_in_file",
  "bad_test_edits",
  "bad_workspace_mode",
  "bare_repository",
  "base_moved",
  "batch_exists",
  "batch_file",
  "batch_not_run",
  "batch_file_too_large",
  "bin_with_backends",
  "bin_with_command",
  "bin_without_backend",
  "cache_dir_inside_repo",
  "cache_untrusted",
  "candidates_run",
  "cli_homes_inside_repo",
  "dirty_source",
  "empty_batch",
  "empty_task",
  "fixed_by_user",
  "holdouts_differ",
  "holdouts_needed",
  "inside_git_dir",
  "invalid_config",
  "jobs_with_redis",
  "jobs_without_candidates",
  "missing_agent_cmd",
  "no_backends",
  "no_finished_run",
  "no_head",
  "no_redis",
  "no_repo",
  "no_repository",
  "no_session_id",
  "no_task",
  "no_valid_task",
  "no_verify_command",
  "no_verify_with_baseline",
  "no_verify_with_holdout",
  "no_verify_with_verify",
  "not_a_candidates_run",
  "not_a_repository",
  "nul_in_argument",
  "overlay_unavailable",
  "patch_modified",
  "queue_without_redis",
  "repo_not_allowed",
  "repository_owned_by_another_user",
  "request_unreadable",
  "run_exists",
  "run_not_found",
  "runs_dir_inside_repo",
  "runs_dir_unwritable",
  "sandbox_unavailable",
  "session_expired",
  "session_gone",
  "session_not_kept",
  "session_not_ours",
  "source_gone",
  "source_unreadable",
  "task_file",
  "task_nul",
  "task_too_large",
  "too_many_candidates",
  "two_tasks",
  "unknown_backend",
  "unknown_command",
  "unknown_option",
  "unknown_subcommand",
  "unsupported_filter",
  "untrusted_artifact",
  "worker_option_with_redis",
  "workspace_inside_repo",
] as const;
export type UsageErrorCode = (typeof USAGE_ERROR_CODES)[number];

/**
 * How a message names settings on one surface: the library by `RunOptions` field (`timeoutMs`), the CLI by flag
 * (`--timeout`, src/settings/setting-names.ts).
 */
export interface SettingNames {
  readonly surface: "library" | "command line";
  readonly name: (field: string) => string;
}

/** A message that names settings, said on whichever surface shows it. */
export type SettingWords = (names: SettingNames) => string;

/** The library's names: each setting by its `RunOptions` field. */
export const FIELD_NAMES: SettingNames = { surface: "library", name: (field) => field };

/**
 * Bad option, bad config, or a source handoff will not work on. The CLI exits 2. `message` names settings by their
 * `RunOptions` fields; `saying` gives the same message with another surface's names (the CLI's flags).
 */
export class UsageError extends Error {
  override readonly name = "UsageError";
  readonly code: UsageErrorCode;
  readonly #words: SettingWords;
  constructor(code: UsageErrorCode, message: string | SettingWords, options?: ErrorOptions) {
    const words = typeof message === "string" ? () => message : message;
    super(words(FIELD_NAMES), options);
    this.code = code;
    this.#words = words;
  }

  /** The message with the settings it names said by `names` (the CLI's: flags). */
  saying(names: SettingNames): string {
    return this.#words(names);
  }
}

/** No one to ask and no approval given: nothing was created. The CLI exits 2. */
export class ApprovalRequiredError extends UsageError {
  constructor() {
    super("approval_required", ({ surface, name }) =>
      surface === "library"
        ? "approval required: set yes: true, or pass an approve callback that asks, to let the agent edit the disposable clone"
        : `approval needed: run on a terminal to answer the prompt, or pass ${name("yes")} to let the agent edit the disposable clone`,
    );
  }
}

/** The source has uncommitted changes and `allowDirty` (`--allow-dirty`) was not given. */
export class DirtySourceError extends UsageError {
  readonly paths: readonly string[];
  constructor(paths: readonly string[]) {
    const shown = paths.slice(0, 10).join(", ") + (paths.length > 10 ? `, … (${paths.length} in all)` : "");
    super("dirty_source", ({ surface, name }) => {
      const allow = surface === "library" ? `set ${name("allowDirty")}: true` : `pass ${name("allowDirty")}`;
      return `the source repository has uncommitted changes (${shown}); commit them or ${allow}`;
    });
    this.paths = paths;
  }
}

/** `sandbox: "bwrap"` (`--sandbox bwrap`) on a machine where bubblewrap cannot run: nothing was created. The CLI exits 2. */
export class SandboxUnavailableError extends UsageError {
  constructor(reason: string) {
    super("sandbox_unavailable", ({ surface, name }) => {
      const asked = surface === "library" ? `${name("sandbox")}: "bwrap"` : `${name("sandbox")} bwrap`;
      return `${asked} was asked for, but bubblewrap cannot run here: ${reason}`;
    });
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
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
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

/** `apply --commit` without a git identity (user.name, user.email) to commit as. The CLI exits 78 (EX_CONFIG). */
export class NoGitIdentityError extends Error {
  override readonly name = "NoGitIdentityError";
  readonly code = "no_identity";
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

/** `bullmq` or `ioredis`, optional peer dependencies of the package, is not installed: the queue cannot start. The CLI exits 69. */
export class QueuePackagesMissingError extends QueueUnavailableError {
  constructor(missing: string, install: string) {
    super(`the queue needs ${missing}, which is not installed (an optional peer dependency of agent-handoff): ${install}`);
  }
}
