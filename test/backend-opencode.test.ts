import { describe, expect, test } from "vitest";
import { opencodeArgs, opencodeDefinition, opencodeHome, opencodeResume } from "../backends/opencode.js";
import { classifyOpencodeError, createOpencodeParser } from "../backends/opencode-stream.js";
import { cliInfo, cliInvocation, cliResumeInvocation, lines } from "./helpers/backend-fixtures.js";
import { goldenTranscriptTests, replay } from "./helpers/golden.js";

const invocation = cliInvocation("/opt/opencode/bin/opencode");

const SES = "ses_dd6c9795affeGSMYxBzP4W058I";
const line = (type: string, rest: Record<string, unknown> = {}) => ({ type, timestamp: 1795987770277, sessionID: SES, ...rest });
const stepStart = () => line("step_start", { part: { id: "prt_1", messageID: "msg_1", sessionID: SES, type: "step-start" } });
const text = (value: string) =>
  line("text", { part: { id: "prt_2", messageID: "msg_1", sessionID: SES, type: "text", text: value, time: { start: 1, end: 2 } } });
const stepFinish = (
  reason: string,
  tokens = { total: 120, input: 100, output: 20, reasoning: 0, cache: { write: 0, read: 0 } },
  cost = 0,
) => line("step_finish", { part: { id: "prt_3", reason, messageID: "msg_1", sessionID: SES, type: "step-finish", tokens, cost } });
const tool = (name: string, state: Record<string, unknown>, callID = "call_1") =>
  line("tool_use", { part: { type: "tool", tool: name, callID, state, id: "prt_4", sessionID: SES, messageID: "msg_1" } });
const apiError = (data: Record<string, unknown>, name = "APIError") => line("error", { error: { name, data } });

describe("opencode argv, env and home", () => {
  test("runs `run --format json --dir <clone>`, the prompt on stdin, no --auto", () => {
    const command = opencodeDefinition.command(invocation);
    expect(command.file).toBe("/opt/opencode/bin/opencode");
    expect(command.args).toEqual(["run", "--format", "json", "--dir", "/work/clone/ws"]);
    expect(command.stdin).toBe("make add() return the sum");
    expect(command.args).not.toContain("--auto");
    expect(command.env).toEqual({ OPENCODE_CONFIG_CONTENT: '{"instructions":["/work/clone/ws/AGENTS.md"]}' });
  });

  test("passes --model through as -m provider/model", () => {
    expect(opencodeArgs({ cwd: "/c", model: "anthropic/claude-sonnet-4-5" })).toEqual([
      "run",
      "--format",
      "json",
      "--dir",
      "/c",
      "-m",
      "anthropic/claude-sonnet-4-5",
    ]);
  });

  test("a private XDG home under the run's home dir, project config off, offline switches on", () => {
    const home = opencodeDefinition.home("/var/handoff/homes/run-1", { HOME: "/home/ann" });
    expect(home.env).toEqual({
      XDG_CONFIG_HOME: "/var/handoff/homes/run-1/config",
      XDG_DATA_HOME: "/var/handoff/homes/run-1/data",
      XDG_CACHE_HOME: "/var/handoff/homes/run-1/cache",
      XDG_STATE_HOME: "/var/handoff/homes/run-1/state",
      OPENCODE_DISABLE_PROJECT_CONFIG: "1",
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
      OPENCODE_DISABLE_SHARE: "1",
      OPENCODE_DISABLE_CLAUDE_CODE: "1",
    });
    expect(home.dirs).toEqual([
      "/var/handoff/homes/run-1/config/opencode",
      "/var/handoff/homes/run-1/data/opencode",
      "/var/handoff/homes/run-1/cache",
      "/var/handoff/homes/run-1/state",
    ]);
    expect(home.links).toEqual([
      { at: "/var/handoff/homes/run-1/data/opencode/auth.json", target: "/home/ann/.local/share/opencode/auth.json" },
      { at: "/var/handoff/homes/run-1/config/opencode/opencode.json", target: "/home/ann/.config/opencode/opencode.json" },
      { at: "/var/handoff/homes/run-1/config/opencode/opencode.jsonc", target: "/home/ann/.config/opencode/opencode.jsonc" },
      { at: "/var/handoff/homes/run-1/config/opencode/config.json", target: "/home/ann/.config/opencode/config.json" },
      { at: "/var/handoff/homes/run-1/config/opencode/AGENTS.md", target: "/home/ann/.config/opencode/AGENTS.md" },
    ]);
  });

  test("the user's absolute XDG_CONFIG_HOME / XDG_DATA_HOME win; empty or relative ones are ignored", () => {
    const home = opencodeHome("/h", { HOME: "/home/ann", XDG_CONFIG_HOME: "/srv/cfg", XDG_DATA_HOME: "/srv/data" });
    expect(home.links.map((link) => link.target)).toEqual([
      "/srv/data/opencode/auth.json",
      "/srv/cfg/opencode/opencode.json",
      "/srv/cfg/opencode/opencode.jsonc",
      "/srv/cfg/opencode/config.json",
      "/srv/cfg/opencode/AGENTS.md",
    ]);
    const fallback = opencodeHome("/h", { HOME: "/home/ann", XDG_CONFIG_HOME: "", XDG_DATA_HOME: "rel" });
    expect(fallback.links[0]!.target).toBe("/home/ann/.local/share/opencode/auth.json");
    expect(fallback.links[1]!.target).toBe("/home/ann/.config/opencode/opencode.json");
  });
});

