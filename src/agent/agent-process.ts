import type { AgentContext, AgentOutcome, ExternalAgentResult } from "./backend.js";
import type { ExtraMounts } from "../containment/containment.js";
import type { AgentEvent } from "../vocabulary/events.js";
import { HeadTailBuffer } from "../process/head-tail.js";
import { LfLineSplitter } from "./jsonl.js";
import { type AgentEndingFacts, decideAgentEnding } from "./agent-ending.js";
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

/** What one agent process left behind: the facts its ending is decided from, and what its stream said. */
export interface AgentProcessRun {
  readonly ending: Omit<AgentEndingFacts, "program">;
  readonly stream: ReturnType<StreamParser["finish"]>;
  readonly durationMs: number;
}

/** Runs an agent's command through the one process module (jailed when the context has a jail), parsing its stdout. */
export async function runAgentProcess(
  spec: Pick<TranslatorSpec, "command" | "parser" | "mounts">,
  context: AgentContext,
): Promise<AgentProcessRun> {
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
  // A user's cancel outranks a settled failure; handoff's own stop for that failure is not a cancel.
  const userCancelled = context.signal.aborted;
  return {
    ending: {
      timedOut: outcome.timedOut,
      cancelled: outcome.cancelled && (userCancelled || early === null),
      settled: userCancelled ? null : early,
      spawnError: outcome.spawnError,
      stream: stream.verdict,
      exitCode: outcome.exitCode,
      signal: outcome.signal,
      stdoutLines,
      stderrTail: stderrTail.tailText(4096),
    },
    stream,
    durationMs: outcome.durationMs,
  };
}

/** The backend's result: how the process ended (decided by the ladder) and what its stream said. */
export function agentResult(
  run: AgentProcessRun,
  outcome: AgentOutcome,
  executable: string | null,
  version: string | null,
): ExternalAgentResult {
  return {
    outcome,
    executable,
    version,
    sessionId: run.stream.sessionId,
    exitCode: run.ending.exitCode,
    signal: run.ending.signal,
    finalMessage: run.stream.finalMessage,
    usage: run.stream.usage,
    stdoutLines: run.ending.stdoutLines,
    stderrTail: run.ending.stderrTail,
    durationMs: run.durationMs,
  };
}

/** Runs a translator backend's command through the one process module and decides how it ended. */
export async function runAgentCommand(spec: TranslatorSpec, context: AgentContext): Promise<ExternalAgentResult> {
  const run = await runAgentProcess(spec, context);
  const outcome = decideAgentEnding({
    ...run.ending,
    program: { kind: "translator", file: spec.command.file, installHint: spec.installHint },
  });
  return agentResult(run, outcome, spec.executableLabel, spec.version);
}
