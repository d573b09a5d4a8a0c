import type { LimitHit } from "../containment/cgroup.js";
import type { ProcessJail } from "../containment/containment.js";
import { HeadTailBuffer } from "../process/head-tail.js";
import { runProcess } from "../process/process.js";
import { type ProcessEnding, processEnding } from "../process/process-ending.js";
import { assertNever } from "../lib/assert-never.js";
import { type RunnerSummary, readRunnerSummaries } from "./runner-summary.js";
import { startFailure } from "./program-check.js";

/** One setup or verification command as handoff ran it. */
export interface CommandRecord {
  readonly command: string;
  readonly phase: "setup" | "verify" | "held-setup" | "held" | "baseline-setup" | "baseline";
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly timedOut: boolean;
  readonly durationMs: number;
  /** A resource cap the command ran into: it fails whatever its exit code (a fork bomb that exits 0 proves nothing). */
  readonly limitHit?: LimitHit | null;
  /** The shell could not be started at all (`E2BIG`, a NUL byte…): `code: message`. The command did not run. */
  readonly spawnError?: string | null;
  /** The test runners' summaries in a verify command's output (runner-summary.ts); absent for setup commands. */
  readonly summaries?: readonly RunnerSummary[];
  /** Exit 126/127 because the command's own program could not start (program-check.ts): the environment's failure. */
  readonly startFailure?: { readonly program: string; readonly said: string } | null;
}

