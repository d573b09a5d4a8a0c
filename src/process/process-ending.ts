/**
 * How a process ended: exactly one of these, decided once from what runProcess saw. These are the first rungs of
 * every ladder that judges a process (the agent's in src/agent/agent-ending.ts, a setup or verify command's in
 * src/verify/shell-commands.ts, a resumed turn's before-commands in src/agent/before-commands.ts); each adds only its
 * own rungs. Keyed on `kind`; `SpawnError` is how the caller carries the reason it could not start.
 */
export type ProcessEnding<SpawnError = ProcessSpawnError> =
  | { readonly kind: "spawn_failed"; readonly error: SpawnError }
  | { readonly kind: "timed_out"; readonly limit: "wall" | "idle" }
  | { readonly kind: "cancelled" }
  | { readonly kind: "killed_by_signal"; readonly signal: string }
  /** `code` is null only when Node reported an error instead of an exit status. */
  | { readonly kind: "exited"; readonly code: number | null };

export interface ProcessSpawnError {
  readonly code: string;
  readonly message: string;
}

/** The facts runProcess reports (ProcessOutcome), or a record of them (a setup or verify command in result.json). */
export interface ProcessFacts<SpawnError = ProcessSpawnError> {
  readonly spawnError?: SpawnError | null;
  readonly timedOut: "wall" | "idle" | null;
  readonly cancelled?: boolean;
  readonly signal?: string | null;
  readonly exitCode: number | null;
}

/**
 * The ladder, first match wins: not started, timed out, cancelled, killed by a signal, exited. runProcess reports at
 * most one of the first three (the first stop wins), so the order among them matters only for made-up facts.
 */
export function processEnding<SpawnError>(facts: ProcessFacts<SpawnError>): ProcessEnding<SpawnError> {
  if (facts.spawnError) return { kind: "spawn_failed", error: facts.spawnError };
  if (facts.timedOut) return { kind: "timed_out", limit: facts.timedOut };
  if (facts.cancelled) return { kind: "cancelled" };
  if (facts.signal) return { kind: "killed_by_signal", signal: facts.signal };
  return { kind: "exited", code: facts.exitCode };
}
