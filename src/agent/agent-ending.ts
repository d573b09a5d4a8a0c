import type { CliInfo } from "./cli-contract.js";
import { join } from "node:path";
import { handoffCliInstallDir } from "./executable.js";
import { classifyProviderError, hintFor } from "./cli-failures.js";
import type { StreamVerdict } from "./stream-contract.js";
import type { AgentOutcome, ExternalAgentResult } from "./backend.js";
import { clip, tailClipMarkers } from "../lib/clip.js";
import { plainText } from "../lib/plain-text.js";
import { assertNever } from "../lib/assert-never.js";
import { type ProcessEnding, type ProcessSpawnError, processEnding } from "../process/process-ending.js";
import { type AgentDetail, type BackendOwnDetail, agentDetail, exitCodeDetail } from "../verdict/detail.js";

/** How a turn went: it ran (whatever its ending), or the backend could not resume the session and nothing ran. */
export type TurnOutcome =
  | { readonly kind: "ran"; readonly result: ExternalAgentResult }
  | { readonly kind: "cannot_resume"; readonly reason: string };

/**
 * How an agent ended: the one place that decides it, for every backend. The rungs, first match wins (like execa's
 * lib/return/message.js). Rungs 1 to 3 and 8 to 10 are how the process ended (src/process/process-ending.ts, the
 * ladder setup and verify commands start from too); 4 to 7 are the agent's own:
 *
 *  1. the process could not be spawned           → executable_unavailable (ENOENT, EACCES) or agent_not_started
 *  2. timed out (wall or idle)                   → timed_out
 *  3. cancelled by the user                      → cancelled
 *  4. a failure the stream made certain while the CLI kept running (handoff stopped it) → that failure
 *  5. the program could not start (shell exit 126/127: the command backend; a CLI whose `--version` also failed and
 *     that said nothing readable) → executable_unavailable
 *  6. a CLI that wrote no stdout line and exited non-zero → its stderr line says why ("… before writing any event")
 *  7. the stream's verdict: `failed` stands even after exit 0; `incomplete` is malformed_event_stream (a CLI that
 *     exited non-zero with a stderr line: that line, "… before finishing its stream")
 *  8. killed by a signal                          → killed_by_signal (a CLI: agent_reported_error with its stderr)
 *  9. a non-zero exit code                        → exit_code_<n> (a CLI: agent_reported_error with its stderr)
 * 10. otherwise                                   → finished
 *
 * Then the turn's rungs (decideTurnEnding), on whatever the backend decided, this ladder or a library backend's own:
 * a resumed turn whose session cannot continue is cannot_resume, and a wall timeout at the run's --total-timeout is
 * total_timeout. docs/backends.md has the table of the `detail` each rung gives.
 */

/** Who ran, which decides what handoff can say beyond the stream and the exit status. */
export type AgentProgram =
  /** A translator run through the public `runAgentCommand`: exit statuses stay as they are. */
  | { readonly kind: "translator"; readonly file: string; readonly installHint: string }
  /** An agent CLI (`defineCliBackend`): its stderr explains a death the stream could not, and hints are its own. */
  | {
      readonly kind: "cli";
      readonly file: string;
      readonly installHint: string;
      readonly info: CliInfo;
      /** Why `--version` failed, or null when it printed a version. */
      readonly probeFailure: string | null;
      readonly version: string | null;
    }
  /** `--backend command`: the program is `/bin/sh -c CMD`, whose 126/127 mean the command could not start. */
  | { readonly kind: "command"; readonly file: string; readonly installHint: string };

type FailedVerdict = Extract<StreamVerdict, { kind: "failed" }>;

/** Everything known once the agent's process is over: plain data, so the ladder is tested without a process. */
export interface AgentEndingFacts {
  readonly program: AgentProgram;
  readonly timedOut: "wall" | "idle" | null;
  /** The user cancelled while the process ran (handoff's own stop after a settled failure is not a cancel). */
  readonly cancelled: boolean;
  /** A failure the stream made certain while the CLI kept running; handoff stopped the process for it. */
  readonly settled: FailedVerdict | null;
  readonly spawnError: { readonly code: string; readonly message: string } | null;
  readonly stream: StreamVerdict;
  readonly exitCode: number | null;
  readonly signal: string | null;
  /** Non-empty lines on stdout. */
  readonly stdoutLines: number;
  readonly stderrTail: string;
}

type Failed = Extract<AgentOutcome, { kind: "failed" }>;

export function decideAgentEnding(facts: AgentEndingFacts): AgentOutcome {
  const ending = processEnding(facts);
  switch (ending.kind) {
    case "spawn_failed":
      return spawnFailure(ending.error, facts.program);
    case "timed_out":
      return { kind: "timed_out", limit: ending.limit };
    case "cancelled":
      return { kind: "cancelled" };
    case "killed_by_signal":
    case "exited":
      return afterExit(facts, ending);
    default:
      return assertNever(ending);
  }
}