describe("opencode resume", () => {
  test("the first turn's argv and env plus --session <id>, in the same clone, with nothing run before it", () => {
    const resumed = opencodeResume(cliResumeInvocation("/opt/opencode/bin/opencode", { resumeId: "ses_1" }));
    const first = opencodeDefinition.command(invocation);
    expect(resumed.command.args).toEqual([...first.args, "--session", "ses_1"]);
    expect(resumed.command.env).toEqual(first.env);
    expect(resumed.command.stdin).toBe("did not pass handoff's checks");
    expect(resumed.sessionId).toBe("ses_1");
    expect(resumed.before).toBeUndefined();
  });

  test("in a new clone, `opencode db` first points the session's stored directory at it, then --session runs there", () => {
    const resumed = opencodeResume(cliResumeInvocation("/o", { cwd: "/work/new/ws", previousCwd: "/work/old/ws", resumeId: "ses_1" }));
    expect(resumed.before).toEqual([
      { file: "/o", args: ["db", "UPDATE session SET directory = '/work/new/ws' WHERE id = 'ses_1'"], stdin: "" },
    ]);
    expect(resumed.command.args).toEqual(["run", "--format", "json", "--dir", "/work/new/ws", "--session", "ses_1"]);
    expect(resumed.command.env).toEqual(opencodeDefinition.command({ ...invocation, cwd: "/work/new/ws" }).env);
    expect(resumed.sessionId).toBe("ses_1");
  });

  test("a quote in the clone's path or the session id stays inside the SQL string (doubled), so it cannot end the statement", () => {
    const resumed = opencodeResume(
      cliResumeInvocation("/o", { cwd: "/w/it's; DROP TABLE session; --", previousCwd: "/w/old", resumeId: "x' OR '1'='1" }),
    );
    expect(resumed.before?.[0]?.args[1]).toBe(
      "UPDATE session SET directory = '/w/it''s; DROP TABLE session; --' WHERE id = 'x'' OR ''1''=''1'",
    );
  });
});

describe("opencode error classification", () => {
  test.each([
    ["APIError", "Incorrect API key provided", 401, null, "auth_failed"],
    ["APIError", "scripted failure (HTTP 403)", 403, null, "auth_failed"],
    ["APIError", "scripted failure (HTTP 429)", 429, null, "rate_limited"],
    ["APIError", "scripted failure (HTTP 500)", 500, null, "provider_error"],
    ["APIError", "Connection reset by server", null, "ECONNRESET", "provider_error"],
    ["APIError", "Cannot connect to API: Unable to connect. Is the computer able to access the url?", null, null, "network_unreachable"],
    ["APIError", "Bad request: unknown parameter", 400, null, "provider_error"],
    ["ProviderAuthError", "token expired", null, null, "auth_failed"],
    ["UnknownError", "The operation timed out.", null, null, "provider_error"],
    ["UnknownError", "Unexpected server error. Check server logs for details.", null, null, "agent_reported_error"],
    ["MessageOutputLengthError", "output length exceeded", null, null, "agent_reported_error"],
  ])("%s %s (%s, %s) → %s", (name, message, status, code, detail) => {
    expect(classifyOpencodeError(name, message, status, code)).toBe(detail);
  });
});

