import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { findCwd } from "../scripted-model/conversation.js";
import { type ModelScript, type ScriptedModel, startScriptedModel } from "../scripted-model/index.js";
import { buildPatch, planRun, planWrite } from "../scripted-model/tools.js";
import { tempDir } from "./helpers/repo.js";

const started: ScriptedModel[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((model) => model.close()));
});

async function model(steps: ModelScript["steps"], next?: ModelScript["next"]): Promise<ScriptedModel> {
  const server = await startScriptedModel({ script: next ? { steps, next } : { steps } });
  started.push(server);
  return server;
}

function post(server: ScriptedModel, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

interface SseEvent {
  readonly event: string | null;
  readonly data: string;
}

function parseSse(text: string): SseEvent[] {
  return text
    .split("\n\n")
    .filter((frame) => frame.trim() !== "")
    .map((frame) => {
      const lines = frame.split("\n");
      const event = lines.find((line) => line.startsWith("event: "))?.slice(7) ?? null;
      const data = lines.find((line) => line.startsWith("data: "))?.slice(6) ?? "";
      return { event, data };
    });
}

/** The JSON payloads of a streamed reply, with a `[DONE]` sentinel kept as the string. */
async function streamed(response: Response): Promise<unknown[]> {
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/event-stream");
  return parseSse(await response.text()).map((event) => (event.data === "[DONE]" ? event.data : JSON.parse(event.data)));
}

/** Protocol payloads as the tests read them: loosely typed on purpose. */
type Json = any;

const CLAUDE_TOOLS = [
  { name: "Read", input_schema: { type: "object", properties: { file_path: { type: "string" } }, required: ["file_path"] } },
  {
    name: "Write",
    input_schema: {
      type: "object",
      properties: { file_path: { type: "string" }, content: { type: "string" } },
      required: ["file_path", "content"],
    },
  },
  { name: "Bash", input_schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } },
];

function anthropicBody(cwd: string, messages: unknown[] = [{ role: "user", content: "Fix add()." }], extra: object = {}) {
  return {
    model: "claude-sonnet-4-5",
    stream: true,
    system: [{ type: "text", text: `# Environment\n - Primary working directory: ${cwd}\n - Is a git repository: true` }],
    messages,
    tools: CLAUDE_TOOLS,
    ...extra,
  };
}

