/**
 * How long a kept session (`--keep-session`) stays: after this, the next handoff start removes it, and `handoff gc`
 * does so at any time. A kept home holds the CLI's transcript of the run, never the user's login.
 */
export const KEPT_SESSION_DAYS = 7;
export const KEPT_SESSION_MS = KEPT_SESSION_DAYS * 24 * 60 * 60 * 1000;
