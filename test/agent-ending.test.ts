import { describe, expect, test } from "vitest";
import { type AgentEndingFacts, type AgentProgram, decideAgentEnding } from "../src/agent/agent-ending.js";
import { cliInfo } from "./helpers/backend-fixtures.js";

/** The agent-ending ladder with plain inputs, rung by rung: no process, no CLI. */

const pi = cliInfo("pi");
const cli = (over: Partial<Extract<AgentProgram, { kind: "cli" }>> = {}): AgentProgram => ({
  kind: "cli",
  file: "/opt/pi/bin/pi",
  installHint: `install pi: ${pi.install}; or name its executable with --bin PATH (handoff run -b pi --bin PATH)`,
  info: pi,
  probeFailure: null,
  version: pi.testedVersion,
  ...over,
});
const command: AgentProgram = { kind: "command", file: "/bin/sh", installHint: "check the --agent-cmd command line" };
const translator: AgentProgram = { kind: "translator", file: "/opt/agent", installHint: "install the agent" };

/** A process that finished cleanly: exit 0, a complete stream, some output. */
function facts(over: Partial<AgentEndingFacts> = {}): AgentEndingFacts {
  return {
    program: cli(),
    timedOut: null,
    cancelled: false,
    settled: null,
    spawnError: null,
    stream: { kind: "finished" },
    exitCode: 0,
    signal: null,
    stdoutLines: 3,
    stderrTail: "",
    ...over,
  };
}

const networkDown = {
  kind: "failed",
  detail: "network_unreachable",
  message: "codex could not reach its model provider",
  hint: null,
} as const;

