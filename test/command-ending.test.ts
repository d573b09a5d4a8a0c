import { describe, expect, test } from "vitest";
import { commandEnding } from "../src/verify/shell-commands.js";

const ran = { exitCode: 0, signal: null, timedOut: false, limitHit: null, spawnError: null };

describe("one wording of how a setup or verify command ended (test.log, the report, show --format junit)", () => {
  test("in the verdict's order: not started, timed out, a cap, cancelled, a signal, the exit code", () => {
    expect(commandEnding({ ...ran, exitCode: null, spawnError: "E2BIG: spawn E2BIG", timedOut: true })).toBe(
      "could not start: E2BIG: spawn E2BIG",
    );
    expect(commandEnding({ ...ran, exitCode: null, signal: "SIGKILL", timedOut: true, limitHit: "memory" })).toBe("timed out");
    expect(commandEnding({ ...ran, exitCode: 137, limitHit: "memory" })).toBe("stopped by the memory cap (exit 137)");
    expect(commandEnding({ ...ran, exitCode: null, signal: "SIGKILL", limitHit: "processes" })).toBe(
      "stopped by the process cap (exit SIGKILL)",
    );
    expect(commandEnding({ ...ran, exitCode: null, signal: "SIGTERM", cancelled: true })).toBe("cancelled");
    expect(commandEnding({ ...ran, exitCode: null, signal: "SIGSEGV" })).toBe("killed by SIGSEGV");
    expect(commandEnding({ ...ran, exitCode: 1 })).toBe("exit 1");
    expect(commandEnding(ran)).toBe("exit 0");
  });

  test("a result.json command entry without a signal field reads as its exit code", () => {
    expect(commandEnding({ exitCode: 2, timedOut: false })).toBe("exit 2");
  });
});
