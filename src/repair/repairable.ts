import type { RunFacts, Verdict } from "../verdict/decide.js";
import type { RunDetail, VerdictDetail } from "../verdict/detail.js";

/** `verification_failed` details that say the base itself fails (docs/verification.md). */
const BASE_FAILURES: ReadonlySet<VerdictDetail | null> = new Set<RunDetail>(["environment_broken", "environment_suspect"]);

/**
 * Whether another attempt could turn this verdict around: a patch that failed handoff's verification, or that broke
 * a patch rule (every rule is about the work tree, which the agent can change). Not a verification that failed on
 * the untouched base as well (`--baseline` found the environment broken or suspect: no patch fixes that). Anything
 * else (the agent failed or timed out, the source changed, an artifact could not be written, the user cancelled)
 * ends the run as it is.
 */
export function repairable(verdict: Verdict, facts: RunFacts): boolean {
  switch (verdict.terminalReason) {
    case "verification_failed":
      return !BASE_FAILURES.has(verdict.detail);
    case "policy_or_artifact_error":
      return (facts.patch?.violations.length ?? 0) > 0 && facts.runDirWrite === null && facts.artifactError === null;
    default:
      return false;
  }
}