/** Rungs 4 to 10: the process ran and is over; the stream, the program and the exit status say how it went. */
function afterExit(facts: AgentEndingFacts, ending: Extract<ProcessEnding, { kind: "killed_by_signal" | "exited" }>): AgentOutcome {
  const { program } = facts;
  if (facts.settled)
    return withVersionDrift(
      withHint(failed(agentDetail(facts.settled.detail), facts.settled.message, facts.settled.hint), program),
      program,
    );
  const streamHint = facts.stream.kind === "failed" ? facts.stream.hint : null;
  const notStarted = couldNotStart(facts);
  if (notStarted) return withHint({ ...notStarted, hint: notStarted.hint ?? streamHint }, program);
  if (program.kind === "cli" && diedSilently(facts)) {
    return withVersionDrift(withHint(stderrSays(facts, program.info, "before writing any event", streamHint), program), program, true);
  }
  switch (facts.stream.kind) {
    case "failed":
      if (facts.stream.detail === MALFORMED && brokenOff(facts) && program.kind === "cli")
        return withHint(stderrSays(facts, program.info, "before finishing its stream", streamHint), program);
      return withVersionDrift(
        withHint(failed(agentDetail(facts.stream.detail), facts.stream.message, facts.stream.hint), program),
        program,
      );
    case "incomplete":
      if (brokenOff(facts) && program.kind === "cli")
        return withHint(stderrSays(facts, program.info, "before finishing its stream", null), program);
      return withVersionDrift(
        withHint(failed(MALFORMED, "the agent's event stream ended without its final event", null), program),
        program,
      );
    case "finished":
    case "exit_code_decides":
      break;
  }
  if (ending.kind === "killed_by_signal")
    return exitStatus(failed("killed_by_signal", `the agent was killed by ${ending.signal}`, null), facts);
  if (ending.code !== 0) return exitStatus(failed(exitCodeDetail(ending.code), `the agent exited with code ${ending.code}`, null), facts);
  return { kind: "finished" };
}

/** What the run knows of a turn beyond its process, for the turn's rungs. */
export interface TurnEndingFacts {
  /** How the turn went: the backend's decided outcome, or why the session could not be continued. */
  readonly turn: TurnOutcome;
  /** Which deadline the turn had: its own --timeout, or the run's --total-timeout when that came first. */
  readonly deadline: "turn" | "total";
}

/**
 * The turn's rungs, after the backend's (this module's ladder, or a library backend's own): a session that cannot be
 * continued is an agent error, never a silent fresh session; a wall timeout at the run's deadline is total_timeout.
 */
export function decideTurnEnding(facts: TurnEndingFacts): AgentOutcome {
  const { turn } = facts;
  switch (turn.kind) {
    case "cannot_resume":
      return failed("cannot_resume", turn.reason, null);
    case "ran": {
      const outcome = turn.result.outcome;
      if (outcome.kind === "timed_out" && outcome.limit === "wall" && facts.deadline === "total")
        return { kind: "timed_out", limit: "total" };
      return outcome;
    }
    default:
      return assertNever(turn);
  }
}

const MALFORMED = "malformed_event_stream";

function failed(detail: AgentDetail | BackendOwnDetail, message: string, hint: string | null): Failed {
  return { kind: "failed", detail, message, hint };
}

/** A CLI's own hint for the detail when the rung gave none. */
function withHint(outcome: Failed, program: AgentProgram): Failed {
  return program.kind === "cli" && outcome.hint === null ? { ...outcome, hint: hintFor(outcome.detail, program.info) } : outcome;
}

/** When the stream could not be followed, a CLI at another version than the tested one is the likely cause. */
function withVersionDrift(outcome: Failed, program: AgentProgram, silent = false): Failed {
  if (program.kind !== "cli" || !program.version || program.version === program.info.testedVersion) return outcome;
  return silent || outcome.detail === MALFORMED
    ? {
        ...outcome,
        hint: `${outcome.hint ?? ""} (handoff was tested with ${program.info.name} ${program.info.testedVersion}; this is ${program.version})`.trim(),
      }
    : outcome;
}

/** Rung 1. Missing or not executable: the install hint helps. Anything else (E2BIG, a NUL byte) is what handoff passed. */
function spawnFailure(error: ProcessSpawnError, program: AgentProgram): Failed {
  const missing = error.code === "ENOENT" || error.code === "EACCES";
  return failed(
    missing ? "executable_unavailable" : "agent_not_started",
    `${program.file} could not be started: ${error.message.slice(0, 300)}`,
    missing
      ? program.installHint
      : error.code === "E2BIG"
        ? "the agent's arguments and environment are over the kernel's limit (E2BIG): pass fewer or smaller --env variables"
        : `the process could not be started (${error.code})`,
  );
}

