import type { CandidateEntry } from "../verdict/result.js";

/** What the winner rule reads of a candidate (a CandidateEntry has it all). */
export type Contender = Pick<CandidateEntry, "k" | "terminalReason" | "warnings" | "patchBytes" | "finishedAt">;

/**
 * THE rule that picks the winner of a best-of-N run (docs/many-tasks.md#best-of-n-candidates), one comparison after
 * another until two candidates differ:
 * 1. verified before not verified;
 * 2. the fewest warnings (result.policy.warnings);
 * 3. the smallest patch in bytes (a candidate without a patch counts 0);
 * 4. the earliest to finish;
 * 5. the lowest k (so that the rule always gives one answer).
 * Among candidates none of which verified, the same tie-breakers pick the one whose verdict the run reports (`apply`
 * still refuses it: only a verified run is applied). A changed source repository is not judged here: the run ends
 * `source_repository_changed` with no winner (src/many/candidates.ts).
 */
export function chooseWinner<T extends Contender>(candidates: readonly T[]): T | null {
  return [...candidates].sort(compareCandidates)[0] ?? null;
}

/** Negative when `a` ranks before `b` under the rule above. */
export function compareCandidates(a: Contender, b: Contender): number {
  const verified = (candidate: Contender) => (candidate.terminalReason === "verified" ? 0 : 1);
  return (
    verified(a) - verified(b) ||
    a.warnings - b.warnings ||
    a.patchBytes - b.patchBytes ||
    Date.parse(a.finishedAt) - Date.parse(b.finishedAt) ||
    a.k - b.k
  );
}

/**
 * Why the winner ranks first, in the rule's words: the first step of the rule at which it beats the runner-up
 * (for `handoff show`, so that a reader need not work the rule out from the table).
 */
export function winnerReason(candidates: readonly Contender[], winner: number): string {
  const ranked = [...candidates].sort(compareCandidates);
  const [first, second] = ranked;
  if (!first || first.k !== winner) return "";
  if (!second) return "the only candidate";
  if (first.terminalReason === "verified" && second.terminalReason !== "verified") return "the only one verified";
  const verified = first.terminalReason === "verified" ? "verified, " : "none verified; ";
  if (first.warnings !== second.warnings) return `${verified}the fewest warnings`;
  if (first.patchBytes !== second.patchBytes) return `${verified}as few warnings as any, the smallest patch`;
  if (first.finishedAt !== second.finishedAt) return `${verified}as few warnings and as small a patch as any, finished first`;
  return `${verified}tied with candidate ${second.k} on every step; the lower number`;
}

/**
 * Agreement: the groups of candidates (two or more, by k) whose non-empty patches are byte for byte the same (equal
 * sha256), largest group first. Independent candidates that wrote the same patch are a signal worth showing.
 */
export function agreementGroups(candidates: readonly Pick<CandidateEntry, "k" | "patchSha256" | "patchBytes">[]): number[][] {
  const bySha = new Map<string, number[]>();
  for (const candidate of candidates) {
    if (candidate.patchSha256 === null || candidate.patchBytes === 0) continue;
    bySha.set(candidate.patchSha256, [...(bySha.get(candidate.patchSha256) ?? []), candidate.k]);
  }
  return [...bySha.values()]
    .filter((group) => group.length > 1)
    .map((group) => group.sort((a, b) => a - b))
    .sort((a, b) => b.length - a.length || a[0]! - b[0]!);
}
