import type { AgentContext, AgentOutcome, ExternalAgentResult } from "./backend.js";
import type { ExtraMounts } from "../containment/containment.js";
import type { AgentEvent } from "../run/events.js";
import { HeadTailBuffer } from "../process/head-tail.js";
import { LfLineSplitter } from "./jsonl.js";
import { runProcess } from "../process/process.js";

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

export interface TranslatorSpec {
  readonly command: AgentCommand;
  readonly parser: StreamParser;
  readonly executableLabel: string | null;
  readonly version: string | null;
  /** How to make the executable available, shown when it cannot start. */
  readonly installHint: string;
  /** What the CLI needs to see inside the sandbox beyond the workspace (its install dir, its login files). */
  readonly mounts?: ExtraMounts;
}

/** Runs a translator backend's command through the one process module and classifies the ending. */
export async function runAgentCommand(spec: TranslatorSpec, context: AgentContext): Promise<ExternalAgentResult> {
  const splitter = new LfLineSplitter();
  const stop = new AbortController();
  let stdoutLines = 0;
  let settled: Extract<StreamVerdict, { kind: "failed" }> | null = null;
  const stderrTail = new HeadTailBuffer(0, 16 * 1024);
  const forward = (framed: ReturnType<LfLineSplitter["push"]>) => {
    for (const record of framed) {
      if (record.kind === "oversized" || record.text.trim() !== "") stdoutLines += 1;
      if (record.kind === "oversized") {
        context.emit({ type: "diagnostic", message: `an output line of ${record.bytes} bytes was too long to parse`, raw: record.head });
        continue;
      }
      for (const event of spec.parser.push(record.text)) context.emit(event);
      if (!settled && spec.parser.settledFailure) {
        settled = spec.parser.settledFailure();
        if (settled) stop.abort();
      }
    }
  };
  const jailed = context.jail?.wrap({ file: spec.command.file, args: spec.command.args }, spec.mounts);
  const outcome = await runProcess({
    file: jailed?.file ?? spec.command.file,
    args: jailed?.args ?? spec.command.args,
    cwd: context.cwd,
    env: { ...context.env, ...spec.command.env, ...jailed?.env },
    stdin: spec.command.stdin,
    timeoutMs: Math.max(0, context.deadline - Date.now()),
    idleTimeoutMs: context.idleTimeoutMs,
    signal: AbortSignal.any([context.signal, stop.signal]),
    onStdout: (chunk) => {
      context.onStdout?.(chunk);
      forward(splitter.push(chunk));
    },
    onStderr: (chunk) => stderrTail.push(chunk),
  });
  forward(splitter.end());
  const stream = spec.parser.finish();

  // Assigned inside the stdout callback, which TypeScript cannot see.
  const early = settled as Extract<StreamVerdict, { kind: "failed" }> | null;
  let agentOutcome: AgentOutcome;
  if (outcome.timedOut) agentOutcome = { kind: "timed_out", limit: outcome.timedOut };
  else if (early && !context.signal.aborted) agentOutcome = { kind: "failed", detail: early.detail, message: early.message, hint: early.hint };
  else if (outcome.cancelled) agentOutcome = { kind: "cancelled" };
  else if (outcome.spawnError) {
    // Missing or not executable: the install hint helps. Anything else (E2BIG, a NUL byte) is what handoff passed.
    const missing = outcome.spawnError.code === "ENOENT" || outcome.spawnError.code === "EACCES";
    agentOutcome = {
      kind: "failed",
      detail: missing ? "executable_unavailable" : "agent_not_started",
      message: `${spec.command.file} could not be started: ${outcome.spawnError.message.slice(0, 300)}`,
      hint: missing
        ? spec.installHint
        : outcome.spawnError.code === "E2BIG"
          ? "the agent's arguments and environment are over the kernel's limit (E2BIG): pass fewer or smaller --env variables"
          : `the process could not be started (${outcome.spawnError.code})`,
    };
  } else {
    agentOutcome = classifyExit(stream.verdict, outcome.exitCode, outcome.signal);
  }
  return {
    outcome: agentOutcome,
    executable: spec.executableLabel,
    version: spec.version,
    sessionId: stream.sessionId,
    exitCode: outcome.exitCode,
    signal: outcome.signal,
    finalMessage: stream.finalMessage,
    usage: stream.usage,
    stdoutLines,
    stderrTail: stderrTail.tailText(4096),
    durationMs: outcome.durationMs,
  };
}

/** The stream's word first (a CLI may exit 0 after an error), then the exit status. */
function classifyExit(verdict: StreamVerdict, exitCode: number | null, signal: string | null): AgentOutcome {
  switch (verdict.kind) {
    case "failed":
      return { kind: "failed", detail: verdict.detail, message: verdict.message, hint: verdict.hint };
    case "incomplete":
      return { kind: "failed", detail: "malformed_event_stream", message: "the agent's event stream ended without its final event", hint: null };
    case "finished":
    case "exit_code_decides":
      if (signal) return { kind: "failed", detail: "killed_by_signal", message: `the agent was killed by ${signal}`, hint: null };
      if (exitCode !== 0) return { kind: "failed", detail: `exit_code_${exitCode}`, message: `the agent exited with code ${exitCode}`, hint: null };
      return { kind: "finished" };
  }
}
