import { describe, expect, test } from "vitest";
import {
  CLAUDE_ALLOWED_TOOLS,
  claudeArgs,
  claudeDefinition,
  claudeHome,
  claudeProjectSlug,
  claudeResume,
  userClaudeConfigDir,
} from "../backends/claude.js";
import { classifyClaudeError, createClaudeParser, detailOfErrorCode } from "../backends/claude-stream.js";
import type { StreamParser } from "../src/agent/stream-contract.js";
import { cliInfo, cliInvocation, cliResumeInvocation, lines } from "./helpers/backend-fixtures.js";
import { goldenTranscriptTests, replay } from "./helpers/golden.js";

const SESSION = "00000000-0000-4000-8000-000000000000";

const invocation = cliInvocation("/opt/claude/bin/claude", { sessionId: SESSION });

const init = {
  type: "system",
  subtype: "init",
  cwd: "/c",
  session_id: SESSION,
  model: "claude-sonnet-4-5",
  claude_code_version: "2.1.197",
  tools: ["Bash"],
};
const usage = { input_tokens: 200, output_tokens: 40, cache_creation_input_tokens: 10, cache_read_input_tokens: 5 };
const success = {
  type: "result",
  subtype: "success",
  is_error: false,
  api_error_status: null,
  num_turns: 2,
  result: "Done.",
  session_id: SESSION,
  total_cost_usd: 0.0123,
  usage,
  permission_denials: [],
  terminal_reason: "completed",
};
function assistant(content: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "assistant",
    message: { id: "msg_1", role: "assistant", model: "claude-sonnet-4-5", content },
    parent_tool_use_id: null,
    session_id: SESSION,
    ...extra,
  };
}
function toolResult(id: string, content: unknown, isError?: boolean, toolUseResult?: unknown): Record<string, unknown> {
  return {
    type: "user",
    message: {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: id, content, ...(isError === undefined ? {} : { is_error: isError }) }],
    },
    parent_tool_use_id: null,
    session_id: SESSION,
    ...(toolUseResult === undefined ? {} : { tool_use_result: toolUseResult }),
  };
}
/** A failed API call as Claude 2.1.197 reports it: a synthetic assistant message, then `success` with is_error. */
function apiFailure(text: string, code: string, status: number | null): string {
  return lines(
    init,
    assistant([{ type: "text", text }], {
      error: code,
      message: { id: "x", model: "<synthetic>", role: "assistant", content: [{ type: "text", text }] },
    }),
    {
      ...success,
      is_error: true,
      api_error_status: status,
      num_turns: 1,
      result: text,
      total_cost_usd: 0,
      usage: { input_tokens: 0, output_tokens: 0 },
    },
  );
}

describe("claude argv, env and home", () => {
  test("print mode, stream-json, handoff's session id, acceptEdits plus Bash, user settings only, no MCP; prompt on stdin", () => {
    const command = claudeDefinition.command(invocation);
    expect(command.file).toBe("/opt/claude/bin/claude");
    expect(command.args).toEqual([
      "-p",
      "--output-format",
      "stream-json",
      "--verbose",
      `--session-id=${SESSION}`,
      "--permission-mode",
      "acceptEdits",
      "--allowedTools=Bash,Read,Glob,Grep",
      "--setting-sources",
      "user",
      "--strict-mcp-config",
    ]);
    expect(command.stdin).toBe("make add() return the sum");
    expect(command.env).toBeUndefined();
  });

  test("never bypassPermissions (claude refuses it as root) and never Write/Edit everywhere", () => {
    const args = claudeArgs(invocation);
    expect(args.join(" ")).not.toMatch(/bypassPermissions|dangerously/);
    expect(CLAUDE_ALLOWED_TOOLS).not.toContain("Write");
    expect(CLAUDE_ALLOWED_TOOLS).not.toContain("Edit");
  });

  test("passes --model with '=', so a name starting with '-' stays a value", () => {
    expect(claudeArgs({ sessionId: SESSION, model: "claude-opus-4-5" }).at(-1)).toBe("--model=claude-opus-4-5");
    expect(claudeArgs({ sessionId: SESSION, model: "-x" }).at(-1)).toBe("--model=-x");
  });

  test("a private CLAUDE_CONFIG_DIR under the run's home dir, with the user's login and settings linked in, not .claude.json", () => {
    const home = claudeDefinition.home("/var/handoff/homes/run-1", { HOME: "/home/ann" });
    expect(home.env).toEqual({
      CLAUDE_CONFIG_DIR: "/var/handoff/homes/run-1/claude",
      DISABLE_AUTOUPDATER: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    });
    expect(home.dirs).toEqual(["/var/handoff/homes/run-1/claude"]);
    expect(home.links).toEqual([
      { at: "/var/handoff/homes/run-1/claude/.credentials.json", target: "/home/ann/.claude/.credentials.json" },
      { at: "/var/handoff/homes/run-1/claude/settings.json", target: "/home/ann/.claude/settings.json" },
    ]);
    expect(home.links.map((link) => link.target).join(" ")).not.toContain(".claude.json");
  });

  test("the user's $CLAUDE_CONFIG_DIR wins over ~/.claude when absolute; empty or relative is ignored", () => {
    expect(userClaudeConfigDir({ HOME: "/home/ann", CLAUDE_CONFIG_DIR: "/srv/claude" })).toBe("/srv/claude");
    expect(userClaudeConfigDir({ HOME: "/home/ann", CLAUDE_CONFIG_DIR: "" })).toBe("/home/ann/.claude");
    expect(userClaudeConfigDir({ HOME: "/home/ann", CLAUDE_CONFIG_DIR: "rel" })).toBe("/home/ann/.claude");
    expect(claudeHome("/h", { HOME: "/home/ann", CLAUDE_CONFIG_DIR: "/srv/claude" }).links[0]!.target).toBe(
      "/srv/claude/.credentials.json",
    );
  });
});

