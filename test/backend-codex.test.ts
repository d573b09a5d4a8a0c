import { describe, expect, test } from "vitest";
import {
  codexArgs,
  codexDefinition,
  codexHome,
  codexResume,
  codexResumeStateDir,
  untrustedProjectOverride,
  userCodexHome,
} from "../backends/codex.js";
import { classifyCodexError, createCodexParser } from "../backends/codex-stream.js";
import { cliInfo, cliInvocation, cliResumeInvocation, lines } from "./helpers/backend-fixtures.js";
import { goldenTranscriptTests, replay } from "./helpers/golden.js";

const invocation = cliInvocation("/opt/codex/bin/codex");

describe("codex argv, env and home", () => {
  test("runs exec with JSON events in the clone, workspace-write, no approvals, the prompt on stdin", () => {
    const command = codexDefinition.command(invocation);
    expect(command.file).toBe("/opt/codex/bin/codex");
    expect(command.args).toEqual([
      "exec",
      "--json",
      "-C",
      "/work/clone/ws",
      "--sandbox",
      "workspace-write",
      "--skip-git-repo-check",
      "-c",
      'approval_policy="never"',
      "-c",
      'projects={"/work/clone/ws"={trust_level="untrusted"}}',
      "-",
    ]);
    expect(command.stdin).toBe("make add() return the sum");
    expect(command.env).toBeUndefined();
  });

  test("with handoff's filtered network, Codex's commands get it (network_access), so its gate refuses and records what they try; otherwise Codex keeps their network off", () => {
    const through = ["-c", "sandbox_workspace_write.network_access=true"];
    const args = (network: "filtered" | "host" | "none") => codexArgs({ cwd: "/c", model: null, network }).join("\n");
    expect(args("filtered")).toContain(through.join("\n"));
    expect(args("host")).not.toContain("network_access");
    expect(args("none")).not.toContain("network_access");
  });

  test("passes --model through as -m, before the stdin marker", () => {
    expect(codexArgs({ cwd: "/c", model: "gpt-5.5" }).slice(-3)).toEqual(["-m", "gpt-5.5", "-"]);
  });

  test("the untrusted override quotes the path as a TOML string", () => {
    expect(untrustedProjectOverride('/a "b"\\c.d')).toBe('projects={"/a \\"b\\"\\\\c.d"={trust_level="untrusted"}}');
  });

  test("a private CODEX_HOME under the run's home dir, with the user's auth.json and config.toml linked in", () => {
    const home = codexDefinition.home("/var/handoff/homes/run-1", { HOME: "/home/ann" });
    expect(home.env).toEqual({ CODEX_HOME: "/var/handoff/homes/run-1/codex" });
    expect(home.dirs).toEqual(["/var/handoff/homes/run-1/codex"]);
    expect(home.links).toEqual([
      { at: "/var/handoff/homes/run-1/codex/auth.json", target: "/home/ann/.codex/auth.json" },
      { at: "/var/handoff/homes/run-1/codex/config.toml", target: "/home/ann/.codex/config.toml" },
    ]);
  });

  test("the user's $CODEX_HOME wins over ~/.codex when absolute; empty or relative is ignored", () => {
    expect(userCodexHome({ HOME: "/home/ann", CODEX_HOME: "/srv/codex" })).toBe("/srv/codex");
    expect(userCodexHome({ HOME: "/home/ann", CODEX_HOME: "" })).toBe("/home/ann/.codex");
    expect(userCodexHome({ HOME: "/home/ann", CODEX_HOME: "rel/codex" })).toBe("/home/ann/.codex");
    expect(codexHome("/h", { HOME: "/home/ann", CODEX_HOME: "/srv/codex" }).links[0]!.target).toBe("/srv/codex/auth.json");
  });
});

describe("codex resume", () => {
  test("exec --json with every flag of the first turn, its SQLite state named for the home, then resume <thread_id> - (prompt on stdin)", () => {
    const resumed = codexResume(cliResumeInvocation("/opt/codex/bin/codex", { resumeId: "thread-1" }));
    const first = codexDefinition.command(invocation).args;
    const state = codexResumeStateDir("/var/handoff/homes/run-1");
    expect(resumed.command.args).toEqual([...first.slice(0, -1), "-c", `sqlite_home="${state}"`, "resume", "thread-1", "-"]);
    expect(resumed.command.stdin).toBe("did not pass handoff's checks");
    expect(resumed.sessionId).toBe("thread-1");
    expect(resumed.copies).toBeUndefined();
  });

  test("a home at a new path gets its own state dir inside it (Codex keeps rollout paths there absolute); one home keeps one", () => {
    const kept = codexResumeStateDir("/var/handoff/homes/run-1-kept");
    expect(kept.startsWith("/var/handoff/homes/run-1-kept/codex/state/")).toBe(true);
    expect(kept).not.toBe(codexResumeStateDir("/var/handoff/homes/run-1").replace("run-1", "run-1-kept"));
    expect(codexResumeStateDir("/var/handoff/homes/run-1-kept")).toBe(kept);
  });

  test("a new clone is the one named by -C and the untrusted override", () => {
    const args = codexResume(cliResumeInvocation("/c", { cwd: "/work/new/ws", previousCwd: "/work/old/ws" })).command.args;
    expect(args.slice(2, 4)).toEqual(["-C", "/work/new/ws"]);
    expect(args).toContain('projects={"/work/new/ws"={trust_level="untrusted"}}');
    expect(args.join(" ")).not.toContain("/work/old/ws");
  });
});