/** The bounded transcript behind test.log: head and tail of each command's output. */
export class TestLog {
  readonly #sections: Buffer[] = [];
  readonly #persist: (bytes: Buffer) => void;
  readonly #whole: TestLog | null;
  /** `whole`: the run's log, which also gets every section of this one (an attempt's log, for example). */
  constructor(persist: (bytes: Buffer) => void, whole: TestLog | null = null) {
    this.#persist = persist;
    this.#whole = whole;
  }
  add(section: Buffer): void {
    this.#sections.push(section);
    this.#persist(this.toBuffer());
    this.#whole?.add(section);
  }
  toBuffer(): Buffer {
    return Buffer.concat(this.#sections);
  }
}

export interface ShellRunOptions {
  readonly phase: CommandRecord["phase"];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  readonly log: TestLog;
  /** Bytes of each command's output kept at the start and at the end. */
  readonly keepBytes?: number;
  readonly onCommand?: (command: string) => void;
  /** Run every command even after one fails (the baseline, which compares each command's result). */
  readonly keepGoing?: boolean;
  /** Contains each command (sandbox, caps); without it the command runs in its own process group only. */
  readonly jail?: (command: string) => ProcessJail;
}

/** The phases whose commands run the tests: their output is read for the runners' summaries. */
const SUMMARY_PHASES: ReadonlySet<CommandRecord["phase"]> = new Set(["verify", "held", "baseline"]);

/** Runs commands in order with `/bin/sh -c`, stopping at the first that fails unless `keepGoing`. */
export async function runShellCommands(commands: readonly string[], options: ShellRunOptions): Promise<CommandRecord[]> {
  const records: CommandRecord[] = [];
  const keep = options.keepBytes ?? 256 * 1024;
  for (const command of commands) {
    if (options.signal?.aborted) break;
    options.onCommand?.(command);
    const output = new HeadTailBuffer(keep, keep);
    const jail = options.jail?.(command);
    const jailed = jail?.wrap({ file: "/bin/sh", args: ["-c", command] });
    const outcome = await runProcess({
      file: jailed?.file ?? "/bin/sh",
      args: jailed?.args ?? ["-c", command],
      cwd: options.cwd,
      env: { ...options.env, ...jailed?.env },
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      onStdout: (chunk) => output.push(chunk),
      onStderr: (chunk) => output.push(chunk),
    });
    const contained = await jail?.finish();
    const record: CommandRecord = {
      command,
      phase: options.phase,
      exitCode: outcome.exitCode,
      signal: outcome.signal,
      timedOut: outcome.timedOut !== null,
      durationMs: outcome.durationMs,
      limitHit: contained?.limitsHit[0] ?? null,
      spawnError: outcome.spawnError ? `${outcome.spawnError.code}: ${outcome.spawnError.message}` : null,
      ...(SUMMARY_PHASES.has(options.phase) ? { summaries: readRunnerSummaries(output.toBuffer()) } : {}),
      startFailure: startFailure(command, outcome.exitCode, output.toBuffer()),
    };
    records.push(record);
    const status = commandEnding({ ...record, cancelled: outcome.cancelled });
    options.log.add(
      Buffer.concat([
        Buffer.from(`$ ${command}    [${options.phase}]\n`),
        output.toBuffer(),
        Buffer.from(`${output.totalBytes > 0 ? "\n" : ""}[${status}, ${record.durationMs} ms]\n\n`),
      ]),
    );
    if (!commandPassed(record) && !options.keepGoing) break;
  }
  return records;
}

type EndingFacts = Pick<CommandRecord, "exitCode" | "timedOut" | "limitHit" | "spawnError" | "startFailure"> & {
  readonly signal?: string | null;
  readonly cancelled?: boolean;
};

/**
 * How a setup or verify command ended: its process's ending (src/process/process-ending.ts), or one of the command's
 * own rungs. The one ladder the log line, the report, `show --format junit` and the verdict (src/verdict/decide.ts)
 * all read.
 */
export type CommandEnding =
  | ProcessEnding<string>
  /** A resource cap stopped it: it fails whatever its exit code (a fork bomb that exits 0 proves nothing). */
  | { readonly kind: "cap_hit"; readonly cap: LimitHit; readonly exit: number | string | null }
  /** Exit 126/127 because its own program could not start (program-check.ts): the environment's failure. */
  | { readonly kind: "program_unavailable"; readonly program: string; readonly said: string };

/** The ladder: the process's rungs first; a cap outranks how the process then ended (the cap killed it), not a failed start or a timeout. */
export function commandEndingOf(record: EndingFacts): CommandEnding {
  const ending = processEnding({ ...record, timedOut: record.timedOut ? "wall" : null });
  if (ending.kind === "spawn_failed" || ending.kind === "timed_out") return ending;
  if (record.limitHit) return { kind: "cap_hit", cap: record.limitHit, exit: record.exitCode ?? record.signal ?? null };
  if (ending.kind === "exited" && record.startFailure) return { kind: "program_unavailable", ...record.startFailure };
  return ending;
}

/** How a setup or verify command ended, in the one wording test.log, the report and `show --format junit` use. */
export function commandEnding(record: EndingFacts): string {
  const ending = commandEndingOf(record);
  switch (ending.kind) {
    case "spawn_failed":
      return `could not start: ${ending.error}`;
    case "timed_out":
      return "timed out";
    case "cap_hit":
      return `stopped by the ${ending.cap === "memory" ? "memory" : "process"} cap (exit ${ending.exit})`;
    case "cancelled":
      return "cancelled";
    case "killed_by_signal":
      return `killed by ${ending.signal}`;
    case "program_unavailable":
    case "exited":
      return `exit ${record.exitCode}`;
    default:
      return assertNever(ending);
  }
}

/**
 * Every command a verification ran, as result.json records it: the patched checkout's, then those of the run held to
 * the base, where a patch that edited the tests fails. Each report lists them all.
 */
export function verificationCommands<C>(v: {
  readonly commands: readonly C[];
  readonly heldToBase?: { readonly commands: readonly C[] } | null;
}): C[] {
  return [...v.commands, ...(v.heldToBase?.commands ?? [])];
}

/** A command passed: exit 0, in time, under the caps, started at all. Also reads result.json's command entries. */
export function commandPassed(record: EndingFacts): boolean {
  const ending = commandEndingOf(record);
  return ending.kind === "exited" && ending.code === 0;
}
