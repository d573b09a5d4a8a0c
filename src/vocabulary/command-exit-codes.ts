/**
 * The exit codes of a command that ends without a run's verdict (a verdict's own are EXIT_CODES in
 * terminal-reasons.ts); the codes above 64 are sysexits.h's.
 */
export const COMMAND_EXIT_CODES = {
  /** `apply` would not touch the repository, and says why. */
  refused: 1,
  /** A usage or configuration error: nothing was run or created. */
  usage: 2,
  /** EX_UNAVAILABLE: the queue's Redis could not be reached for the retry period. */
  queueUnavailable: 69,
  /** EX_SOFTWARE: a bug, or an environment failure handoff did not expect. */
  internalError: 70,
  /** EX_CONFIG: `apply --commit` has no git identity to commit as. */
  noGitIdentity: 78,
} as const;
