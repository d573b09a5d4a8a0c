import type { ProcessJail } from "../containment/containment.js";
import type { AgentEvent } from "../vocabulary/events.js";

/** What the runner gives a backend for one run. */
export interface AgentContext {
  /** The disposable clone: the agent's working directory. */
  readonly cwd: string;
  /** The complete environment for the agent (allowlisted, private HOME and TMPDIR). */
  readonly env: Readonly<Record<string, string>>;
  /** Aborted on user cancel; the backend must stop its process. */
  readonly signal: AbortSignal;
  /** Wall-clock deadline (epoch ms). */
  readonly deadline: number;
  /** Limit on silence, in ms. */
  readonly idleTimeoutMs: number;
  readonly model: string | null;
  /** The executable the user named with `--bin`, if any. */
  readonly executable: string | null;
  /**
   * A private, empty directory for the agent CLI's own state (its config dir, sessions, logs). It is outside the
   * system temp dir (Codex refuses to install its sandbox helpers under it) and removed after the run.
   */
  readonly homeDir: string;
  /** handoff's own environment, only to find the user's CLI login; never handed to the agent as a whole. */
  readonly userEnv: Readonly<Record<string, string | undefined>>;
  /**
   * handoff's sandbox for the agent's process: `runAgentCommand` applies it. A backend that spawns its own processes
   * must wrap them with it, or the run reports that the agent ran outside the sandbox.
   */
  readonly jail?: ProcessJail;
  /** A tap on the agent's raw stdout, before parsing (used to record transcripts). */
  readonly onStdout?: (chunk: Buffer) => void;
  /** Where each normalized event goes, in order (written to events.jsonl). */
  readonly emit: (event: AgentEvent) => void;
}

/** How the agent's run ended, as the backend saw it. Keyed on `kind`. */
export type AgentOutcome =
  | { readonly kind: "finished" }
  | { readonly kind: "failed"; readonly detail: string; readonly message: string; readonly hint: string | null }
  /** `total`: the run's `--total-timeout` ended the turn before its own `--timeout` did. */
  | { readonly kind: "timed_out"; readonly limit: "wall" | "idle" | "total" }
  | { readonly kind: "cancelled" };

export interface ExternalAgentResult {
  readonly outcome: AgentOutcome;
  readonly executable: string | null;
  readonly version: string | null;
  readonly sessionId: string | null;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly finalMessage: string | null;
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number; readonly costUsd: number | null } | null;
  /** Things the user should know that do not change the verdict (recorded as policy warnings). */
  readonly warnings?: readonly { readonly rule: "cli_login_replaced"; readonly path: string; readonly message: string }[];
  /** Non-empty lines the agent wrote on stdout (0 tells "died before saying anything" from a broken stream). */
  readonly stdoutLines?: number;
  /** Last bytes of the agent's stderr, for the report. */
  readonly stderrTail: string;
  readonly durationMs: number;
}

/** The session a repair attempt (`--attempts`) or `handoff resume` continues. */
export interface SessionToResume {
  /** The session id the earlier turn reported; null when none arrived (a CLI then cannot resume). */
  readonly sessionId: string | null;
  /** Where the earlier turn ran: this clone within a run; the earlier run's (removed) clone for `handoff resume`. */
  readonly cwd: string;
  /** The number of the attempt this turn is, within its run (2 for the first repair; the command backend's $HANDOFF_ATTEMPT). */
  readonly attempt: number;
}

/** What `resume` did: continued the session, or said why it cannot (never a silent fresh session). Keyed on `kind`. */
export type ResumeOutcome =
  | { readonly kind: "resumed"; readonly result: ExternalAgentResult }
  | { readonly kind: "cannot_resume"; readonly reason: string };

/** An agent handoff can delegate to. Built-in ones are translators over the shared process module. */
export interface ExternalAgentBackend {
  readonly name: string;
  run(task: string, context: AgentContext): Promise<ExternalAgentResult>;
  /**
   * Continues `session` with `message` as the user's next turn, in `context.cwd` with the same private home
   * (`context.homeDir`) the session's state lives in. Optional: without it, `--attempts` ends after the first
   * attempt and `handoff resume` is refused, each saying why.
   */
  resume?(session: SessionToResume, message: string, context: AgentContext): Promise<ResumeOutcome>;
}
