import { backendCrashed, OVERRAN } from "./agent-ending.js";
import type { AgentContext, ExternalAgentBackend, ExternalAgentResult } from "./backend.js";

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

/**
 * Calls a backend (built-in or the user's own) so that it cannot take the run down with it: a throw becomes an
 * agent error, and a backend that ignores its deadline is abandoned after a grace period and counted as a timeout.
 */
export async function runAgentSafely(backend: ExternalAgentBackend, task: string, context: AgentContext): Promise<ExternalAgentResult> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const overrun = new Promise<ExternalAgentResult>((resolve) => {
    timer = setTimeout(
      () => resolve(resultWithoutProcess(OVERRAN, Date.now() - started)),
      Math.max(0, context.deadline - Date.now()) + OVERRUN_GRACE_MS,
    );
  });
  try {
    return await Promise.race([backend.run(task, context), overrun]);
  } catch (error) {
    return resultWithoutProcess(backendCrashed(backend.name, error as Error), Date.now() - started);
  } finally {
    clearTimeout(timer);
  }
}