const OPENCODE_TOOLS = [
  {
    type: "function",
    function: {
      name: "bash",
      parameters: {
        type: "object",
        properties: { command: { type: "string" }, description: { type: "string" } },
        required: ["command", "description"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "write",
      parameters: {
        type: "object",
        properties: { content: { type: "string" }, filePath: { type: "string" } },
        required: ["content", "filePath"],
      },
    },
  },
];

function chatBody(messages: unknown[], tools: unknown[] = OPENCODE_TOOLS, extra: object = {}) {
  return { model: "mock-model", stream: true, stream_options: { include_usage: true }, messages, tools, ...extra };
}

const CODEX_TOOLS = [
  {
    type: "function",
    name: "exec_command",
    parameters: { type: "object", properties: { cmd: { type: "string" }, workdir: { type: "string" } }, required: ["cmd"] },
  },
  { type: "custom", name: "apply_patch", format: { type: "grammar", syntax: "lark", definition: "start: begin_patch hunk+ end_patch" } },
  { type: "web_search" },
];

function responsesBody(cwd: string, after: unknown[] = []) {
  return {
    model: "gpt-5.5",
    stream: true,
    input: [
      { type: "message", role: "developer", content: [{ type: "input_text", text: "You are Codex." }] },
      {
        type: "message",
        role: "user",
        content: [{ type: "input_text", text: `<environment_context>\n  <cwd>${cwd}</cwd>\n</environment_context>` }],
      },
      { type: "message", role: "user", content: [{ type: "input_text", text: "Fix add()." }] },
      ...after,
    ],
    tools: CODEX_TOOLS,
  };
}

const WRITE_MATH = { write: { path: "math.js", content: "export function add(a, b) {\n  return a + b;\n}\n" } };

describe("scripted model: Anthropic Messages", () => {
  test("streams a write step as a Write tool_use with an absolute path, its input split over input_json_delta fragments", async () => {
    const cwd = tempDir("scripted-cwd");
    const server = await model([WRITE_MATH, { say: "Fixed." }]);
    const events: Json[] = await streamed(await post(server, "/v1/messages?beta=true", anthropicBody(cwd)));
    expect(events.map((event) => event.type)).toEqual([
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(events[0].message.model).toBe("claude-sonnet-4-5");
    expect(events[0].message.usage.input_tokens).toBe(100);
    expect(events[2].content_block).toMatchObject({ type: "tool_use", name: "Write", input: {} });
    const json = events.filter((event) => event.type === "content_block_delta").map((event) => event.delta.partial_json);
    expect(json.every((piece: string) => piece.length > 0)).toBe(true);
    expect(JSON.parse(json.join(""))).toEqual({ file_path: join(cwd, "math.js"), content: WRITE_MATH.write.content });
    expect(events[6].delta.stop_reason).toBe("tool_use");
    expect(events[6].usage.output_tokens).toBe(20);
  });

  test("reads an existing file before overwriting it (Claude's Write refuses unread files) without advancing the script", async () => {
    const cwd = tempDir("scripted-cwd");
    writeFileSync(join(cwd, "math.js"), "old\n");
    const server = await model([WRITE_MATH, { say: "Fixed." }]);
    const user = { role: "user", content: "Fix add()." };
    const toolCall = (events: Json[]) => {
      const start = events.find((event) => event.type === "content_block_start").content_block;
      const input = events
        .filter((event) => event.type === "content_block_delta")
        .map((event) => event.delta.partial_json)
        .join("");
      return { id: start.id as string, name: start.name as string, input: JSON.parse(input) };
    };
    const read = toolCall(await streamed(await post(server, "/v1/messages", anthropicBody(cwd, [user]))));
    expect(read).toMatchObject({ name: "Read", input: { file_path: join(cwd, "math.js") } });
    const afterRead = [
      user,
      { role: "assistant", content: [{ type: "tool_use", id: read.id, name: "Read", input: read.input }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: read.id, content: "old" }] },
    ];
    const write = toolCall(await streamed(await post(server, "/v1/messages", anthropicBody(cwd, afterRead))));
    expect(write.name).toBe("Write");
    expect(write.id).not.toBe(read.id);
    const afterWrite = [
      ...afterRead,
      { role: "assistant", content: [{ type: "tool_use", id: write.id, name: "Write", input: write.input }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: write.id, content: "ok" }] },
    ];
    const final: Json[] = await streamed(await post(server, "/v1/messages", anthropicBody(cwd, afterWrite)));
    expect(
      final
        .filter((event) => event.type === "content_block_delta")
        .map((event) => event.delta.text)
        .join(""),
    ).toBe("Fixed.");
    expect(server.requests.map((entry) => entry.stepIndex)).toEqual([0, 0, 1]);
  });

  test("picks the step from the number of tool_result blocks and ends the turn on a say step", async () => {
    const server = await model([{ run: { command: "echo hi" } }, { say: "All done." }]);
    const messages = [
      { role: "user", content: "go" },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_x", name: "Bash", input: { command: "echo hi" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_x", content: "hi" }] },
    ];
    const events: Json[] = await streamed(await post(server, "/v1/messages", anthropicBody("/nowhere", messages)));
    expect(events[2].content_block).toEqual({ type: "text", text: "" });
    expect(
      events
        .filter((event) => event.type === "content_block_delta")
        .map((event) => event.delta.text)
        .join(""),
    ).toBe("All done.");
    expect(events.find((event) => event.type === "message_delta").delta.stop_reason).toBe("end_turn");
    expect(server.requests[0]).toMatchObject({ protocol: "anthropic", stepIndex: 1, side: false, status: 200 });
  });

  test("answers a side request without tools with plain text and does not consume a step", async () => {
    const server = await model([{ fail: { status: 500 } }]);
    const body = { model: "claude-haiku", stream: true, messages: [{ role: "user", content: "Generate a title" }] };
    const events: Json[] = await streamed(await post(server, "/v1/messages", body));
    expect(
      events
        .filter((event) => event.type === "content_block_delta")
        .map((event) => event.delta.text)
        .join(""),
    ).toBe("Scripted task");
    expect(server.requests).toEqual([expect.objectContaining({ side: true, stepIndex: null, model: "claude-haiku", status: 200 })]);
  });

  test("answers a non-streaming request with a plain JSON message", async () => {
    const server = await model([{ run: { command: "ls" } }]);
    const response = await post(server, "/v1/messages", anthropicBody("/nowhere", undefined, { stream: false }));
    expect(response.headers.get("content-type")).toBe("application/json");
    const message: Json = await response.json();
    expect(message).toMatchObject({
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      stop_reason: "tool_use",
      content: [{ type: "tool_use", name: "Bash", input: { command: "ls" } }],
      usage: { input_tokens: 100, output_tokens: 20 },
    });
  });

  test("fails a step with 401 authentication_error, and 429 rate_limit_error with retry-after: 0, on every retry", async () => {
    const unauthorized = await model([{ fail: { status: 401, message: "invalid x-api-key" } }]);
    for (let attempt = 0; attempt < 2; attempt++) {
      const response = await post(unauthorized, "/v1/messages", anthropicBody("/nowhere"));
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } });
    }
    const limited = await model([{ fail: { status: 429 } }]);
    const response = await post(limited, "/v1/messages", anthropicBody("/nowhere"));
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("0");
    expect(((await response.json()) as Json).error.type).toBe("rate_limit_error");
    const broken = await model([{ fail: { status: 500 } }]);
    expect(((await (await post(broken, "/v1/messages", anthropicBody("/nowhere"))).json()) as Json).error.type).toBe("api_error");
  });

  test("counts tokens, answers HEAD / and lists a model", async () => {
    const server = await model([]);
    expect(await (await post(server, "/v1/messages/count_tokens?beta=true", { messages: [] })).json()).toEqual({ input_tokens: 100 });
    expect((await fetch(`${server.url}/`, { method: "HEAD" })).status).toBe(200);
    expect(await (await fetch(`${server.url}/v1/models`)).json()).toEqual({
      object: "list",
      data: [{ id: "mock-model", object: "model" }],
    });
    expect((await fetch(`${server.url}/v2/unknown`)).status).toBe(404);
    expect(server.requests.map((entry) => [entry.method, entry.path, entry.status])).toEqual([
      ["POST", "/v1/messages/count_tokens", 200],
      ["HEAD", "/", 200],
      ["GET", "/v1/models", 200],
      ["GET", "/v2/unknown", 404],
    ]);
  });
});

