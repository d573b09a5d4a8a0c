import { describe, expect, test } from "vitest";
import { decideAgentEnding, decideTurnEnding } from "../src/agent/agent-ending.js";
import { resultWithoutProcess, turnResult } from "../src/agent/agent-run.js";
import { type ProcessFacts, processEnding } from "../src/process/process-ending.js";
import { commandEnding } from "../src/verify/shell-commands.js";

/** The one process ladder, and the turn's rungs after the agent's: plain facts in, one ending out. */

const exited = (code: number | null) =>
  ({
    spawnError: null,
    timedOut: null,
    cancelled: false,
    signal: null,
    exitCode: code,
  }) satisfies ProcessFacts;
const e2big = { code: "E2BIG", message: "spawn E2BIG" };

describe("how a process ended: one ending, from the facts runProcess reports", () => {
  test("a process that could not be spawned, whatever else is set", () => {
    expect(processEnding({ ...exited(null), spawnError: e2big, timedOut: "wall", cancelled: true })).toEqual({
      kind: "spawn_failed",
      error: e2big,
    });
  });

  test("then a timeout, naming its limit, before a cancel", () => {
    expect(processEnding({ ...exited(null), timedOut: "idle", cancelled: true, signal: "SIGTERM" })).toEqual({
      kind: "timed_out",
      limit: "idle",
    });
  });

  test("then a cancel, though the stop killed the process by a signal", () => {
    expect(processEnding({ ...exited(null), cancelled: true, signal: "SIGTERM" })).toEqual({ kind: "cancelled" });
  });

  test("then a signal it was killed by, else its exit code", () => {
    expect(processEnding({ ...exited(null), signal: "SIGSEGV" })).toEqual({ kind: "killed_by_signal", signal: "SIGSEGV" });
    expect(processEnding(exited(3))).toEqual({ kind: "exited", code: 3 });
    expect(processEnding(exited(0))).toEqual({ kind: "exited", code: 0 });
  });

  test("a record without the optional facts (a command in result.json) reads as its exit code", () => {
    expect(processEnding<string>({ timedOut: null, exitCode: 2 })).toEqual({ kind: "exited", code: 2 });
    expect(processEnding<string>({ spawnError: "E2BIG: spawn E2BIG", timedOut: null, exitCode: null })).toEqual({
      kind: "spawn_failed",
      error: "E2BIG: spawn E2BIG",
    });
  });
});

describe("the turn's rungs: the run's facts are the ladder's input, not edits after it", () => {
  const ran = (outcome: Parameters<typeof resultWithoutProcess>[0]) => ({ kind: "ran" as const, result: resultWithoutProcess(outcome, 5) });

  test("a session that cannot be continued is an agent error, never a fresh session", () => {
    expect(decideTurnEnding({ turn: { kind: "cannot_resume", reason: "pi reported no session id" }, deadline: "turn" })).toEqual({
      kind: "failed",
      detail: "cannot_resume",
      message: "pi reported no session id",
      hint: null,
    });
  });

  test("a wall timeout at the run's --total-timeout is total_timeout; at the turn's own --timeout it stays wall", () => {
    const wall = ran({ kind: "timed_out", limit: "wall" });
    expect(decideTurnEnding({ turn: wall, deadline: "total" })).toEqual({ kind: "timed_out", limit: "total" });
    expect(decideTurnEnding({ turn: wall, deadline: "turn" })).toEqual({ kind: "timed_out", limit: "wall" });
  });

  test("an idle timeout, or any other ending, is the backend's whatever the deadline", () => {
    expect(decideTurnEnding({ turn: ran({ kind: "timed_out", limit: "idle" }), deadline: "total" })).toEqual({
      kind: "timed_out",
      limit: "idle",
    });
    expect(decideTurnEnding({ turn: ran({ kind: "finished" }), deadline: "total" })).toEqual({ kind: "finished" });
  });

  test("the turn's result carries the decided ending, and is the backend's own when nothing changed", () => {
    const finished = ran({ kind: "finished" });
    expect(turnResult({ turn: finished, deadline: "total" })).toBe(finished.result);
    expect(turnResult({ turn: ran({ kind: "timed_out", limit: "wall" }), deadline: "total" })).toMatchObject({
      outcome: { kind: "timed_out", limit: "total" },
      durationMs: 5,
    });
    expect(turnResult({ turn: { kind: "cannot_resume", reason: "gone" }, deadline: "turn" })).toMatchObject({
      outcome: { kind: "failed", detail: "cannot_resume" },
      exitCode: null,
      durationMs: 0,
    });
  });
});

describe("the agent's and a command's ladders start from the process's ending", () => {
  test("the agent: a spawn failure is rung 1, before a timeout", () => {
    const outcome = decideAgentEnding({
      ...exited(null),
      program: { kind: "command", file: "/bin/sh", installHint: "check --agent-cmd" },
      spawnError: e2big,
      timedOut: "wall",
      settled: null,
      cancelled: false,
      stream: { kind: "exit_code_decides" },
      stdoutLines: 0,
      stderrTail: "",
    });
    expect(outcome).toMatchObject({ kind: "failed", detail: "agent_not_started" });
  });

  test("the agent: an exit code the stream left to it is exit_code_<n>", () => {
    const outcome = decideAgentEnding({
      ...exited(2),
      program: { kind: "translator", file: "/opt/agent", installHint: "install it" },
      settled: null,
      cancelled: false,
      stream: { kind: "exit_code_decides" },
      stdoutLines: 1,
      stderrTail: "",
    });
    expect(outcome).toEqual({ kind: "failed", detail: "exit_code_2", message: "the agent exited with code 2", hint: null });
  });

  test("a command: its cap is its own rung, after a failed start and a timeout, before the cancel and the exit status", () => {
    const capped = { exitCode: null, signal: "SIGKILL", timedOut: false, limitHit: "memory" as const, spawnError: null };
    expect(commandEnding({ ...capped, spawnError: "E2BIG: spawn E2BIG" })).toBe("could not start: E2BIG: spawn E2BIG");
    expect(commandEnding({ ...capped, timedOut: true })).toBe("timed out");
    expect(commandEnding({ ...capped, cancelled: true })).toBe("stopped by the memory cap (exit SIGKILL)");
    expect(commandEnding({ ...capped, limitHit: null, cancelled: true })).toBe("cancelled");
  });
});