describe("opencode stream parser", () => {
  const parse = (value: string) => replay(value, createOpencodeParser());

  test("a finished run: session once, tools, messages, per-step usage; finished after a step that is not tool-calls", () => {
    const { events, finish } = parse(
      lines(
        stepStart(),
        tool("write", {
          status: "completed",
          input: { filePath: "/c/math.js", content: "x" },
          output: "Wrote file successfully.",
          title: "math.js",
        }),
        stepFinish("tool-calls"),
        stepStart(),
        text("Fixed add(). All tests pass."),
        stepFinish("stop", { total: 230, input: 100, output: 20, reasoning: 10, cache: { write: 50, read: 50 } }, 0.0125),
      ),
    );
    expect(events).toEqual([
      { type: "agent.session", sessionId: SES },
      { type: "agent.tool.started", id: "call_1", name: "write", input: { filePath: "/c/math.js", content: "x" } },
      { type: "agent.tool.finished", id: "call_1", ok: true, output: "Wrote file successfully." },
      { type: "agent.usage", inputTokens: 100, outputTokens: 20, costUsd: 0 },
      { type: "agent.message", text: "Fixed add(). All tests pass." },
      { type: "agent.usage", inputTokens: 200, outputTokens: 30, costUsd: 0.0125 },
    ]);
    expect(finish).toEqual({
      verdict: { kind: "finished" },
      sessionId: SES,
      finalMessage: "Fixed add(). All tests pass.",
      usage: { inputTokens: 300, outputTokens: 50, costUsd: 0.0125 },
    });
  });

  test("reasoning parts become reasoning events; the last text is the final message", () => {
    const { events, finish } = parse(
      lines(line("reasoning", { part: { type: "reasoning", text: "Thinking..." } }), text("first"), text("second"), stepFinish("stop")),
    );
    expect(events.slice(1, 4)).toEqual([
      { type: "agent.reasoning", text: "Thinking..." },
      { type: "agent.message", text: "first" },
      { type: "agent.message", text: "second" },
    ]);
    expect(finish.finalMessage).toBe("second");
  });

  test("an auto-rejected permission ask is permission_denied, though OpenCode exits 0", () => {
    const { events, finish } = parse(
      lines(
        stepStart(),
        tool("write", {
          status: "error",
          input: { filePath: "/tmp/outside.txt", content: "x\n" },
          error: "The user rejected permission to use this specific tool call.",
        }),
        stepFinish("tool-calls"),
      ),
    );
    expect(events).toContainEqual({
      type: "agent.tool.finished",
      id: "call_1",
      ok: false,
      output: "The user rejected permission to use this specific tool call.",
    });
    expect(finish.verdict).toEqual({
      kind: "failed",
      detail: "permission_denied",
      message: 'opencode auto-rejected a permission request and stopped: write {"filePath":"/tmp/outside.txt","content":"x\\n"}',
      hint: null,
    });
  });

  test("a rejection wins even if the stream then reaches a stop step", () => {
    const { finish } = parse(
      lines(
        tool("bash", {
          status: "error",
          input: { command: "cat /etc/x" },
          error: "The user rejected permission to use this specific tool call.",
        }),
        text("ok"),
        stepFinish("stop"),
      ),
    );
    expect(finish.verdict).toMatchObject({ kind: "failed", detail: "permission_denied" });
  });

  test("a tool that failed for another reason (or a deny rule the model went on after) does not fail the run", () => {
    const { events, finish } = parse(
      lines(
        tool("edit", { status: "error", input: { filePath: "/c/a" }, error: "oldString not found in content" }),
        tool(
          "read",
          {
            status: "error",
            input: { filePath: "/c/.env" },
            error: "The user has specified a rule which prevents you from using this specific tool call.",
          },
          "call_2",
        ),
        stepFinish("tool-calls"),
        text("Could not edit."),
        stepFinish("stop"),
      ),
    );
    expect(
      events.filter((event) => event.type === "agent.tool.finished").map((event) => event.type === "agent.tool.finished" && event.ok),
    ).toEqual([false, false]);
    expect(finish.verdict).toEqual({ kind: "finished" });
  });

  test("an error line fails the run, classified by its HTTP status, and is reported as agent.error", () => {
    const { events, finish } = parse(
      lines(
        apiError({
          message: "scripted failure (HTTP 429)",
          statusCode: 429,
          isRetryable: true,
          responseHeaders: { "retry-after": "0" },
          metadata: { url: "http://127.0.0.1:1/v1/chat/completions" },
        }),
      ),
    );
    expect(events).toEqual([
      { type: "agent.session", sessionId: SES },
      { type: "agent.error", message: "APIError (HTTP 429): scripted failure (HTTP 429)" },
    ]);
    expect(finish).toEqual({
      verdict: {
        kind: "failed",
        detail: "rate_limited",
        message: "opencode reported APIError (HTTP 429): scripted failure (HTTP 429)",
        hint: null,
      },
      sessionId: SES,
      finalMessage: null,
      usage: null,
    });
  });

  test("a cut stream: step_starts of the retries, then a connection error → provider_error", () => {
    const { finish } = parse(
      lines(
        stepStart(),
        stepStart(),
        apiError({
          message: "Connection reset by server",
          isRetryable: true,
          metadata: { code: "ECONNRESET", syscall: "", message: "The socket connection was closed unexpectedly." },
        }),
      ),
    );
    expect(finish.verdict).toMatchObject({
      kind: "failed",
      detail: "provider_error",
      message: "opencode reported APIError: Connection reset by server",
    });
  });

  test("the first error decides; an error after a finished step still fails the run", () => {
    const { finish } = parse(
      lines(
        text("hi"),
        stepFinish("stop"),
        apiError({ message: "Incorrect API key provided", statusCode: 401 }),
        apiError({ message: "later", statusCode: 500 }),
      ),
    );
    expect(finish.verdict).toMatchObject({ kind: "failed", detail: "auth_failed" });
  });

  test("OpenCode's catch-all error (an unknown model) gets a hint about the model, not a provider verdict", () => {
    const { finish } = parse(
      lines(
        line("error", {
          error: {
            name: "UnknownError",
            data: { message: "Unexpected server error. Check server logs for details.", ref: "err_4e8cfb16" },
          },
        }),
      ),
    );
    expect(finish.verdict).toMatchObject({
      kind: "failed",
      detail: "agent_reported_error",
      hint: expect.stringContaining("opencode models"),
    });
  });

  test("an error line of an unexpected shape is a diagnostic and still a failure", () => {
    const { events, finish } = parse(lines(line("error", { error: "flat string" })));
    expect(events.map((event) => event.type)).toEqual(["agent.session", "diagnostic", "agent.error"]);
    expect(finish.verdict).toMatchObject({ kind: "failed", detail: "agent_reported_error" });
  });

  test("no step_finish, or a last step that asked for tools, is incomplete", () => {
    expect(parse("").finish.verdict).toEqual({ kind: "incomplete" });
    expect(parse(lines(stepStart(), text("partial"))).finish.verdict).toEqual({ kind: "incomplete" });
    const toolCalls = parse(
      lines(stepStart(), tool("bash", { status: "completed", input: { command: "ls" }, output: "a\n" }), stepFinish("tool-calls")),
    );
    expect(toolCalls.finish.verdict).toEqual({ kind: "incomplete" });
    expect(toolCalls.finish.sessionId).toBe(SES);
  });

  test("a step_finish without a reason still counts as an end (reason unknown), without tokens as zero usage", () => {
    const { events, finish } = parse(lines(line("step_finish", { part: { type: "step-finish" } })));
    expect(events).toContainEqual({ type: "agent.usage", inputTokens: 0, outputTokens: 0, costUsd: null });
    expect(finish.verdict).toEqual({ kind: "finished" });
    expect(finish.usage).toEqual({ inputTokens: 0, outputTokens: 0, costUsd: null });
  });

  test("bad lines, unknown types and odd shapes become diagnostics, never a crash", () => {
    const { events, finish } = parse(
      lines(
        "Performing one time database migration...",
        '{"type":"text"',
        { no: "type" },
        line("done", { reason: "idle" }),
        line("text", { part: { text: 42 } }),
        line("tool_use", { part: { tool: "bash" } }),
        line("step_finish", { part: "nope" }),
        line("reasoning", {}),
      ),
    );
    const diagnostics = events.filter((event) => event.type === "diagnostic");
    expect(diagnostics.map((event) => event.type === "diagnostic" && event.message)).toEqual([
      "a line that is not JSON",
      "a line that is not JSON",
      expect.stringContaining("a '(no type)' event of an unexpected shape"),
      'an event type handoff does not know: "done"',
      expect.stringContaining("a 'text' event of an unexpected shape"),
      expect.stringContaining("a 'tool_use' event of an unexpected shape"),
      expect.stringContaining("a 'step_finish' event of an unexpected shape"),
      expect.stringContaining("a 'reasoning' event of an unexpected shape"),
    ]);
    expect(diagnostics.every((event) => event.type === "diagnostic" && typeof event.raw === "string")).toBe(true);
    expect(events.filter((event) => event.type === "agent.session")).toHaveLength(1);
    expect(finish.verdict).toEqual({ kind: "incomplete" });
  });

  test("a huge tool output is clipped in the event", () => {
    const { events } = parse(lines(tool("bash", { status: "completed", input: { command: "yes" }, output: "y\n".repeat(10_000) })));
    const finished = events.find((event) => event.type === "agent.tool.finished");
    expect(finished?.type).toBe("agent.tool.finished");
    // clip() keeps 4000 characters and appends "… (16000 more characters)".
    const length = finished?.type === "agent.tool.finished" ? (finished.output?.length ?? 0) : 0;
    expect(length).toBeGreaterThan(1000);
    expect(length).toBeLessThan(4100);
  });
});

goldenTranscriptTests("opencode", () => opencodeDefinition.parser(invocation, cliInfo("opencode")));