describe("scripted model: OpenAI Chat Completions", () => {
  test("streams a run step as a tool_calls delta with the name first and the arguments in fragments", async () => {
    const server = await model([{ run: { command: "echo hi > shell.txt" } }]);
    const chunks: Json[] = await streamed(await post(server, "/v1/chat/completions", chatBody([{ role: "user", content: "go" }])));
    expect(chunks.at(-1)).toBe("[DONE]");
    expect(chunks[0].choices[0].delta.role).toBe("assistant");
    expect(chunks[1].choices[0].delta.tool_calls[0]).toMatchObject({
      index: 0,
      type: "function",
      function: { name: "bash", arguments: "" },
    });
    expect(chunks[1].choices[0].delta.tool_calls[0].id).toMatch(/^call_\d+_0$/);
    const fragments = chunks
      .slice(2)
      .filter((chunk) => chunk !== "[DONE]" && chunk.choices[0]?.delta.tool_calls)
      .map((chunk) => chunk.choices[0].delta.tool_calls[0].function.arguments);
    expect(fragments.length).toBeGreaterThanOrEqual(2);
    // `description` is required by opencode's schema: a placeholder fills it.
    expect(JSON.parse(fragments.join(""))).toEqual({ command: "echo hi > shell.txt", description: "scripted step" });
    expect(chunks.at(-3).choices[0].finish_reason).toBe("tool_calls");
    expect(chunks.at(-2)).toMatchObject({ choices: [], usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 } });
    expect(chunks[0].model).toBe("mock-model");
  });

  test("uses the write tool's own path key (filePath) and the cwd from 'Working directory:'", async () => {
    const cwd = tempDir("scripted-cwd");
    const server = await model([{ write: { path: "src/new.txt", content: "x\n" } }]);
    const system = { role: "system", content: `<env>\n  Working directory: ${cwd}\n</env>` };
    const chunks: Json[] = await streamed(await post(server, "/v1/chat/completions", chatBody([system, { role: "user", content: "go" }])));
    const args = chunks
      .flatMap((chunk) => (chunk === "[DONE]" ? [] : (chunk.choices[0]?.delta.tool_calls ?? [])))
      .map((call: Json) => call.function.arguments)
      .join("");
    expect(JSON.parse(args)).toEqual({ filePath: join(cwd, "src/new.txt"), content: "x\n" });
  });

  test("picks the step from role:tool messages; past the end it says Done.", async () => {
    const server = await model([{ run: { command: "true" } }]);
    const messages = [
      { role: "user", content: "go" },
      { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "bash", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c1", content: "ok" },
    ];
    const chunks: Json[] = await streamed(await post(server, "/v1/chat/completions", chatBody(messages)));
    const text = chunks.map((chunk) => (chunk === "[DONE]" ? "" : (chunk.choices[0]?.delta.content ?? ""))).join("");
    expect(text).toBe("Done.");
    expect(chunks.at(-3).choices[0].finish_reason).toBe("stop");
    expect(server.requests[0]).toMatchObject({ protocol: "openai-chat", stepIndex: 1 });
  });

  test("answers a non-streaming request with a chat.completion", async () => {
    const server = await model([{ say: "hello" }]);
    const response: Json = await (
      await post(server, "/v1/chat/completions", chatBody([{ role: "user", content: "hi" }], undefined, { stream: false }))
    ).json();
    expect(response).toMatchObject({
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 100, completion_tokens: 20 },
    });
  });

  test("fails with OpenAI error bodies: 401 invalid_api_key, 429 rate_limit_exceeded with retry-after: 0", async () => {
    const unauthorized = await model([{ fail: { status: 401 } }]);
    const response = await post(unauthorized, "/v1/chat/completions", chatBody([{ role: "user", content: "hi" }]));
    expect(response.status).toBe(401);
    expect(((await response.json()) as Json).error).toMatchObject({
      code: "invalid_api_key",
      type: "invalid_request_error",
      message: expect.any(String),
    });
    const limited = await model([{ fail: { status: 429, message: "slow down" } }]);
    const limitedResponse = await post(limited, "/v1/chat/completions", chatBody([{ role: "user", content: "hi" }]));
    expect(limitedResponse.headers.get("retry-after")).toBe("0");
    expect(((await limitedResponse.json()) as Json).error).toMatchObject({ code: "rate_limit_exceeded", message: "slow down" });
  });
});