/** POSIX shells exit 127 when the command is not found and 126 when it cannot be executed. */
const COULD_NOT_START = new Set([126, 127]);

/** Rung 5: exit 126/127, read once for every backend. */
function couldNotStart(facts: AgentEndingFacts): Failed | null {
  const { program, exitCode } = facts;
  if (exitCode === null || !COULD_NOT_START.has(exitCode)) return null;
  switch (program.kind) {
    case "command":
      return failed(
        "executable_unavailable",
        `the agent command could not be started (the shell exited ${exitCode}: ${exitCode === 127 ? "not found" : "not executable"})`,
        "check --agent-cmd: the program must exist on PATH or by path, and be executable",
      );
    case "cli":
      // A CLI's own exit 126/127 means nothing by itself; with `--version` failing too, its runtime is missing.
      if (!program.probeFailure || !(diedSilently(facts) || (streamIsMalformed(facts) && brokenOff(facts)))) return null;
      return failed("executable_unavailable", `${program.info.name} could not run: ${program.probeFailure}`, null);
    case "translator":
      return null;
  }
}

/** Rung 6's test: nothing on stdout, and a non-zero exit or a signal. */
function diedSilently(facts: AgentEndingFacts): boolean {
  return facts.stdoutLines === 0 && facts.exitCode !== 0;
}

function streamIsMalformed(facts: AgentEndingFacts): boolean {
  return facts.stream.kind === "incomplete" || (facts.stream.kind === "failed" && facts.stream.detail === MALFORMED);
}

/** A CLI that failed at startup after a header line (pi and omp print their session first) says why on stderr only. */
function brokenOff(facts: AgentEndingFacts): boolean {
  return facts.exitCode !== null && facts.exitCode !== 0 && stderrReason(facts.stderrTail) !== "";
}

/** "codex exited with code 1 before writing any event: <its stderr line>", classified by that line. */
function stderrSays(facts: AgentEndingFacts, info: CliInfo, when: string, hint: string | null): Failed {
  const said = stderrReason(facts.stderrTail);
  const how = facts.signal ? `on ${facts.signal}` : `with code ${facts.exitCode}`;
  return failed(
    said ? classifyProviderError(said) : "agent_reported_error",
    `${info.name} exited ${how} ${when}${said ? `: ${said}` : ""}`,
    hint,
  );
}

/** Rungs 8 and 9: a CLI's exit status is an error it reported, worded by its stderr when it wrote one. */
function exitStatus(outcome: Failed, facts: AgentEndingFacts): Failed {
  if (facts.program.kind !== "cli") return outcome;
  const said = stderrReason(facts.stderrTail);
  return withHint(failed("agent_reported_error", said ? `${outcome.message}: ${said}` : outcome.message, null), facts.program);
}

/** What gemini prints on stderr at every start, before the line that says why it stopped. */
const STARTUP_NOTICES = /^(YOLO mode is enabled\.|Warning: 256-color support not detected|Ripgrep is not available\.)/;

/**
 * The stderr line that says why: an `error:`/`fatal:` line if there is one (omp prints its error under a source
 * excerpt), else the first that is not a start-up notice.
 */
export function stderrReason(text: string): string {
  // Plain text: a CLI that colours its errors would put escape codes in the summary.
  const lines = plainText(text)
    .split("\n")
    .map((line) => line.trim())
    // A tail marker with nothing kept after it (one long token cut off) says nothing of why.
    .filter((line) => line !== "" && !STARTUP_NOTICES.test(line) && line.replace(tailClipMarkers(), "") !== "");
  // Clipped, not sliced: redaction runs on what is kept, and a secret cut in two would not be recognised (src/lib/clip.ts).
  return clip(lines.find((line) => /^(error|fatal)\b/i.test(line)) ?? lines[0] ?? "", 300);
}

/** Before any process: the CLI's executable is not there. */
export function executableNotFound(info: CliInfo, bin: string | null): Failed {
  const installDir = handoffCliInstallDir();
  const where = bin
    ? `--bin ${bin} is not an executable file`
    : `'${info.executable}' is not on PATH${installDir ? ` nor in ${join(installDir, info.name, "node_modules", ".bin")}` : ""}`;
  return failed("executable_unavailable", `${info.name} could not be started: ${where}`, hintFor("executable_unavailable", info));
}

/** A backend object that threw instead of reporting its failure. */
export function backendCrashed(backend: string, error: Error): Failed {
  return failed("backend_crashed", `the ${backend} backend failed: ${error.message}`, null);
}

/** A backend that has not returned well past its deadline is abandoned: a wall-clock timeout. */
export const OVERRAN: AgentOutcome = { kind: "timed_out", limit: "wall" };
