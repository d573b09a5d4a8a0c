import { ApplyRefusedError, FIELD_NAMES, NoGitIdentityError, QueueUnavailableError, type SettingNames, UsageError } from "../lib/errors.js";
import { assertNever } from "../lib/assert-never.js";
import { COMMAND_EXIT_CODES } from "../vocabulary/command-exit-codes.js";

/** How a command failed, by the error that ended it: each kind has its exit code and its line on stderr. */
type Failure =
  | { readonly kind: "usage"; readonly error: UsageError }
  | { readonly kind: "refused"; readonly error: ApplyRefusedError }
  | { readonly kind: "no_git_identity"; readonly error: NoGitIdentityError }
  | { readonly kind: "queue_unavailable"; readonly error: QueueUnavailableError }
  | { readonly kind: "internal"; readonly error: unknown };

/** What the CLI reports of a failure: its exit code, its line on stderr, and (with --json) the error object on stdout. */
export interface FailureReport {
  readonly exitCode: number;
  readonly line: string;
  readonly json: { readonly error: { readonly code: string; readonly message: string } };
}

function failureOf(error: unknown): Failure {
  if (error instanceof UsageError) return { kind: "usage", error };
  if (error instanceof ApplyRefusedError) return { kind: "refused", error };
  if (error instanceof NoGitIdentityError) return { kind: "no_git_identity", error };
  if (error instanceof QueueUnavailableError) return { kind: "queue_unavailable", error };
  return { kind: "internal", error };
}

/** `names`: how a usage error names settings (the command line's flags; src/settings/setting-names.ts). */
export function reportOf(error: unknown, names: SettingNames = FIELD_NAMES): FailureReport {
  const failure = failureOf(error);
  const report = (exitCode: number, code: string, message: string, line = `handoff: ${message}\n`): FailureReport => ({
    exitCode,
    line,
    json: { error: { code, message } },
  });
  switch (failure.kind) {
    case "usage":
      return report(COMMAND_EXIT_CODES.usage, failure.error.code, failure.error.saying(names));
    case "refused":
      return report(
        COMMAND_EXIT_CODES.refused,
        failure.error.code,
        failure.error.message,
        `handoff: apply refused: ${failure.error.message}\n`,
      );
    case "no_git_identity":
      return report(COMMAND_EXIT_CODES.noGitIdentity, failure.error.code, failure.error.message);
    case "queue_unavailable":
      return report(COMMAND_EXIT_CODES.queueUnavailable, "queue_unavailable", failure.error.message);
    case "internal": {
      const error = failure.error;
      const message = error instanceof Error ? error.message : String(error);
      // The stack is for a bug report: stderr has it, the JSON only the message.
      return report(
        COMMAND_EXIT_CODES.internalError,
        "internal_error",
        message,
        `handoff: internal error: ${(error as Error)?.stack ?? error}\n`,
      );
    }
    default:
      return assertNever(failure);
  }
}