describe("scripted model: OpenAI Responses (Codex)", () => {
  test("writes a new file through the apply_patch freeform tool when there is no write tool", async () => {
    const cwd = tempDir("scripted-cwd");
    const server = await model([{ write: { path: "hello.txt", content: "line\n" } }]);
    const events: Json[] = await streamed(await post(server, "/v1/responses", responsesBody(cwd)));
    expect(events[0]).toMatchObject({ type: "response.created", response: { id: expect.any(String) } });
    expect(events.at(-1).type).toBe("response.completed");
    const done = events.find((event) => event.type === "response.output_item.done");
    expect(done.output_index).toBe(0);
    expect(done.item).toMatchObject({ type: "custom_tool_call", name: "apply_patch", call_id: expect.stringMatching(/^call_\d+_0$/) });
    expect(done.item.input).toBe("*** Begin Patch\n*** Add File: hello.txt\n+line\n*** End Patch\n");
  });

  test("overwrites an existing file under <cwd> with an Update File patch replacing all its lines", async () => {
    const cwd = tempDir("scripted-cwd");
    writeFileSync(join(cwd, "math.js"), "export function add(a, b) {\n  return a - b;\n}\n");
    const server = await model([WRITE_MATH]);
    const events: Json[] = await streamed(await post(server, "/v1/responses", responsesBody(cwd)));
    const item = events.find((event) => event.type === "response.output_item.done").item;
    expect(item.input).toBe(
      "*** Begin Patch\n*** Update File: math.js\n@@\n-export function add(a, b) {\n-  return a - b;\n-}\n" +
        "+export function add(a, b) {\n+  return a + b;\n+}\n*** End Patch\n",
    );
  });

  test("runs a command through exec_command with its cmd argument", async () => {
    const server = await model([{ run: { command: "echo hi > shell.txt" } }]);
    const events: Json[] = await streamed(await post(server, "/v1/responses", responsesBody("/nowhere")));
    const added = events.find((event) => event.type === "response.output_item.added");
    expect(added.item).toMatchObject({ type: "function_call", name: "exec_command", arguments: "" });
    const deltas = events.filter((event) => event.type === "response.function_call_arguments.delta").map((event) => event.delta);
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    const item = events.find((event) => event.type === "response.output_item.done").item;
    expect(JSON.parse(item.arguments)).toEqual({ cmd: "echo hi > shell.txt" });
    expect(deltas.join("")).toBe(item.arguments);
  });

  test("counts function_call_output and custom_tool_call_output items, then answers with a message and exact usage", async () => {
    const server = await model([{ run: { command: "a" } }, { run: { command: "b" } }, { say: "Finished." }]);
    const after = [
      { type: "function_call", call_id: "c1", name: "exec_command", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "ok" },
      { type: "custom_tool_call", call_id: "c2", name: "apply_patch", input: "" },
      { type: "custom_tool_call_output", call_id: "c2", output: "ok" },
    ];
    const events: Json[] = await streamed(await post(server, "/v1/responses", responsesBody("/nowhere", after)));
    expect(
      events
        .filter((event) => event.type === "response.output_text.delta")
        .map((event) => event.delta)
        .join(""),
    ).toBe("Finished.");
    const item = events.find((event) => event.type === "response.output_item.done").item;
    expect(item).toMatchObject({
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "Finished.", annotations: [] }],
    });
    expect(events.at(-1).response.usage).toEqual({
      input_tokens: 100,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 20,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 120,
    });
    expect(server.requests[0]).toMatchObject({ protocol: "openai-responses", stepIndex: 2, model: "gpt-5.5" });
  });

  test("refuses the Responses WebSocket upgrade so Codex falls back to SSE", async () => {
    const server = await model([]);
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = request(`${server.url}/v1/responses`, { headers: { connection: "Upgrade", upgrade: "websocket" } });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on("upgrade", () => reject(new Error("upgraded")));
      req.on("error", reject);
      req.end();
    });
    expect(status).toBe(426);
    expect(server.requests[0]).toMatchObject({ method: "GET", path: "/v1/responses", status: 426 });
  });
});

