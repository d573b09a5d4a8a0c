import type { RunResult } from "./result.js";

/** Entries kept per list in a result.json cut down to fit a full file system. */
const KEPT_ENTRIES = 20;

function firstOf<T>(list: readonly T[]): T[] {
  return list.slice(0, KEPT_ENTRIES);
}

/**
 * result.json cut to what fits in the space reserved for it: the verdict whole, every list to its first entries,
 * and the summary saying so. Used only after writing the whole result failed, so the verdict is never missing.
 */
export function minimalResult(result: RunResult): RunResult {
  const cut = (list: readonly unknown[]) => list.length > KEPT_ENTRIES;
  const wasCut =
    cut(result.policy.violations) ||
    cut(result.policy.warnings) ||
    cut(result.patch?.files ?? []) ||
    cut(result.verification.commands) ||
    cut(result.sourceInvariant.changed);
  return {
    ...result,
    summary: wasCut ? `${result.summary} (result.json cut to the first ${KEPT_ENTRIES} entries of each list to fit)` : result.summary,
    patch: result.patch ? { ...result.patch, files: firstOf(result.patch.files) } : null,
    policy: { violations: firstOf(result.policy.violations), warnings: firstOf(result.policy.warnings) },
    verification: { ...result.verification, commands: firstOf(result.verification.commands) },
    sourceInvariant: { ...result.sourceInvariant, changed: firstOf(result.sourceInvariant.changed) },
    ...(result.containment ? { containment: { ...result.containment, events: firstOf(result.containment.events) } } : {}),
    ...(result.network
      ? {
          network: {
            ...result.network,
            allowed: firstOf(result.network.allowed),
            blocked: firstOf(result.network.blocked),
            attempts: firstOf(result.network.attempts),
          },
        }
      : {}),
  };
}
