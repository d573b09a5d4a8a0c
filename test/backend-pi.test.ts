import { lstatSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { PI_KEYS_EXTENSION, PI_LOGIN_FILES, piArgs, piDefinition, piHome, piResume, userPiAgentDir } from "../backends/pi.js";
import { classifyProviderError } from "../src/agent/cli-failures.js";
import { prepareCliHome } from "../src/agent/cli-home-prepare.js";
import { PI_SKIPPED_TYPES, createPiStreamParser } from "../backends/pi-stream.js";
import { cliInfo, cliInvocation, cliResumeInvocation, lines } from "./helpers/backend-fixtures.js";
import { goldenTranscriptTests, replay } from "./helpers/golden.js";

const invocation = cliInvocation("/opt/pi/bin/pi");

const SESSION = {
  type: "session",
  version: 3,
  id: "01a22937-4151-73c7-9371-6215e08c4a45",
  timestamp: "2026-11-29T21:30:16.785Z",
  cwd: "/work/clone/ws",
};

function usage(input: number, output: number, total = 0, cacheRead = 0) {
  return {
    input,
    output,
    cacheRead,
    cacheWrite: 0,
    totalTokens: input + output + cacheRead,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total },
  };
}

function assistant(content: unknown[], extra: Record<string, unknown> = {}) {
  return {
    role: "assistant",
    content,
    api: "openai-completions",
    provider: "mock",
    model: "mock-model",
    usage: usage(100, 20),
    stopReason: "stop",
    timestamp: 1,
    ...extra,
  };
}

const failed = (errorMessage: string, extra: Record<string, unknown> = {}) => ({
  type: "message_end",
  message: assistant([], { usage: usage(0, 0), stopReason: "error", errorMessage, ...extra }),
});

describe("pi argv, env and home", () => {
  test("json mode, no extensions but handoff's own, sessions in the private home, the prompt on stdin", () => {
    const command = piDefinition.command(invocation);
    expect(command.file).toBe("/opt/pi/bin/pi");
    expect(command.args).toEqual([
      "--mode",
      "json",
      "--no-extensions",
      "-e",
      "/var/handoff/homes/run-1/handoff-pi-keys.ts",
      "--session-dir",
      "/var/handoff/homes/run-1/pi/sessions",
    ]);
    expect(command.stdin).toBe("make add() return the sum");
    expect(command.env).toBeUndefined();
  });

  test("passes --model through as provider/id", () => {
    expect(piArgs({ homeDir: "/h", model: "anthropic/claude-sonnet-4-5" }).slice(-2)).toEqual(["--model", "anthropic/claude-sonnet-4-5"]);
  });

  test("a private PI_CODING_AGENT_DIR, offline, with the user's auth.json, models.json and settings.json linked in", () => {
    const home = piDefinition.home("/var/handoff/homes/run-1", { HOME: "/home/ann" });
    expect(home.env).toEqual({ PI_CODING_AGENT_DIR: "/var/handoff/homes/run-1/pi", PI_OFFLINE: "1" });
    expect(home.dirs).toEqual(["/var/handoff/homes/run-1/pi", "/var/handoff/homes/run-1/pi/sessions"]);
    expect(PI_LOGIN_FILES).toEqual(["auth.json", "models.json", "settings.json"]);
    expect(home.links).toEqual([
      { at: "/var/handoff/homes/run-1/pi/auth.json", target: "/home/ann/.pi/agent/auth.json" },
      { at: "/var/handoff/homes/run-1/pi/models.json", target: "/home/ann/.pi/agent/models.json" },
      { at: "/var/handoff/homes/run-1/pi/settings.json", target: "/home/ann/.pi/agent/settings.json" },
    ]);
    // handoff's key extension, outside pi's agent dir (pi never discovers it there): what -e loads.
    expect(home.files).toEqual([{ at: "/var/handoff/homes/run-1/handoff-pi-keys.ts", text: PI_KEYS_EXTENSION }]);
    expect(PI_KEYS_EXTENSION).toContain('"anthropic":"HANDOFF_PI_BASE_URL_ANTHROPIC"');
  });

  test("the user's $PI_CODING_AGENT_DIR wins over ~/.pi/agent; ~ is expanded as pi does, relative is ignored", () => {
    expect(userPiAgentDir({ HOME: "/home/ann", PI_CODING_AGENT_DIR: "/srv/pi" })).toBe("/srv/pi");
    expect(userPiAgentDir({ HOME: "/home/ann", PI_CODING_AGENT_DIR: "~/pi-agent" })).toBe("/home/ann/pi-agent");
    expect(userPiAgentDir({ HOME: "/home/ann", PI_CODING_AGENT_DIR: "" })).toBe("/home/ann/.pi/agent");
    expect(userPiAgentDir({ HOME: "/home/ann", PI_CODING_AGENT_DIR: "rel" })).toBe("/home/ann/.pi/agent");
    expect(piHome("/h", { HOME: "/home/ann", PI_CODING_AGENT_DIR: "/srv/pi" }).links[0]!.target).toBe("/srv/pi/auth.json");
  });
});