describe("the agent-ending ladder, rung by rung", () => {
  test("2. a timeout outranks all but a failed spawn", () => {
    expect(
      decideAgentEnding(facts({ timedOut: "idle", cancelled: true, settled: networkDown, exitCode: null, signal: "SIGTERM" })),
    ).toEqual({ kind: "timed_out", limit: "idle" });
  });

  test("3. a user's cancel outranks what the stream said", () => {
    expect(decideAgentEnding(facts({ cancelled: true, settled: networkDown, exitCode: null, signal: "SIGTERM" }))).toEqual({
      kind: "cancelled",
    });
  });

  test("4. a failure the stream settled while the CLI ran stands, though handoff's stop killed the process", () => {
    expect(decideAgentEnding(facts({ settled: networkDown, exitCode: null, signal: "SIGTERM" }))).toEqual({
      kind: "failed",
      detail: "network_unreachable",
      message: "codex could not reach its model provider",
      hint: "pi could not reach its model provider: check the network, the proxy (pass it with --env HTTPS_PROXY) and the provider URL in pi's own config",
    });
  });

  test("1. a process that could not be spawned: missing is executable_unavailable with the install hint, E2BIG is agent_not_started", () => {
    const missing = decideAgentEnding(
      facts({
        spawnError: { code: "ENOENT", message: "spawn /opt/pi/bin/pi ENOENT" },
        stream: { kind: "incomplete" },
        exitCode: null,
        stdoutLines: 0,
      }),
    );
    expect(missing).toEqual({
      kind: "failed",
      detail: "executable_unavailable",
      message: "/opt/pi/bin/pi could not be started: spawn /opt/pi/bin/pi ENOENT",
      hint: `install pi: ${pi.install}; or name its executable with --bin PATH (handoff run -b pi --bin PATH)`,
    });
    const tooBig = decideAgentEnding(
      facts({
        program: command,
        spawnError: { code: "E2BIG", message: "spawn E2BIG" },
        stream: { kind: "exit_code_decides" },
        exitCode: null,
        stdoutLines: 0,
      }),
    );
    expect(tooBig).toMatchObject({ detail: "agent_not_started", hint: expect.stringContaining("E2BIG") });
  });

  test("a CLI whose spawn failed with E2BIG stays agent_not_started (it is not worded as an exit 'with code null')", () => {
    const outcome = decideAgentEnding(
      facts({ spawnError: { code: "E2BIG", message: "spawn E2BIG" }, stream: { kind: "incomplete" }, exitCode: null, stdoutLines: 0 }),
    );
    expect(outcome).toEqual({
      kind: "failed",
      detail: "agent_not_started",
      message: "/opt/pi/bin/pi could not be started: spawn E2BIG",
      hint: "the agent's arguments and environment are over the kernel's limit (E2BIG): pass fewer or smaller --env variables",
    });
  });

  test("5. exit 126/127: the command backend's shell could not start the program", () => {
    expect(decideAgentEnding(facts({ program: command, stream: { kind: "exit_code_decides" }, exitCode: 127, stdoutLines: 0 }))).toEqual({
      kind: "failed",
      detail: "executable_unavailable",
      message: "the agent command could not be started (the shell exited 127: not found)",
      hint: "check --agent-cmd: the program must exist on PATH or by path, and be executable",
    });
    expect(decideAgentEnding(facts({ program: command, stream: { kind: "exit_code_decides" }, exitCode: 126 }))).toMatchObject({
      message: expect.stringContaining("exited 126: not executable"),
    });
  });

  test("5. exit 126/127 of a silent CLI whose --version failed too: it could not run", () => {
    const outcome = decideAgentEnding(
      facts({
        program: cli({ probeFailure: "`pi --version` failed: bun: not found", version: null }),
        stream: { kind: "incomplete" },
        exitCode: 127,
        stdoutLines: 0,
        stderrTail: "env: bun: No such file",
      }),
    );
    expect(outcome).toEqual({
      kind: "failed",
      detail: "executable_unavailable",
      message: "pi could not run: `pi --version` failed: bun: not found",
      hint: `install pi: ${pi.install}; or name its executable with --bin PATH (handoff run -b pi --bin PATH)`,
    });
  });

  test("5. exit 127 means nothing by itself to a CLI whose --version worked, nor to a translator", () => {
    expect(decideAgentEnding(facts({ stream: { kind: "incomplete" }, exitCode: 127, stdoutLines: 0 }))).toMatchObject({
      detail: "agent_reported_error",
    });
    expect(decideAgentEnding(facts({ program: translator, stream: { kind: "exit_code_decides" }, exitCode: 127 }))).toMatchObject({
      detail: "exit_code_127",
    });
  });

  test("6. a CLI that wrote nothing and exited non-zero: its stderr line says why, classified", () => {
    const outcome = decideAgentEnding(
      facts({ stream: { kind: "incomplete" }, exitCode: 1, stdoutLines: 0, stderrTail: "some banner\nError: 401 Unauthorized\n" }),
    );
    expect(outcome).toEqual({
      kind: "failed",
      detail: "auth_failed",
      message: "pi exited with code 1 before writing any event: Error: 401 Unauthorized",
      hint: pi.login,
    });
    const killed = decideAgentEnding(facts({ stream: { kind: "incomplete" }, exitCode: null, signal: "SIGKILL", stdoutLines: 0 }));
    expect(killed).toMatchObject({ detail: "agent_reported_error", message: "pi exited on SIGKILL before writing any event" });
  });

  test("6. a stderr tail whose cut left only its marker on a line (one long token cut off) gives the next line as the reason", () => {
    const stderrTail = "(90000 earlier bytes) …\nfatal: could not read config\n";
    const outcome = decideAgentEnding(facts({ stream: { kind: "incomplete" }, exitCode: 2, stdoutLines: 0, stderrTail }));
    expect(outcome).toMatchObject({ message: "pi exited with code 2 before writing any event: fatal: could not read config" });
    const cutLine = decideAgentEnding(
      facts({ stream: { kind: "incomplete" }, exitCode: 2, stdoutLines: 0, stderrTail: "(12 earlier bytes) … the rest" }),
    );
    expect(cutLine).toMatchObject({ message: "pi exited with code 2 before writing any event: (12 earlier bytes) … the rest" });
  });

  test("6. gemini's start-up notices are not the reason: the line after them is (its missing-login message here)", () => {
    const stderrTail = [
      "YOLO mode is enabled. All tool calls will be automatically approved.",
      "Warning: 256-color support not detected. Using a terminal with at least 256-color support is recommended.",
      "Please set an Auth method in your /h/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY",
      "",
    ].join("\n");
    const outcome = decideAgentEnding(facts({ stream: { kind: "incomplete" }, exitCode: 41, stdoutLines: 0, stderrTail }));
    expect(outcome).toMatchObject({
      detail: "auth_failed",
      message: expect.stringMatching(/^pi exited with code 41 before writing any event: Please set an Auth method in your/),
    });
  });

  test("6. a silent death at another version than the tested one says so in the hint", () => {
    const outcome = decideAgentEnding(
      facts({ program: cli({ version: "9.9.9" }), stream: { kind: "incomplete" }, exitCode: 1, stdoutLines: 0 }),
    );
    expect(outcome).toMatchObject({
      detail: "agent_reported_error",
      hint: expect.stringContaining(`(handoff was tested with pi ${pi.testedVersion}; this is 9.9.9)`),
    });
  });

  test("7. the stream's failure stands even after exit 0", () => {
    const outcome = decideAgentEnding(facts({ stream: { kind: "failed", detail: "rate_limited", message: "429 slow down", hint: null } }));
    expect(outcome).toEqual({
      kind: "failed",
      detail: "rate_limited",
      message: "429 slow down",
      hint: "the model provider is rate limiting this account: wait and retry, or check the plan's limits",
    });
  });

  test("7. an incomplete stream is malformed_event_stream; a CLI that exited non-zero with a stderr line is quoted instead", () => {
    expect(decideAgentEnding(facts({ stream: { kind: "incomplete" } }))).toMatchObject({
      detail: "malformed_event_stream",
      message: "the agent's event stream ended without its final event",
    });
    expect(decideAgentEnding(facts({ program: cli({ version: "9.9.9" }), stream: { kind: "incomplete" } }))).toMatchObject({
      hint: expect.stringContaining("this is 9.9.9"),
    });
    const brokenOff = decideAgentEnding(
      facts({ stream: { kind: "incomplete" }, exitCode: 1, stderrTail: "  at x.ts:1\nerror: No API key found for anthropic.\n" }),
    );
    expect(brokenOff).toEqual({
      kind: "failed",
      detail: "auth_failed",
      message: "pi exited with code 1 before finishing its stream: error: No API key found for anthropic.",
      hint: pi.login,
    });
    expect(decideAgentEnding(facts({ program: translator, stream: { kind: "incomplete" }, exitCode: 1, stderrTail: "boom" }))).toEqual({
      kind: "failed",
      detail: "malformed_event_stream",
      message: "the agent's event stream ended without its final event",
      hint: null,
    });
  });

  test("8. a signal: killed_by_signal, or for a CLI an error it reported, with its stderr", () => {
    expect(
      decideAgentEnding(facts({ program: command, stream: { kind: "exit_code_decides" }, exitCode: null, signal: "SIGSEGV" })),
    ).toEqual({
      kind: "failed",
      detail: "killed_by_signal",
      message: "the agent was killed by SIGSEGV",
      hint: null,
    });
    expect(decideAgentEnding(facts({ exitCode: null, signal: "SIGSEGV", stderrTail: "Segmentation fault" }))).toEqual({
      kind: "failed",
      detail: "agent_reported_error",
      message: "the agent was killed by SIGSEGV: Segmentation fault",
      hint: "pi reported an error: see events.jsonl and backend-result.json",
    });
  });

  test("9. a non-zero exit: exit_code_<n>, or for a CLI an error it reported", () => {
    expect(decideAgentEnding(facts({ program: command, stream: { kind: "exit_code_decides" }, exitCode: 3 }))).toEqual({
      kind: "failed",
      detail: "exit_code_3",
      message: "the agent exited with code 3",
      hint: null,
    });
    expect(decideAgentEnding(facts({ exitCode: 2 }))).toMatchObject({
      detail: "agent_reported_error",
      message: "the agent exited with code 2",
    });
  });

  test("10. otherwise the agent finished", () => {
    expect(decideAgentEnding(facts())).toEqual({ kind: "finished" });
    expect(decideAgentEnding(facts({ program: command, stream: { kind: "exit_code_decides" } }))).toEqual({ kind: "finished" });
  });
});
