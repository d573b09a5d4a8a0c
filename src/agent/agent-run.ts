import { type TurnEndingFacts, type TurnOutcome, backendCrashed, decideTurnEnding, OVERRAN } from "./agent-ending.js";
import { assertNever } from "../lib/assert-never.js";
import type { AgentContext, ExternalAgentBackend, ExternalAgentResult, SessionToResume } from "./backend.js";

/** How long past its deadline a backend may take to stop before handoff stops waiting for it. */
const OVERRUN_GRACE_MS = 10_000;

/** The result of an agent run that never got a process (or whose process handoff stopped waiting for). */
export function resultWithoutProcess(outcome: ExternalAgentResult["outcome"], durationMs: number): ExternalAgentResult {
  return {
    outcome,
    executable: null,
    version: null,
    sessionId: null,
    exitCode: null,
    signal: null,
    finalMessage: null,
    usage: null,
    stderrTail: "",
    durationMs,
  };
}

/** A turn's result, its outcome decided by the turn's rungs of the ladder (decideTurnEnding) from all the turn's facts. */
export function turnResult(facts: TurnEndingFacts): ExternalAgentResult {
  const outcome = decideTurnEnding(facts);
  switch (facts.turn.kind) {
    case "cannot_resume":
      return resultWithoutProcess(outcome, 0);
    case "ran":
      return outcome === facts.turn.result.outcome ? facts.turn.result : { ...facts.turn.result, outcome };
    default:
      return assertNever(facts.turn);
  }
}

/** One turn of the agent: its first, or a resumed one that continues `session` with `message`. Keyed on `kind`. */
export type AgentTurn =
  | { readonly kind: "start"; readonly task: string }
  | { readonly kind: "resume"; readonly session: SessionToResume; readonly message: string };

/**
 * Calls a backend (built-in or the user's own) so that it cannot take the run down with it: a throw becomes an
 * agent error, and a backend that ignores its deadline is abandoned after a grace period and counted as a timeout.
 * A backend without `resume` cannot take a resumed turn, and says so.
 */
export async function runAgentSafely(backend: ExternalAgentBackend, turn: AgentTurn, context: AgentContext): Promise<TurnOutcome> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const overrun = new Promise<TurnOutcome>((resolve) => {
    timer = setTimeout(
      () => resolve({ kind: "ran", result: resultWithoutProcess(OVERRAN, Date.now() - started) }),
      Math.max(0, context.deadline - Date.now()) + OVERRUN_GRACE_MS,
    );
  });
  try {
    return await Promise.race([callBackend(backend, turn, context), overrun]);
  } catch (error) {
    return { kind: "ran", result: resultWithoutProcess(backendCrashed(backend.name, error as Error), Date.now() - started) };
  } finally {
    clearTimeout(timer);
  }
}

async function callBackend(backend: ExternalAgentBackend, turn: AgentTurn, context: AgentContext): Promise<TurnOutcome> {
  switch (turn.kind) {
    case "start":
      return { kind: "ran", result: await backend.run(turn.task, context) };
    case "resume": {
      if (!backend.resume) return { kind: "cannot_resume", reason: `the ${backend.name} backend cannot resume a session` };
      const resumed = await backend.resume(turn.session, turn.message, context);
      return resumed.kind === "resumed" ? { kind: "ran", result: resumed.result } : resumed;
    }
    default:
      return assertNever(turn);
  }
}