describe("pi resume", () => {
  test("in the same clone: the first turn's flags (no extensions, private sessions) plus --session <id>, the same id", () => {
    const resumed = piResume(cliResumeInvocation("/opt/pi/bin/pi", { resumeId: "01a2" }));
    expect(resumed.command.args).toEqual([...piDefinition.command(invocation).args, "--session", "01a2"]);
    expect(resumed.command.stdin).toBe("did not pass handoff's checks");
    expect(resumed.sessionId).toBe("01a2");
  });

  test("in a new clone: --fork <id>, a new session bound to it whose id the stream reports", () => {
    const resumed = piResume(cliResumeInvocation("/opt/pi/bin/pi", { resumeId: "01a2", cwd: "/work/new/ws", previousCwd: "/work/old/ws" }));
    expect(resumed.command.args.slice(-2)).toEqual(["--fork", "01a2"]);
    expect(resumed.command.args).toContain("--no-extensions");
    expect(resumed.sessionId).toBeUndefined();
  });
});

describe("pi-family failure messages", () => {
  test.each([
    ["401 invalid x-api-key", null, "auth_failed"],
    ['401 {"type":"error","error":{"type":"authentication_error"}}', null, "auth_failed"],
    ["403 Forbidden", null, "auth_failed"],
    ["429 scripted failure (HTTP 429)", null, "rate_limited"],
    ["500 Internal server error", null, "provider_error"],
    ["529 Overloaded", null, "provider_error"],
    // omp: the status comes as a field, the text may say anything
    ["scripted failure\nsomething (type=x)", 401, "auth_failed"],
    ["scripted failure", 429, "rate_limited"],
    ["scripted failure", 503, "provider_error"],
    // a stream that broke mid-response: pi (undici) and omp (bun)
    ["terminated", null, "provider_error"],
    [
      "ECONNRESET: The socket connection was closed unexpectedly. For more information, pass `verbose: true` in the second argument to fetch()",
      null,
      "provider_error",
    ],
    // nothing answered
    ["Connection error.", null, "network_unreachable"],
    ["ECONNREFUSED: Unable to connect. Is the computer able to access the url?", null, "network_unreachable"],
    ["No API key found for mock", null, "auth_failed"],
    ["Deadline exceeded", null, "agent_reported_error"],
  ] as const)("%j (status %j) is %s", (message, status, detail) => {
    expect(classifyProviderError(message, status)).toBe(detail);
  });
});