describe("claude resume", () => {
  test("-p --resume=<id> with every other flag of a first turn, no --session-id (it would fork); nothing to copy in the same clone", () => {
    const resumed = claudeResume(cliResumeInvocation("/opt/claude/bin/claude", { resumeId: SESSION }));
    const first = claudeDefinition.command(invocation).args;
    expect(resumed.command.args).toEqual(first.map((arg) => (arg.startsWith("--session-id=") ? `--resume=${SESSION}` : arg)));
    expect(resumed.command.args.some((arg) => arg.startsWith("--session-id"))).toBe(false);
    expect(resumed.command.stdin).toBe("did not pass handoff's checks");
    expect(resumed.sessionId).toBe(SESSION);
    expect(resumed.copies).toEqual([]);
  });

  test("in a new clone, the transcript is copied from the old cwd's project folder to the new one's, inside the home", () => {
    const resumed = claudeResume(
      cliResumeInvocation("/c", { resumeId: SESSION, cwd: "/work/new_2/ws.b", previousCwd: "/work/old/ws", homeDir: "/h/kept" }),
    );
    expect(resumed.copies).toEqual([
      { from: `/h/kept/claude/projects/-work-old-ws/${SESSION}.jsonl`, to: `/h/kept/claude/projects/-work-new-2-ws-b/${SESSION}.jsonl` },
    ]);
  });

  test("the project folder turns every character but a letter or digit into '-'", () => {
    expect(claudeProjectSlug("/tmp/a_b.c/Dir-9 x")).toBe("-tmp-a-b-c-Dir-9-x");
  });
});

describe("claude failure messages", () => {
  test.each([
    ["Failed to authenticate. API Error: 401 scripted failure (HTTP 401)", 401, "authentication_failed", "auth_failed"],
    ["Invalid API key · Fix external API key", null, "authentication_failed", "auth_failed"],
    ["Not logged in · Please run /login", null, null, "auth_failed"],
    ["API Error: Request rejected (429) · scripted failure (HTTP 429)", 429, "rate_limit", "rate_limited"],
    ["Credit balance is too low", 400, "billing_error", "rate_limited"],
    ["API Error: 500 scripted failure (HTTP 500). This is a server-side issue", 500, "server_error", "provider_error"],
    ["API Error: Repeated 529 Overloaded errors", 529, "overloaded", "provider_error"],
    ["API Error: Unable to connect to API (ConnectionRefused)", null, "server_error", "network_unreachable"],
    [
      "API Error: Connection to the API was lost (ECONNRESET). This is usually temporary — try again.",
      null,
      "server_error",
      "provider_error",
    ],
    ["API Error: 400 prompt is too long", 400, "invalid_request", "agent_reported_error"],
  ])("%s (%s, %s) → %s", (message, status, code, detail) => {
    expect(classifyClaudeError(message, status, code)).toBe(detail);
  });

  test("error codes without a meaning for the user give no detail", () => {
    expect(detailOfErrorCode("unknown")).toBeNull();
    expect(detailOfErrorCode(null)).toBeNull();
  });
});

