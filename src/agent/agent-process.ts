import type { AgentContext, AgentOutcome, ExternalAgentResult } from "./backend.js";
import type { ExtraMounts } from "../containment/containment.js";
import type { AgentCommand, StreamParser, StreamVerdict } from "./stream-contract.js";
import { HeadTailBuffer } from "../process/head-tail.js";
import { LfLineSplitter } from "./jsonl.js";
import { type AgentEndingFacts, decideAgentEnding } from "./agent-ending.js";
import { runProcess } from "../process/process.js";

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