describe("pi-family stream parser", () => {
  const parse = (text: string) => replay(text, createPiStreamParser({ cli: "pi" }));

  test("a fix: session first, tool events with the changed file, messages, usage summed with cost, finished", () => {
    const { events, finish } = parse(
      lines(
        SESSION,
        { type: "agent_start" },
        { type: "turn_start" },
        { type: "message_start", message: { role: "user", content: [{ type: "text", text: "make add() return the sum" }], timestamp: 1 } },
        { type: "message_end", message: { role: "user", content: [{ type: "text", text: "make add() return the sum" }], timestamp: 1 } },
        { type: "message_update", assistantMessageEvent: { type: "text_delta", delta: "Fix", partial: {} }, message: {} },
        {
          type: "message_end",
          message: assistant(
            [
              { type: "thinking", thinking: "add subtracts" },
              { type: "text", text: "Fixing it." },
              { type: "toolCall", id: "call_1", name: "write", arguments: { path: "math.js", content: "x" } },
            ],
            {
              stopReason: "toolUse",
              usage: usage(100, 20, 0.25, 50),
            },
          ),
        },
        { type: "tool_execution_start", toolCallId: "call_1", toolName: "write", args: { path: "math.js", content: "x" } },
        { type: "tool_execution_update", toolCallId: "call_1", toolName: "write", args: {}, partialResult: {} },
        {
          type: "tool_execution_end",
          toolCallId: "call_1",
          toolName: "write",
          result: { content: [{ type: "text", text: "Successfully wrote 1 bytes to math.js" }] },
          isError: false,
        },
        {
          type: "message_end",
          message: { role: "toolResult", toolCallId: "call_1", toolName: "write", content: [{ type: "text", text: "ok" }], isError: false },
        },
        { type: "turn_end", message: assistant([]), toolResults: [] },
        {
          type: "message_end",
          message: assistant([{ type: "text", text: "Fixed add(). All tests pass." }], { usage: usage(100, 20, 0.5) }),
        },
        { type: "turn_end", message: assistant([]), toolResults: [] },
        { type: "agent_end", messages: [] },
      ),
    );
    expect(events).toEqual([
      { type: "agent.session", sessionId: SESSION.id },
      { type: "agent.reasoning", text: "add subtracts" },
      { type: "agent.message", text: "Fixing it." },
      { type: "agent.usage", inputTokens: 150, outputTokens: 20, costUsd: 0.25 },
      { type: "agent.tool.started", id: "call_1", name: "write", input: { path: "math.js", content: "x" } },
      { type: "agent.tool.finished", id: "call_1", ok: true, output: "Successfully wrote 1 bytes to math.js" },
      { type: "agent.file.changed", path: "math.js", change: "write" },
      { type: "agent.message", text: "Fixed add(). All tests pass." },
      { type: "agent.usage", inputTokens: 100, outputTokens: 20, costUsd: 0.5 },
    ]);
    expect(finish).toEqual({
      verdict: { kind: "finished" },
      sessionId: SESSION.id,
      finalMessage: "Fixed add(). All tests pass.",
      usage: { inputTokens: 250, outputTokens: 40, costUsd: 0.75 },
    });
  });

  test("a failed tool is ok:false and changes no file; a non-text result is kept as JSON", () => {
    const { events } = parse(
      lines(
        SESSION,
        { type: "agent_start" },
        { type: "tool_execution_start", toolCallId: "t1", toolName: "edit", args: { path: "a.js" } },
        {
          type: "tool_execution_end",
          toolCallId: "t1",
          toolName: "edit",
          result: { content: [{ type: "text", text: "old text not found" }] },
          isError: true,
        },
        { type: "tool_execution_start", toolCallId: "t2", toolName: "custom" },
        { type: "tool_execution_end", toolCallId: "t2", toolName: "custom", result: { answer: 42 } },
      ),
    );
    expect(events.slice(1)).toEqual([
      { type: "agent.tool.started", id: "t1", name: "edit", input: { path: "a.js" } },
      { type: "agent.tool.finished", id: "t1", ok: false, output: "old text not found" },
      { type: "agent.tool.started", id: "t2", name: "custom" },
      { type: "agent.tool.finished", id: "t2", ok: true, output: '{"answer":42}' },
    ]);
  });

  test("pi exits 0 on a 401: the last assistant message's stopReason decides, classified from its errorMessage", () => {
    const { events, finish } = parse(
      lines(SESSION, { type: "agent_start" }, failed("401 invalid x-api-key"), { type: "agent_end", messages: [] }),
    );
    expect(events).toContainEqual({ type: "agent.error", message: "401 invalid x-api-key" });
    expect(finish.verdict).toEqual({ kind: "failed", detail: "auth_failed", message: "401 invalid x-api-key", hint: null });
    expect(finish.usage).toEqual({ inputTokens: 0, outputTokens: 0, costUsd: 0 });
    expect(finish.finalMessage).toBeNull();
  });

  test("omp's errorStatus is used when the text has no status", () => {
    const { finish } = parse(
      lines(SESSION, { type: "agent_start" }, failed("rate limited upstream", { errorStatus: 429 }), { type: "agent_end", messages: [] }),
    );
    expect(finish.verdict).toMatchObject({ kind: "failed", detail: "rate_limited" });
  });

  test("an aborted turn is a failure; omp's own silent abort is not", () => {
    const aborted = parse(
      lines(
        SESSION,
        { type: "agent_start" },
        { type: "message_end", message: assistant([], { stopReason: "aborted" }) },
        { type: "agent_end", messages: [] },
      ),
    );
    expect(aborted.finish.verdict).toMatchObject({ kind: "failed", detail: "agent_reported_error" });
    const deadline = parse(
      lines(SESSION, { type: "agent_start" }, failed("Deadline exceeded", { stopReason: "aborted" }), { type: "agent_end", messages: [] }),
    );
    expect(deadline.finish.verdict).toMatchObject({ kind: "failed", detail: "agent_reported_error", message: "Deadline exceeded" });
    const silent = parse(
      lines(SESSION, { type: "agent_start" }, failed("__omp.silent_abort__", { stopReason: "aborted" }), {
        type: "agent_end",
        messages: [],
      }),
    );
    expect(silent.finish.verdict).toEqual({ kind: "finished" });
    expect(silent.events.some((event) => event.type === "agent.error")).toBe(false);
  });

  test("a recovered error is not the verdict: only the last assistant message counts", () => {
    const { finish } = parse(
      lines(
        SESSION,
        { type: "agent_start" },
        failed("500 boom"),
        { type: "message_end", message: assistant([{ type: "text", text: "done" }]) },
        { type: "agent_end", messages: [] },
      ),
    );
    expect(finish.verdict).toEqual({ kind: "finished" });
    expect(finish.finalMessage).toBe("done");
  });

  test("pi 0.73.1 retries after agent_end: the run is over only at the last agent_end, errors on the way are non-fatal", () => {
    const retry = { type: "auto_retry_start", attempt: 1, maxAttempts: 3, delayMs: 2000, errorMessage: "500 Internal server error" };
    const head = [SESSION, { type: "agent_start" }, failed("500 Internal server error"), { type: "agent_end", messages: [] }, retry];
    const cut = parse(lines(...head));
    expect(cut.events).toContainEqual({
      type: "agent.error",
      message: "pi retries (attempt 1 of 3 in 2.0 s) after: 500 Internal server error",
    });
    expect(cut.finish.verdict).toEqual({ kind: "incomplete" });

    const gaveUp = parse(
      lines(
        ...head,
        { type: "agent_start" },
        failed("500 Internal server error"),
        { type: "agent_end", messages: [] },
        { type: "auto_retry_end", success: false, attempt: 3, finalError: "500 Internal server error" },
      ),
    );
    expect(gaveUp.events).toContainEqual({ type: "agent.error", message: "pi gave up retrying: 500 Internal server error" });
    expect(gaveUp.finish.verdict).toMatchObject({ kind: "failed", detail: "provider_error" });

    const recovered = parse(
      lines(
        ...head,
        { type: "agent_start" },
        { type: "message_end", message: assistant([{ type: "text", text: "ok" }]) },
        { type: "agent_end", messages: [] },
        { type: "auto_retry_end", success: true, attempt: 1 },
      ),
    );
    expect(recovered.finish.verdict).toEqual({ kind: "finished" });
  });

  test("pi 1.x: agent_end with willRetry is not the end, agent_settled is; delta-only updates and a system message are fine", () => {
    const base = [
      SESSION,
      { type: "message_start", message: { role: "system", content: [{ type: "text", text: "You are pi" }] } },
      { type: "message_end", message: { role: "system", content: [{ type: "text", text: "You are pi" }] } },
      { type: "agent_start" },
      failed("429 slow down"),
      { type: "agent_end", messages: [], willRetry: true },
    ];
    expect(parse(lines(...base)).finish.verdict).toEqual({ kind: "incomplete" });
    const settled = parse(
      lines(
        ...base,
        { type: "agent_start" },
        { type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "ok" }, usage: {} },
        { type: "message_end", message: assistant([{ type: "text", text: "ok" }]) },
        { type: "agent_end", messages: [], willRetry: false },
        { type: "agent_settled", aborted: false },
      ),
    );
    expect(settled.finish.verdict).toEqual({ kind: "finished" });
    expect(settled.events.filter((event) => event.type === "diagnostic")).toEqual([]);
    expect(
      parse(lines(SESSION, { type: "agent_start" }, failed("401 no"), { type: "agent_settled", aborted: false })).finish.verdict,
    ).toMatchObject({ detail: "auth_failed" });
  });

  test("omp: agent_end with isTerminal:false is a continuation; notices pass on as JSON, informational types are skipped", () => {
    const notice = { type: "notice", level: "warning", message: "model fallback" };
    const { events, finish } = parse(
      lines(
        SESSION,
        { type: "advisor_cost_changed" },
        { type: "agent_start" },
        { type: "message_end", message: assistant([{ type: "text", text: "first" }]) },
        { type: "agent_end", messages: [], isTerminal: false },
        notice,
        { type: "todo_reminder", todos: [], attempt: 1, maxAttempts: 3 },
      ),
    );
    expect(finish.verdict).toEqual({ kind: "incomplete" });
    expect(events).toContainEqual({ type: "agent.json", data: notice });
    expect(events.filter((event) => event.type === "diagnostic")).toEqual([]);
  });

  test("a stream that stops before agent_end is incomplete, an empty or unreadable one too", () => {
    expect(
      parse(lines(SESSION, { type: "agent_start" }, { type: "message_end", message: assistant([{ type: "text", text: "hi" }]) })).finish
        .verdict,
    ).toEqual({ kind: "incomplete" });
    expect(parse("").finish.verdict).toEqual({ kind: "incomplete" });
    expect(parse(lines("garbage", { type: "nope" })).finish.verdict).toEqual({ kind: "incomplete" });
  });

  test("only the session header: pi stopped before its agent started (it says why on stderr)", () => {
    const header = parse(lines(SESSION));
    expect(header.finish).toEqual({
      verdict: { kind: "incomplete" },
      sessionId: SESSION.id,
      finalMessage: null,
      usage: null,
    });
  });

  test("agent_end without any model response is an error", () => {
    expect(parse(lines(SESSION, { type: "agent_start" }, { type: "agent_end", messages: [] })).finish.verdict).toMatchObject({
      kind: "failed",
      detail: "agent_reported_error",
    });
  });

  test("compaction failures are errors, not the end", () => {
    const { events } = parse(
      lines(SESSION, { type: "compaction_end", reason: "overflow", aborted: false, willRetry: false, errorMessage: "too big" }),
    );
    expect(events).toContainEqual({ type: "agent.error", message: "pi could not compact the context: too big" });
  });

  test("bad lines, unknown types and odd shapes become diagnostics, never a crash", () => {
    const { events, finish } = parse(
      lines(
        "not json",
        "[1,2]",
        { no: "type" },
        { type: "session" },
        SESSION,
        SESSION,
        { type: "agent_start" },
        { type: "brand_new_event", x: 1 },
        { type: "message_end" },
        { type: "message_end", message: { role: "assistant", content: "a string" } },
        { type: "tool_execution_start", toolCallId: 7 },
        { type: "tool_execution_end" },
        { type: "auto_retry_start" },
        { type: "auto_retry_end" },
        { type: "agent_end", willRetry: "no" },
        { type: "message_end", message: assistant([{ type: "text", text: "still fine" }]) },
        { type: "agent_end", messages: [] },
      ),
    );
    const diagnostics = events.filter((event) => event.type === "diagnostic");
    expect(diagnostics).toHaveLength(12);
    expect(diagnostics[0]).toMatchObject({ message: "a line that is not JSON", raw: "not json" });
    expect(diagnostics.map((event) => (event.type === "diagnostic" ? event.message : ""))).toContain(
      'an event type handoff does not know: "brand_new_event"',
    );
    expect(events.filter((event) => event.type === "agent.session")).toHaveLength(1);
    expect(finish.verdict).toEqual({ kind: "finished" });
    expect(finish.finalMessage).toBe("still fine");
  });

  test("the skipped types are the ones documented (message_update above all)", () => {
    expect(PI_SKIPPED_TYPES.has("message_update")).toBe(true);
    expect(PI_SKIPPED_TYPES.has("agent_end")).toBe(false);
  });
});

goldenTranscriptTests("pi", () => piDefinition.parser(invocation, cliInfo("pi")));

describe("pi's key extension in the private home", () => {
  test("written before each turn, replacing what the agent left there (a link is replaced, not written through)", () => {
    const dir = mkdtempSync(join(tmpdir(), "handoff-pi-home-"));
    const outside = join(dir, "outside.txt");
    writeFileSync(outside, "the user's file\n");
    const home = piHome(join(dir, "home"), { HOME: join(dir, "user") });
    prepareCliHome(home);
    const at = home.files![0]!.at;
    expect(readFileSync(at, "utf8")).toBe(PI_KEYS_EXTENSION);
    rmSync(at);
    symlinkSync(outside, at);
    prepareCliHome(home);
    expect(lstatSync(at).isSymbolicLink()).toBe(false);
    expect(readFileSync(at, "utf8")).toBe(PI_KEYS_EXTENSION);
    expect(readFileSync(outside, "utf8")).toBe("the user's file\n");
  });
});
