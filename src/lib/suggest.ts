import { distance } from "fastest-levenshtein";

/**
 * The candidate a mistyped word most likely meant, or null when none is close: one the word is a prefix of (three
 * letters or more; the shortest such), else the nearest within two edits that leave more than half of the word
 * (`runn` → `run`, `verfy` → `verify`; not `x` → `yes`).
 */
export function closest(word: string, candidates: readonly string[]): string | null {
  const prefixed = candidates.filter((candidate) => word.length >= 3 && candidate.startsWith(word)).sort((a, b) => a.length - b.length);
  if (prefixed.length > 0) return prefixed[0]!;
  let best: { candidate: string; edits: number } | null = null;
  for (const candidate of candidates) {
    const edits = distance(word, candidate);
    if (edits <= 2 && edits * 2 < word.length && (best === null || edits < best.edits)) best = { candidate, edits };
  }
  return best?.candidate ?? null;
}