describe("claude stream parser", () => {
  const parse = (text: string) => replay(text, createClaudeParser(SESSION));

  test("a finished run: the chosen session at once, text, thinking, tools, usage with cache and cost", () => {
    const { events, finish } = parse(
      lines(
        init,
        assistant([
          { type: "thinking", thinking: "Look at math.js", signature: "sig" },
          { type: "redacted_thinking", data: "…" },
          { type: "text", text: "Let me fix it." },
          { type: "tool_use", id: "toolu_1", name: "Write", input: { file_path: "/c/math.js", content: "x" } },
        ]),
        toolResult("toolu_1", "File created successfully at: /c/math.js", undefined, {
          type: "create",
          filePath: "/c/math.js",
          content: "x",
        }),
        assistant([{ type: "tool_use", id: "toolu_2", name: "Edit", input: { file_path: "/c/b.js" } }]),
        toolResult("toolu_2", [{ type: "text", text: "edited" }], false, { filePath: "/c/b.js", structuredPatch: [] }),
        assistant([{ type: "tool_use", id: "toolu_3", name: "Read", input: { file_path: "/c/b.js" } }]),
        toolResult("toolu_3", "1\tx", false, { type: "text", file: { filePath: "/c/b.js" } }),
        assistant([{ type: "text", text: "Done." }]),
        success,
      ),
    );
    expect(events).toEqual([
      { type: "agent.session", sessionId: SESSION },
      { type: "agent.reasoning", text: "Look at math.js" },
      { type: "agent.message", text: "Let me fix it." },
      { type: "agent.tool.started", id: "toolu_1", name: "Write", input: { file_path: "/c/math.js", content: "x" } },
      { type: "agent.tool.finished", id: "toolu_1", ok: true, output: "File created successfully at: /c/math.js" },
      { type: "agent.file.changed", path: "/c/math.js", change: "create" },
      { type: "agent.tool.started", id: "toolu_2", name: "Edit", input: { file_path: "/c/b.js" } },
      { type: "agent.tool.finished", id: "toolu_2", ok: true, output: "edited" },
      { type: "agent.file.changed", path: "/c/b.js", change: "update" },
      { type: "agent.tool.started", id: "toolu_3", name: "Read", input: { file_path: "/c/b.js" } },
      { type: "agent.tool.finished", id: "toolu_3", ok: true, output: "1\tx" },
      { type: "agent.message", text: "Done." },
      { type: "agent.usage", inputTokens: 215, outputTokens: 40, costUsd: 0.0123 },
    ]);
    expect(finish).toEqual({
      verdict: { kind: "finished" },
      sessionId: SESSION,
      finalMessage: "Done.",
      usage: { inputTokens: 215, outputTokens: 40, costUsd: 0.0123 },
    });
  });

  test("the session is announced with the first line, even one that is not JSON, and once only", () => {
    const { events, finish } = parse(lines("Warning: no stdin data received in 3s", init));
    expect(events[0]).toEqual({ type: "agent.session", sessionId: SESSION });
    expect(events[1]).toMatchObject({ type: "diagnostic", message: "a line that is not JSON" });
    expect(events.filter((event) => event.type === "agent.session")).toHaveLength(1);
    expect(finish.sessionId).toBe(SESSION);
  });

  test("no line at all: no session (claude never started it)", () => {
    expect(parse("").finish).toEqual({ verdict: { kind: "incomplete" }, sessionId: null, finalMessage: null, usage: null });
  });

  test("a different id in system/init is announced and wins", () => {
    const { events, finish } = parse(lines({ ...init, session_id: "other" }, { ...success, session_id: "other" }));
    expect(events.filter((event) => event.type === "agent.session")).toEqual([
      { type: "agent.session", sessionId: SESSION },
      { type: "agent.session", sessionId: "other" },
    ]);
    expect(finish.sessionId).toBe("other");
  });

  test("a failed tool result is ok:false and changes no file; text results of blocks are joined, images named", () => {
    const { events } = parse(
      lines(
        assistant([{ type: "tool_use", id: "t1", name: "Write", input: {} }]),
        toolResult("t1", "<tool_use_error>File has not been read yet.</tool_use_error>", true, "Error: File has not been read yet."),
        toolResult("t2", [
          { type: "text", text: "a" },
          { type: "image", source: {} },
        ]),
      ),
    );
    expect(events.slice(1)).toEqual([
      { type: "agent.tool.started", id: "t1", name: "Write", input: {} },
      { type: "agent.tool.finished", id: "t1", ok: false, output: "<tool_use_error>File has not been read yet.</tool_use_error>" },
      { type: "agent.tool.finished", id: "t2", ok: true, output: "a\n[image]" },
    ]);
  });

  test("a subagent's text is a message but not the final answer; plain user prompts say nothing", () => {
    const { events, finish } = parse(
      lines(
        assistant([{ type: "text", text: "subagent report" }], { parent_tool_use_id: "toolu_task" }),
        { type: "user", message: { role: "user", content: "Explore the repo" }, parent_tool_use_id: "toolu_task" },
        { type: "user", message: { role: "user", content: [{ type: "text", text: "prompt" }] }, parent_tool_use_id: "toolu_task" },
        { ...success, result: "" },
      ),
    );
    expect(events.slice(1, -1)).toEqual([{ type: "agent.message", text: "subagent report" }]);
    expect(finish.finalMessage).toBeNull();
  });

  test("the result text is the final message when no assistant text line was seen", () => {
    expect(parse(lines(init, success)).finish.finalMessage).toBe("Done.");
  });

  test.each([
    ["Failed to authenticate. API Error: 401 …", "authentication_failed", 401, "auth_failed"],
    ["API Error: Request rejected (429) · …", "rate_limit", 429, "rate_limited"],
    ["API Error: 500 …", "server_error", 500, "provider_error"],
    ["API Error: Unable to connect to API (ConnectionRefused)", "server_error", null, "network_unreachable"],
    ["API Error: Connection to the API was lost (ECONNRESET).", "server_error", null, "provider_error"],
  ])(
    "an API failure (%s) ends failed from the stream, not the exit code; its text is an error, not the answer",
    (text, code, status, detail) => {
      const { events, finish } = parse(apiFailure(text, code, status));
      expect(events).toContainEqual({ type: "agent.error", message: text });
      expect(events.some((event) => event.type === "agent.message")).toBe(false);
      expect(finish.verdict).toEqual({ kind: "failed", detail, message: text, hint: null });
      expect(finish.finalMessage).toBeNull();
      expect(finish.usage).toEqual({ inputTokens: 0, outputTokens: 0, costUsd: 0 });
    },
  );

  test("api_retry lines are non-fatal errors", () => {
    const { events, finish } = parse(
      lines(
        init,
        {
          type: "system",
          subtype: "api_retry",
          attempt: 1,
          max_retries: 10,
          retry_delay_ms: 586.8,
          error_status: 529,
          error: "overloaded",
          session_id: SESSION,
        },
        { type: "system", subtype: "api_retry", attempt: 2, error_status: null, error: null },
        { type: "system", subtype: "api_error", message: "boom" },
        success,
      ),
    );
    expect(events.filter((event) => event.type === "agent.error")).toEqual([
      { type: "agent.error", message: "claude is retrying after HTTP 529 overloaded (attempt 1 of 10)" },
      { type: "agent.error", message: "claude is retrying after an API error (attempt 2)" },
      { type: "agent.error", message: "boom" },
    ]);
    expect(finish.verdict).toEqual({ kind: "finished" });
  });

  test("error_max_turns → max_turns, with claude's own words", () => {
    const { finish } = parse(
      lines(init, {
        type: "result",
        subtype: "error_max_turns",
        is_error: true,
        num_turns: 2,
        errors: ["Reached maximum number of turns (1)"],
        usage,
        total_cost_usd: 0.001,
      }),
    );
    expect(finish.verdict).toEqual({ kind: "failed", detail: "max_turns", message: "Reached maximum number of turns (1)", hint: null });
  });

  test("other error subtypes are agent errors with their errors[]", () => {
    const { finish } = parse(
      lines({ type: "result", subtype: "error_during_execution", is_error: true, errors: ["No conversation found with session ID: x"] }),
    );
    expect(finish.verdict).toEqual({
      kind: "failed",
      detail: "agent_reported_error",
      message: "No conversation found with session ID: x",
      hint: null,
    });
    const budget = parse(lines({ type: "result", subtype: "error_max_budget_usd", is_error: false }));
    expect(budget.finish.verdict).toEqual({
      kind: "failed",
      detail: "agent_reported_error",
      message: "claude ended with error_max_budget_usd",
      hint: null,
    });
  });

  test("a successful result with permission denials → permission_denied, naming what was refused", () => {
    const { finish } = parse(
      lines(init, {
        ...success,
        permission_denials: [
          { tool_name: "Write", tool_use_id: "t1", tool_input: { file_path: "/etc/x", content: "" } },
          { tool_name: "WebFetch", tool_use_id: "t2", tool_input: { url: "https://example.com" } },
          { tool_name: "Mystery", tool_use_id: "t3" },
        ],
      }),
    );
    expect(finish.verdict).toEqual({
      kind: "failed",
      detail: "permission_denied",
      message: "claude refused 3 tool calls: Write /etc/x; WebFetch https://example.com; Mystery",
      hint: null,
    });
    // The run did finish: its answer and usage are still reported.
    expect(finish.finalMessage).toBe("Done.");
    expect(finish.usage).toEqual({ inputTokens: 215, outputTokens: 40, costUsd: 0.0123 });
  });

  test("no result line → incomplete (e.g. killed), with the session and what was said so far", () => {
    const { finish } = parse(lines(init, assistant([{ type: "text", text: "Working on it" }])));
    expect(finish).toEqual({ verdict: { kind: "incomplete" }, sessionId: SESSION, finalMessage: "Working on it", usage: null });
  });

  test("bad lines, unknown types, unknown blocks and bad shapes are diagnostics, never fatal", () => {
    const { events, finish } = parse(
      lines(
        init,
        "{not json",
        { type: "mystery" },
        { no_type: true },
        { type: "system", subtype: "brand_new" },
        { type: "system", subtype: "init" },
        assistant([{ type: "hologram" }]),
        { type: "assistant", message: "nope" },
        { type: "user", message: { content: [{ type: "tool_result" }] } },
        assistant([{ type: "text", text: 3 }]),
        success,
      ),
    );
    const diagnostics = events
      .filter((event) => event.type === "diagnostic")
      .map((event) => (event.type === "diagnostic" ? event.message : ""));
    expect(diagnostics).toHaveLength(9);
    expect(diagnostics[0]).toBe("a line that is not JSON");
    expect(diagnostics[1]).toBe('an event type handoff does not know: "mystery"');
    expect(diagnostics[2]).toBe("an event type handoff does not know: undefined");
    expect(diagnostics[3]).toBe('an event type handoff does not know: "system/brand_new"');
    expect(diagnostics[4]).toMatch(/^a 'system\/init' event of an unexpected shape \(session_id:/);
    expect(diagnostics[5]).toBe('an event type handoff does not know: "assistant hologram"');
    expect(diagnostics[6]).toMatch(/^a 'assistant' event of an unexpected shape/);
    expect(diagnostics[7]).toMatch(/^a 'user tool_result' event of an unexpected shape/);
    expect(diagnostics[8]).toMatch(/^a 'assistant text' event of an unexpected shape/);
    expect(finish.verdict).toEqual({ kind: "finished" });
  });

  test("a result line of the wrong shape ends the run as a malformed stream", () => {
    const { events, finish } = parse(lines(init, { type: "result", subtype: "success" }));
    expect(events.at(-1)).toMatchObject({ type: "diagnostic" });
    expect(finish.verdict).toMatchObject({ kind: "failed", detail: "malformed_event_stream" });
  });

  test("deliberately skipped lines make no event at all", () => {
    const { events } = parse(
      lines(
        { type: "stream_event", event: { type: "content_block_delta" } },
        { type: "system", subtype: "status", status: "requesting" },
        { type: "system", subtype: "hook_started" },
        { type: "system", subtype: "hook_response" },
        { type: "system", subtype: "task_started" },
        { type: "system", subtype: "task_notification" },
        { type: "system", subtype: "compact_boundary" },
        { type: "rate_limit_event", rate_limit_info: { status: "allowed" } },
        { type: "tool_progress" },
        "",
      ),
    );
    expect(events).toEqual([{ type: "agent.session", sessionId: SESSION }]);
  });

  test("a huge tool output is clipped", () => {
    const { events } = parse(lines(toolResult("t", "xxxxxxxxx\n".repeat(1000))));
    const finished = events.find((event) => event.type === "agent.tool.finished");
    expect(finished?.type).toBe("agent.tool.finished");
    // clip() keeps 4000 characters (whole words: src/lib/clip.ts) and appends "… (6000 more characters)".
    const length = finished?.type === "agent.tool.finished" ? (finished.output?.length ?? 0) : 0;
    expect(length).toBeGreaterThan(1000);
    expect(length).toBeLessThan(4100);
  });
});

/**
 * Replays a recorded transcript as handoff would have run it: with the session id it was recorded with as the id
 * handoff chose (`--session-id`), read from the first line.
 */
function asRecorded(): StreamParser {
  let parser: StreamParser | null = null;
  return {
    push(line) {
      if (!parser) {
        let sessionId = "";
        try {
          const first: unknown = JSON.parse(line);
          if (typeof first === "object" && first !== null && "session_id" in first && typeof first.session_id === "string")
            sessionId = first.session_id;
        } catch {
          // not JSON: no id to reuse
        }
        parser = claudeDefinition.parser({ ...invocation, sessionId }, cliInfo("claude"));
      }
      return parser.push(line);
    },
    finish: () => (parser ?? claudeDefinition.parser(invocation, cliInfo("claude"))).finish(),
  };
}

goldenTranscriptTests("claude", asRecorded);