describe("codex failure messages", () => {
  test.each([
    ["unexpected status 401 Unauthorized: Incorrect API key provided, url: http://127.0.0.1:18091/v1/responses", "auth_failed"],
    ["unexpected status 403 Forbidden: boom, url: http://127.0.0.1:36219/v1/responses", "auth_failed"],
    ["Missing environment variable: `MOCK_KEY`.", "auth_failed"],
    ["exceeded retry limit, last status: 429 Too Many Requests", "rate_limited"],
    ["You've hit your usage limit. Upgrade to Plus to continue using Codex", "rate_limited"],
    ["We’re currently experiencing high demand, which may cause temporary errors.", "provider_error"],
    ["unexpected status 502 Bad Gateway: boom 502, url: http://127.0.0.1:36281/v1/responses", "provider_error"],
    ["stream disconnected before completion: Transport error: network error: error decoding response body", "provider_error"],
    ["stream disconnected before completion: idle timeout waiting for SSE", "provider_error"],
    ['{"error":{"message":"boom 400","type":"invalid_request_error","param":null,"code":null}}', "agent_reported_error"],
  ])("%s → %s", (message, detail) => {
    expect(classifyCodexError(message)).toBe(detail);
  });
});

describe("codex stream parser", () => {
  const parse = (text: string) => replay(text, createCodexParser());

  test("a completed turn: session, message, usage, finished", () => {
    const { events, finish } = parse(
      lines(
        { type: "thread.started", thread_id: "t-1" },
        { type: "turn.started" },
        { type: "item.completed", item: { id: "item_0", type: "reasoning", text: "**Planning**" } },
        { type: "item.completed", item: { id: "item_1", type: "agent_message", text: "first" } },
        { type: "item.completed", item: { id: "item_2", type: "agent_message", text: "Done." } },
        { type: "turn.completed", usage: { input_tokens: 200, cached_input_tokens: 0, output_tokens: 40, reasoning_output_tokens: 0 } },
      ),
    );
    expect(events).toEqual([
      { type: "agent.session", sessionId: "t-1" },
      { type: "agent.reasoning", text: "**Planning**" },
      { type: "agent.message", text: "first" },
      { type: "agent.message", text: "Done." },
      { type: "agent.usage", inputTokens: 200, outputTokens: 40, costUsd: null },
    ]);
    expect(finish).toEqual({
      verdict: { kind: "finished" },
      sessionId: "t-1",
      finalMessage: "Done.",
      usage: { inputTokens: 200, outputTokens: 40, costUsd: null },
    });
  });

  test("usage is cumulative per thread: each turn reports the difference", () => {
    const { events, finish } = parse(
      lines(
        { type: "thread.started", thread_id: "t-1" },
        { type: "turn.completed", usage: { input_tokens: 2468, output_tokens: 112 } },
        { type: "thread.started", thread_id: "t-1" },
        { type: "turn.completed", usage: { input_tokens: 3702, output_tokens: 150 } },
      ),
    );
    expect(events.filter((event) => event.type === "agent.usage")).toEqual([
      { type: "agent.usage", inputTokens: 2468, outputTokens: 112, costUsd: null },
      { type: "agent.usage", inputTokens: 1234, outputTokens: 38, costUsd: null },
    ]);
    expect(events.filter((event) => event.type === "agent.session")).toHaveLength(1);
    expect(finish.usage).toEqual({ inputTokens: 3702, outputTokens: 150, costUsd: null });
  });

  test("shell commands and file changes become tool events; each changed file is reported once", () => {
    const command = {
      id: "item_0",
      type: "command_execution",
      command: "/bin/bash -lc 'ls'",
      aggregated_output: "",
      exit_code: null,
      status: "in_progress",
    };
    const patch = {
      id: "item_1",
      type: "file_change",
      changes: [
        { path: "/c/math.js", kind: "update" },
        { path: "/c/new.js", kind: "add" },
      ],
      status: "in_progress",
    };
    const { events } = parse(
      lines(
        { type: "item.started", item: command },
        { type: "item.updated", item: { ...command, aggregated_output: "a" } },
        { type: "item.completed", item: { ...command, aggregated_output: "a\nb\n", exit_code: 0, status: "completed" } },
        { type: "item.started", item: patch },
        { type: "item.completed", item: { ...patch, status: "completed" } },
        {
          type: "item.completed",
          item: { id: "item_2", type: "command_execution", command: "false", aggregated_output: "", exit_code: 1, status: "failed" },
        },
        { type: "item.completed", item: { id: "item_3", type: "file_change", changes: [{ path: "/c/x", kind: "add" }], status: "failed" } },
        { type: "turn.completed", usage: { input_tokens: 1, output_tokens: 1 } },
      ),
    );
    expect(events).toEqual([
      { type: "agent.tool.started", id: "item_0", name: "shell", input: { command: "/bin/bash -lc 'ls'" } },
      { type: "agent.tool.finished", id: "item_0", ok: true, output: "a\nb\n" },
      { type: "agent.tool.started", id: "item_1", name: "apply_patch", input: { changes: patch.changes } },
      { type: "agent.tool.finished", id: "item_1", ok: true, output: "completed: update /c/math.js, add /c/new.js" },
      { type: "agent.file.changed", path: "/c/math.js", change: "update" },
      { type: "agent.file.changed", path: "/c/new.js", change: "add" },
      { type: "agent.tool.started", id: "item_2", name: "shell", input: { command: "false" } },
      { type: "agent.tool.finished", id: "item_2", ok: false, output: "(exit code 1)" },
      { type: "agent.tool.started", id: "item_3", name: "apply_patch", input: { changes: [{ path: "/c/x", kind: "add" }] } },
      { type: "agent.tool.finished", id: "item_3", ok: false, output: "failed: add /c/x" },
      { type: "agent.usage", inputTokens: 1, outputTokens: 1, costUsd: null },
    ]);
  });

  test("an item id used again after its item completed (a later turn) starts a tool again: ids are not held for ever", () => {
    const command = (n: number) => ({
      id: "item_0",
      type: "command_execution",
      command: `echo ${n}`,
      aggregated_output: `${n}\n`,
      exit_code: 0,
      status: "completed",
    });
    const { events } = parse(
      lines(
        { type: "item.completed", item: command(1) },
        { type: "turn.completed", usage: { input_tokens: 1, output_tokens: 1 } },
        { type: "item.completed", item: command(2) },
        { type: "turn.completed", usage: { input_tokens: 2, output_tokens: 2 } },
      ),
    );
    expect(events.filter((event) => event.type === "agent.tool.started")).toEqual([
      { type: "agent.tool.started", id: "item_0", name: "shell", input: { command: "echo 1" } },
      { type: "agent.tool.started", id: "item_0", name: "shell", input: { command: "echo 2" } },
    ]);
  });

  test("MCP calls, web searches, todo lists and error items", () => {
    const mcp = {
      id: "item_3",
      type: "mcp_tool_call",
      server: "github",
      tool: "search_issues",
      arguments: { q: "is:open" },
      status: "in_progress",
    };
    const { events, finish } = parse(
      lines(
        { type: "item.completed", item: { id: "item_0", type: "error", message: "Model metadata for `mock-model` not found." } },
        { type: "item.started", item: mcp },
        {
          type: "item.completed",
          item: { ...mcp, result: { content: [{ type: "text", text: "3 issues" }], structured_content: null }, status: "completed" },
        },
        {
          type: "item.completed",
          item: {
            id: "item_4",
            type: "mcp_tool_call",
            server: "s",
            tool: "t",
            arguments: {},
            error: { message: "no such tool" },
            status: "failed",
          },
        },
        { type: "item.completed", item: { id: "item_5", type: "web_search", query: "serde flatten enum" } },
        { type: "item.updated", item: { id: "item_6", type: "todo_list", items: [{ text: "Write test", completed: true }] } },
        { type: "turn.completed", usage: { input_tokens: 1, output_tokens: 1 } },
      ),
    );
    expect(events.slice(0, -1)).toEqual([
      { type: "agent.error", message: "Model metadata for `mock-model` not found." },
      { type: "agent.tool.started", id: "item_3", name: "mcp:github/search_issues", input: { q: "is:open" } },
      { type: "agent.tool.finished", id: "item_3", ok: true, output: "3 issues" },
      { type: "agent.tool.started", id: "item_4", name: "mcp:s/t", input: {} },
      { type: "agent.tool.finished", id: "item_4", ok: false, output: "no such tool" },
      { type: "agent.tool.started", id: "item_5", name: "web_search", input: { query: "serde flatten enum" } },
      { type: "agent.tool.finished", id: "item_5", ok: true },
      { type: "agent.json", data: { todo_list: [{ text: "Write test", completed: true }] } },
    ]);
    expect(finish.verdict).toEqual({ kind: "finished" });
    expect(finish.finalMessage).toBeNull();
  });

  test("retries are errors, not the end; turn.failed is, classified, and its repeated message is said once", () => {
    const { events, finish } = parse(
      lines(
        { type: "thread.started", thread_id: "t-2" },
        { type: "turn.started" },
        { type: "error", message: "Reconnecting... 1/5 (We’re currently experiencing high demand, which may cause temporary errors.)" },
        { type: "error", message: "exceeded retry limit, last status: 429 Too Many Requests" },
        { type: "turn.failed", error: { message: "exceeded retry limit, last status: 429 Too Many Requests" } },
      ),
    );
    expect(events).toEqual([
      { type: "agent.session", sessionId: "t-2" },
      { type: "agent.error", message: "Reconnecting... 1/5 (We’re currently experiencing high demand, which may cause temporary errors.)" },
      { type: "agent.error", message: "exceeded retry limit, last status: 429 Too Many Requests" },
    ]);
    expect(finish).toEqual({
      verdict: { kind: "failed", detail: "rate_limited", message: "exceeded retry limit, last status: 429 Too Many Requests", hint: null },
      sessionId: "t-2",
      finalMessage: null,
      usage: null,
    });
  });

  test("a turn.failed without a preceding error event is reported as an error too", () => {
    const { events, finish } = parse(lines({ type: "turn.failed", error: { message: "Missing environment variable: `MOCK_KEY`." } }));
    expect(events).toEqual([{ type: "agent.error", message: "Missing environment variable: `MOCK_KEY`." }]);
    expect(finish.verdict).toMatchObject({ kind: "failed", detail: "auth_failed" });
  });

  test("a stream without turn.completed or turn.failed is incomplete, even after an error", () => {
    const { finish } = parse(
      lines(
        { type: "thread.started", thread_id: "t-3" },
        { type: "turn.started" },
        { type: "error", message: "Reconnecting... waiting for network (Connection failed: error sending request)" },
      ),
    );
    expect(finish.verdict).toEqual({ kind: "incomplete" });
    expect(finish.sessionId).toBe("t-3");
    expect(parse("").finish.verdict).toEqual({ kind: "incomplete" });
  });

  test("bad lines, unknown types and odd shapes become diagnostics, never a crash", () => {
    const { events, finish } = parse(
      lines(
        "Reading additional input from stdin...",
        '{"type":"thread.started"',
        { type: "thread.started" },
        { type: "item.plan.delta", delta: "x" },
        { no: "type" },
        { type: "item.completed", item: { id: "item_0", type: "collab_tool_call", tool: "spawn_agent", status: "completed" } },
        { type: "item.completed", item: { id: "item_1", type: "plan", text: "step 1" } },
        { type: "item.completed", item: { id: "item_2", type: "agent_message" } },
        { type: "item.completed", item: "nope" },
        { type: "turn.failed", error: "flat string" },
      ),
    );
    const diagnostics = events.filter((event) => event.type === "diagnostic");
    expect(diagnostics.map((event) => event.type === "diagnostic" && event.message)).toEqual([
      "a line that is not JSON",
      "a line that is not JSON",
      expect.stringContaining("a 'thread.started' event of an unexpected shape"),
      'an event type handoff does not know: "item.plan.delta"',
      "an event type handoff does not know: undefined",
      'an event type handoff does not know: "item.completed plan"',
      expect.stringContaining("a 'item.completed agent_message' event of an unexpected shape"),
      expect.stringContaining("a 'item.completed' event of an unexpected shape"),
      expect.stringContaining("a 'turn.failed' event of an unexpected shape"),
    ]);
    expect(events).toContainEqual({ type: "agent.tool.started", id: "item_0", name: "collab:spawn_agent", input: undefined });
    expect(diagnostics.every((event) => event.type === "diagnostic" && typeof event.raw === "string")).toBe(true);
    expect(finish.verdict).toEqual({ kind: "failed", detail: "agent_reported_error", message: "codex reported a failed turn", hint: null });
    expect(finish.sessionId).toBeNull();
  });
});

goldenTranscriptTests("codex", () => codexDefinition.parser(invocation, cliInfo("codex")));