const GEMINI_TOOLS = [
  {
    functionDeclarations: [
      {
        name: "write_file",
        parametersJsonSchema: {
          type: "object",
          properties: { file_path: { type: "string" }, content: { type: "string" } },
          required: ["file_path", "content"],
        },
      },
      {
        name: "run_shell_command",
        parametersJsonSchema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
      },
    ],
  },
];
const GEMINI_STREAM = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse";

describe("scripted model: Gemini API", () => {
  test("streams a write_file functionCall under the cwd of the session context, model from the path, x-goog-api-key as auth", async () => {
    const cwd = tempDir("scripted-gemini-cwd");
    const server = await model([{ write: { path: "math.js", content: "x\n" } }, { say: "Done." }]);
    const context = `<session_context>\n- **Workspace Directories:**\n  - ${cwd}\n- **Directory Structure:**\n</session_context>`;
    const body = { contents: [{ role: "user", parts: [{ text: context }, { text: "fix it" }] }], tools: GEMINI_TOOLS };
    const frames: Json[] = await streamed(await post(server, GEMINI_STREAM, body, { "x-goog-api-key": "AIza-test" }));
    expect(frames).toHaveLength(1);
    expect(frames[0].candidates[0]).toMatchObject({
      content: {
        role: "model",
        parts: [{ functionCall: { name: "write_file", args: { file_path: join(cwd, "math.js"), content: "x\n" } } }],
      },
      finishReason: "STOP",
    });
    expect(frames[0].candidates[0].content.parts[0].functionCall.id).toMatch(/^call_\d+_0$/);
    expect(frames[0].usageMetadata).toEqual({ promptTokenCount: 100, candidatesTokenCount: 20, totalTokenCount: 120 });
    expect(server.requests[0]).toMatchObject({ protocol: "gemini", model: "gemini-2.5-pro", stepIndex: 0, hasAuth: true, status: 200 });
  });

  test("counts functionResponse parts once per id (Gemini CLI repeats them in a resumed session); text comes in two pieces", async () => {
    const server = await model([{ run: { command: "true" } }, { say: "All done." }]);
    const response = { functionResponse: { id: "call_1_0", name: "run_shell_command", response: { output: "" } } };
    const body = {
      contents: [
        { role: "user", parts: [{ text: "go" }] },
        { role: "model", parts: [{ functionCall: { id: "call_1_0", name: "run_shell_command", args: { command: "true" } } }] },
        { role: "user", parts: [response, response] },
      ],
      tools: GEMINI_TOOLS,
    };
    const frames: Json[] = await streamed(await post(server, GEMINI_STREAM, body));
    expect(frames.map((frame) => frame.candidates[0].content.parts[0].text).join("")).toBe("All done.");
    expect(frames.length).toBe(2);
    expect(frames[0].candidates[0].finishReason).toBeUndefined();
    expect(frames[1].candidates[0].finishReason).toBe("STOP");
    expect(server.requests[0]).toMatchObject({ stepIndex: 1, toolResults: 1 });
  });

  test("answers :generateContent with one JSON body; a request without tools is a side request; errors in Google's shape", async () => {
    const server = await model([{ fail: { status: 429 } }]);
    const side: Json = await (
      await post(server, "/v1beta/models/gemini-2.5-flash-lite:generateContent", {
        contents: [{ role: "user", parts: [{ text: "classify" }] }],
      })
    ).json();
    expect(side.candidates[0].content.parts[0].text).toBe("Scripted task");
    const failed = await post(server, GEMINI_STREAM, { contents: [{ role: "user", parts: [{ text: "go" }] }], tools: GEMINI_TOOLS });
    expect(failed.status).toBe(429);
    expect(await failed.json()).toEqual({ error: { code: 429, message: "scripted failure (HTTP 429)", status: "RESOURCE_EXHAUSTED" } });
    expect(server.requests.map((request) => [request.protocol, request.side, request.status])).toEqual([
      ["gemini", true, 200],
      ["gemini", false, 429],
    ]);
  });

  test("records whether a request carried the expected key in x-goog-api-key", async () => {
    const server = await startScriptedModel({ script: { steps: [{ say: "ok" }] }, expectedKey: "AIza-right" });
    started.push(server);
    const body = { contents: [{ role: "user", parts: [{ text: "go" }] }], tools: GEMINI_TOOLS };
    await (await post(server, GEMINI_STREAM, body, { "x-goog-api-key": "AIza-right" })).text();
    await (await post(server, GEMINI_STREAM, body, { "x-goog-api-key": "AIza-wrong" })).text();
    expect(server.requests.map((request) => request.keyMatched)).toEqual([true, false]);
  });
});

