import type { AgentEvent } from "../vocabulary/events.js";
import type { ExternalAgentResult } from "./backend.js";

// What a backend hands the agent runner, as types: its command line and the parser of its stdout.

/** A fully resolved agent command line: pure data, so backends can be tested without a process. */
export interface AgentCommand {
  readonly file: string;
  readonly args: readonly string[];
  /** Written to stdin, then stdin is closed (several CLIs hang on an open stdin). */
  readonly stdin: string;
  /** Variables added to the runner's allowlisted environment. */
  readonly env?: Readonly<Record<string, string>>;
}

/** What the stream itself said about the ending, decided by the backend's parser. */
export type StreamVerdict =
  | { readonly kind: "finished" }
  | { readonly kind: "failed"; readonly detail: string; readonly message: string; readonly hint: string | null }
  /** The stream ended without the terminal event the CLI always writes. */
  | { readonly kind: "incomplete" }
  /** The backend does not read success from its stream: the exit code decides. */
  | { readonly kind: "exit_code_decides" };

/** Turns one run's stdout lines into normalized events. One instance per run; never throws. */
export interface StreamParser {
  push(line: string): AgentEvent[];
  /**
   * A failure the stream has already made certain while the CLI keeps running (Codex waits for a network forever):
   * once this returns a verdict, the process is stopped and the verdict stands.
   */
  settledFailure?(): Extract<StreamVerdict, { kind: "failed" }> | null;
  finish(): {
    readonly verdict: StreamVerdict;
    readonly sessionId: string | null;
    readonly finalMessage: string | null;
    readonly usage: ExternalAgentResult["usage"];
  };
}