describe("scripted model: failures and plumbing", () => {
  test("a hanging step never answers, and close() still returns promptly", async () => {
    const server = await startScriptedModel({ script: { steps: [{ hang: true }] } });
    const pending = post(server, "/v1/chat/completions", chatBody([{ role: "user", content: "hi" }]));
    pending.catch(() => undefined);
    while (server.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(server.requests[0]).toMatchObject({ status: 0, stepIndex: 0 });
    const before = Date.now();
    await server.close();
    expect(Date.now() - before).toBeLessThan(10_000);
    await expect(pending).rejects.toThrow();
  });

  test("a cut step sends the headers and the first event, then drops the connection", async () => {
    const server = await model([{ cut: true }]);
    const result = await new Promise<{ status: number | undefined; body: string; complete: boolean }>((resolve, reject) => {
      const req = request(`${server.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json" } }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("error", () => undefined);
        res.on("close", () => resolve({ status: res.statusCode, body, complete: res.complete }));
      });
      req.on("error", reject);
      req.end(JSON.stringify(anthropicBody("/nowhere")));
    });
    expect(result.status).toBe(200);
    expect(result.complete).toBe(false);
    expect(parseSse(result.body).map((event) => event.event)).toEqual(["message_start"]);
  });

  test("a body that is not JSON or not the protocol's shape gets a 400 naming the problem, and the server keeps serving", async () => {
    const server = await model([{ say: "still here" }]);
    const notJson = await post(server, "/v1/messages", "{not json");
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as Json).error.message).toMatch(/not JSON/);
    const wrongShape = await post(server, "/v1/chat/completions", { model: "m", messages: "hello" });
    expect(wrongShape.status).toBe(400);
    expect(((await wrongShape.json()) as Json).error.message).toMatch(/messages/);
    const noInput = await post(server, "/v1/responses", { model: "m" });
    expect(noInput.status).toBe(400);
    const ok = await post(server, "/v1/chat/completions", chatBody([{ role: "user", content: "hi" }], undefined, { stream: false }));
    expect(ok.status).toBe(200);
  });

  test("records each request without keeping credentials or bodies", async () => {
    const server = await model([{ say: "hi" }]);
    await post(server, "/v1/chat/completions", chatBody([{ role: "user", content: "SECRET-PROMPT" }]), {
      authorization: "Bearer sk-very-secret",
      "user-agent": "opencode/1.18.33",
    });
    await post(server, "/v1/messages", anthropicBody("/nowhere"), { "x-api-key": "sk-also-secret" });
    await post(server, "/v1/messages", anthropicBody("/nowhere"));
    const recorded = JSON.stringify(server.requests);
    expect(recorded).not.toMatch(/sk-very-secret|sk-also-secret|SECRET-PROMPT/);
    expect(server.requests.map((entry) => entry.hasAuth)).toEqual([true, true, false]);
    expect(server.requests[0]).toEqual({
      time: expect.any(String),
      method: "POST",
      path: "/v1/chat/completions",
      protocol: "openai-chat",
      stepIndex: 0,
      turn: 0,
      toolResults: 0,
      side: false,
      model: "mock-model",
      userAgent: "opencode/1.18.33",
      hasAuth: true,
      keyMatched: null,
      status: 200,
    });
  });

  test("gives every tool call of a server a distinct id", async () => {
    const server = await model([{ run: { command: "a" } }]);
    const ids = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const chunks: Json[] = await streamed(await post(server, "/v1/chat/completions", chatBody([{ role: "user", content: "go" }])));
      ids.add(chunks[1].choices[0].delta.tool_calls[0].id);
    }
    expect(ids.size).toBe(3);
  });

  test("rejects a script with an unknown step kind", async () => {
    await expect(startScriptedModel({ script: { steps: [{ jump: true }] } as unknown as ModelScript })).rejects.toThrow(
      /invalid model script/,
    );
  });
});

describe("scripted model: later user turns (a resumed session)", () => {
  const FEEDBACK = "Your change did not pass handoff's checks: npm test failed.";
  const WRONG_MATH = { write: { path: "math.js", content: "export function add(a, b) {\n  return a - b;\n}\n" } };
  const FIX_TURN = { when: "did not pass handoff's checks", steps: [WRITE_MATH, { say: "Fixed it for real." }] };

  /** The first turn as a resumed Chat Completions request carries it: the task, a wrong write and its result, the claim. */
  const firstTurn = [
    { role: "user", content: "Fix add()." },
    { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "write", arguments: "{}" } }] },
    { role: "tool", tool_call_id: "c1", content: "Wrote file successfully." },
    { role: "assistant", content: "Done." },
  ];

  function chatToolCall(chunks: Json[]): { name: string; arguments: Json } | null {
    const calls = chunks.flatMap((chunk) => (chunk === "[DONE]" ? [] : (chunk.choices[0]?.delta.tool_calls ?? [])));
    if (calls.length === 0) return null;
    return { name: calls[0].function.name, arguments: JSON.parse(calls.map((call: Json) => call.function.arguments).join("")) };
  }

  test("a resumed turn after a say step plays the next turn's steps instead of replaying the say", async () => {
    const server = await model([WRONG_MATH, { say: "Done." }], [FIX_TURN]);
    const resumed = [...firstTurn, { role: "user", content: FEEDBACK }];
    const call = chatToolCall(await streamed(await post(server, "/v1/chat/completions", chatBody(resumed))));
    expect(call).toEqual({ name: "write", arguments: expect.objectContaining({ filePath: "math.js", content: WRITE_MATH.write.content }) });
    const afterFix = [
      ...resumed,
      { role: "assistant", content: "", tool_calls: [{ id: "c2", type: "function", function: { name: "write", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c2", content: "Wrote file successfully." },
    ];
    const chunks: Json[] = await streamed(await post(server, "/v1/chat/completions", chatBody(afterFix)));
    expect(chunks.map((chunk) => (chunk === "[DONE]" ? "" : (chunk.choices[0]?.delta.content ?? ""))).join("")).toBe("Fixed it for real.");
    expect(server.requests.map(({ turn, stepIndex, toolResults }) => ({ turn, stepIndex, toolResults }))).toEqual([
      { turn: 1, stepIndex: 0, toolResults: 1 },
      { turn: 1, stepIndex: 1, toolResults: 2 },
    ]);
  });

  test("without the `when` text in the user's messages the first turn plays on (a system prompt does not count)", async () => {
    const server = await model([WRONG_MATH, { say: "Done." }], [FIX_TURN]);
    const messages = [{ role: "system", content: `Never say: ${FEEDBACK}` }, ...firstTurn.slice(0, 3)];
    const chunks: Json[] = await streamed(await post(server, "/v1/chat/completions", chatBody(messages)));
    expect(chatToolCall(chunks)).toBeNull();
    expect(server.requests[0]).toMatchObject({ turn: 0, stepIndex: 1, toolResults: 1 });
  });

  test("the last `next` entry whose text occurs wins, and earlier turns' tool steps are subtracted", async () => {
    const later = { when: "also handle the empty string", steps: [{ run: { command: "echo later" } }] };
    const server = await model([WRONG_MATH, { say: "Done." }], [FIX_TURN, later]);
    const afterFix = [
      ...firstTurn,
      { role: "user", content: FEEDBACK },
      { role: "assistant", content: "", tool_calls: [{ id: "c2", type: "function", function: { name: "write", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c2", content: "ok" },
      { role: "assistant", content: "Fixed it for real." },
      { role: "user", content: "Please also handle the empty string." },
    ];
    const call = chatToolCall(await streamed(await post(server, "/v1/chat/completions", chatBody(afterFix))));
    expect(call).toEqual({ name: "bash", arguments: expect.objectContaining({ command: "echo later" }) });
    expect(server.requests[0]).toMatchObject({ turn: 2, stepIndex: 0, toolResults: 2 });
  });

  test("Anthropic: reads before a later turn's write again (its own read mark), and the turn comes from a user text block", async () => {
    const cwd = tempDir("scripted-cwd");
    writeFileSync(join(cwd, "math.js"), "old\n");
    const server = await model([WRONG_MATH, { say: "Done." }], [FIX_TURN]);
    const messages = [
      { role: "user", content: "Fix add()." },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_1_0_read", name: "Read", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1_0_read", content: "old" }] },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_2_0", name: "Write", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_2_0", content: "ok" }] },
      { role: "assistant", content: [{ type: "text", text: "Done." }] },
      { role: "user", content: [{ type: "text", text: FEEDBACK }] },
    ];
    const events: Json[] = await streamed(await post(server, "/v1/messages", anthropicBody(cwd, messages)));
    expect(events[2].content_block).toMatchObject({ type: "tool_use", name: "Read" });
    expect(server.requests[0]).toMatchObject({ turn: 1, stepIndex: 0, toolResults: 2 });
  });

  test("Responses (Codex): a later user message selects the turn", async () => {
    const server = await model([{ run: { command: "a" } }, { say: "Done." }], [{ when: FIX_TURN.when, steps: [{ say: "Second turn." }] }]);
    const after = [
      { type: "function_call", call_id: "c1", name: "exec_command", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "ok" },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Done." }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: FEEDBACK }] },
    ];
    const events: Json[] = await streamed(await post(server, "/v1/responses", responsesBody("/nowhere", after)));
    const text = events.filter((event) => event.type === "response.output_text.delta").map((event) => event.delta);
    expect(text.join("")).toBe("Second turn.");
    expect(server.requests[0]).toMatchObject({ turn: 1, stepIndex: 0, toolResults: 1 });
  });

  test("rejects a later turn without its `when` text", async () => {
    const script = { steps: [], next: [{ when: "", steps: [] }] };
    await expect(startScriptedModel({ script })).rejects.toThrow(/invalid model script/);
  });
});

describe("scripted model: tool arguments and cwd", () => {
  test("finds the working directory in each CLI's own words", () => {
    expect(findCwd(["<environment_context>\n  <cwd>/r/codex</cwd>\n"])).toBe("/r/codex");
    expect(findCwd([" - Primary working directory: /r/claude\n - Is a git repository: true"])).toBe("/r/claude");
    expect(findCwd(["<env>\n  Working directory: /r/opencode\n  Workspace root folder: /r"])).toBe("/r/opencode");
    expect(findCwd(["Current date: 2026-11-29\nCurrent working directory: /r/pi"])).toBe("/r/pi");
    expect(findCwd(["", "Today: 2026-11-29; current working directory: '/r/omp'. Do not repeat this"])).toBe("/r/omp");
    expect(findCwd(["no directory here"])).toBeNull();
  });

  test("fills extra required arguments (omp's `i`) and matches omp's _-prefixed tool names", () => {
    const tools = [
      {
        name: "_write",
        kind: "function" as const,
        parameters: {
          type: "object",
          properties: { path: { type: "string" }, content: { type: "string" }, i: { type: "string" } },
          required: ["path", "content", "i"],
        },
      },
    ];
    expect(planWrite({ path: "a.txt", content: "x" }, tools, null)).toEqual({
      ok: true,
      call: { kind: "function", name: "_write", arguments: { path: "a.txt", content: "x", i: "scripted step" } },
    });
  });

  test("passes argv to a shell tool whose command is an array, and explains a missing tool", () => {
    const shell = { name: "shell", kind: "function" as const, parameters: { type: "object", properties: { command: { type: "array" } } } };
    expect(planRun({ command: "ls" }, [shell])).toMatchObject({ ok: true, call: { arguments: { command: ["bash", "-lc", "ls"] } } });
    expect(planRun({ command: "ls" }, [])).toEqual({ ok: false, reason: expect.stringMatching(/no bash/) });
  });

  test("builds Add File for new or CR-bearing files and Update File for existing ones", () => {
    expect(buildPatch("a", "", null)).toBe("*** Begin Patch\n*** Add File: a\n*** End Patch\n");
    expect(buildPatch("a", "x\ny", "x\r\n")).toBe("*** Begin Patch\n*** Add File: a\n+x\n+y\n*** End Patch\n");
    expect(buildPatch("a", "new\n", "old")).toBe("*** Begin Patch\n*** Update File: a\n@@\n-old\n+new\n*** End Patch\n");
  });
});

describe("scripted model: command line", () => {
  test("prints exactly one listening line, serves, and exits 0 on SIGTERM", async () => {
    const dir = tempDir("scripted-cli");
    const scriptFile = join(dir, "script.json");
    writeFileSync(scriptFile, JSON.stringify({ steps: [{ say: "hi" }] }));
    const child = spawn(process.execPath, ["dist/scripted-model/cli.js", "--script", scriptFile], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    child.stdout.setEncoding("utf8");
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (chunk: string) => {
        stdout += chunk;
        const match = /^scripted model listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(stdout);
        if (match?.[1]) resolve(match[1]);
      });
      child.on("exit", (code) => reject(new Error(`exited ${code}`)));
    });
    expect((await fetch(`${url}/`, { method: "HEAD" })).status).toBe(200);
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stdout).toBe(`scripted model listening on ${url}\n`);
  });

  test("refuses an invalid script file with exit 2 and a message", async () => {
    const dir = tempDir("scripted-cli");
    const scriptFile = join(dir, "script.json");
    writeFileSync(scriptFile, JSON.stringify({ steps: [{ say: 1 }] }));
    const child = spawn(process.execPath, ["dist/scripted-model/cli.js", "--script", scriptFile], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.on("exit", (exitCode) => resolve(exitCode)));
    expect(code).toBe(2);
    expect(stderr).toMatch(/invalid model script/);
  });
});
