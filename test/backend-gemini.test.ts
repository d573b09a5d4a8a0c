import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { GEMINI_DOTENV_PINS, GEMINI_LOGIN_FILES, geminiDefinition, geminiKeys, geminiNetwork, userGeminiDir } from "../backends/gemini.js";
import { createGeminiStreamParser } from "../backends/gemini-stream.js";
import { cliInvocation, cliResumeInvocation, lines } from "./helpers/backend-fixtures.js";
import { goldenTranscriptTests, replay } from "./helpers/golden.js";
import { tempDir } from "./helpers/repo.js";

const invocation = cliInvocation("/opt/gemini/bin/gemini");
const SESSION_ID = "aae9a6c1-bec4-4de6-99a3-3b82df1fbf0a";
const INIT = { type: "init", timestamp: "2026-12-06T07:23:37.772Z", session_id: SESSION_ID, model: "gemini-2.5-pro" };
const STATS = { total_tokens: 240, input_tokens: 200, output_tokens: 40, cached: 0, input: 200, duration_ms: 280, tool_calls: 1 };
const failedResult = (message: string, type = "unknown") => ({
  type: "result",
  status: "error",
  error: { type, message },
  stats: { ...STATS, input_tokens: 0, output_tokens: 0 },
});

/** A user home whose ~/.gemini/settings.json says `settings`. */
function userWithSettings(settings: unknown): { HOME: string } {
  const home = tempDir("gemini-user");
  mkdirSync(join(home, ".gemini"));
  writeFileSync(join(home, ".gemini", "settings.json"), JSON.stringify(settings));
  return { HOME: home };
}
const API_KEY_USER = { security: { auth: { selectedType: "gemini-api-key" } } };

describe("gemini argv, env and home", () => {
  test("stream-json, yolo, the folder trusted for this session only, handoff's session id, the task on stdin", () => {
    const command = geminiDefinition.command(invocation);
    expect(command.file).toBe("/opt/gemini/bin/gemini");
    expect(command.args).toEqual([
      "--output-format",
      "stream-json",
      "--approval-mode",
      "yolo",
      "--skip-trust",
      "--session-id",
      "00000000-0000-4000-8000-000000000000",
    ]);
    expect(command.stdin).toBe("make add() return the sum");
  });

  test("passes --model through", () => {
    expect(geminiDefinition.command(cliInvocation("gemini", { model: "gemini-2.5-flash" })).args).toContain("gemini-2.5-flash");
  });

  test("a private GEMINI_CLI_HOME with the user's Google login and settings linked into its .gemini", () => {
    const home = geminiDefinition.home("/var/handoff/homes/run-1", { HOME: "/home/ann" });
    expect(home.env).toEqual({ ...GEMINI_DOTENV_PINS, GEMINI_CLI_HOME: "/var/handoff/homes/run-1/gemini" });
    expect(home.dirs).toEqual(["/var/handoff/homes/run-1/gemini", "/var/handoff/homes/run-1/gemini/.gemini"]);
    expect(GEMINI_LOGIN_FILES).toEqual(["oauth_creds.json", "google_accounts.json", "settings.json"]);
    expect(home.links).toContainEqual({
      at: "/var/handoff/homes/run-1/gemini/.gemini/oauth_creds.json",
      target: "/home/ann/.gemini/oauth_creds.json",
    });
  });

  test("a repo's .env cannot fill in endpoints, keys, the auth type or the model: each is pinned unless handoff's environment has it", () => {
    expect(GEMINI_DOTENV_PINS).toMatchObject({ GOOGLE_GEMINI_BASE_URL: "", GEMINI_MODEL: "", GEMINI_API_KEY: "" });
    // Gemini reads CODE_ASSIST_ENDPOINT with `??`: pinned to its own default, not to an empty endpoint.
    expect(GEMINI_DOTENV_PINS.CODE_ASSIST_ENDPOINT).toBe("https://cloudcode-pa.googleapis.com");
    const env = geminiDefinition.home("/h", { HOME: "/home/ann", GEMINI_API_KEY: "k", GOOGLE_GEMINI_BASE_URL: "http://gw" }).env;
    expect(env).not.toHaveProperty("GEMINI_API_KEY");
    expect(env).not.toHaveProperty("GOOGLE_GEMINI_BASE_URL");
    expect(env.GEMINI_MODEL).toBe("");
  });

  test("the user's $GEMINI_CLI_HOME wins over ~ (its .gemini); a relative one is ignored", () => {
    expect(userGeminiDir({ HOME: "/home/ann", GEMINI_CLI_HOME: "/data/g" })).toBe("/data/g/.gemini");
    expect(userGeminiDir({ HOME: "/home/ann", GEMINI_CLI_HOME: "g" })).toBe("/home/ann/.gemini");
  });
});

describe("gemini resume", () => {
  test("in the same clone: the first turn's flags plus --resume <id>, no new --session-id, the same id", () => {
    const resumed = geminiDefinition.resume?.(cliResumeInvocation("gemini"));
    expect(resumed).toEqual({
      command: {
        file: "gemini",
        args: ["--output-format", "stream-json", "--approval-mode", "yolo", "--skip-trust", "--resume", "session-1"],
        stdin: "did not pass handoff's checks",
      },
      sessionId: "session-1",
    });
  });

  test("in a new clone: cannot resume, and says why", () => {
    const resumed = geminiDefinition.resume?.(cliResumeInvocation("gemini", { previousCwd: "/work/old/ws" }));
    expect(resumed).toEqual({ cannotResume: expect.stringContaining("earlier clone's path") });
  });
});

describe("gemini network and keys", () => {
  test("an API key user: the Gemini API, or GOOGLE_GEMINI_BASE_URL", () => {
    const user = userWithSettings(API_KEY_USER);
    expect(geminiNetwork(user, {}).endpoints.map((endpoint) => endpoint.url)).toEqual(["generativelanguage.googleapis.com"]);
    expect(geminiNetwork(user, { GOOGLE_GEMINI_BASE_URL: "https://gw.example/g" }).endpoints.map((endpoint) => endpoint.url)).toEqual([
      "https://gw.example/g",
    ]);
  });

  test("a Google login: Code Assist and the OAuth token host; Vertex AI: its regional host", () => {
    const google = userWithSettings({ security: { auth: { selectedType: "oauth-personal" } } });
    expect(geminiNetwork(google, {}).endpoints.map((endpoint) => endpoint.url)).toEqual([
      "cloudcode-pa.googleapis.com",
      "oauth2.googleapis.com",
    ]);
    const vertex = userWithSettings({ security: { auth: { selectedType: "vertex-ai" } } });
    expect(geminiNetwork(vertex, { GOOGLE_CLOUD_LOCATION: "us-central1" }).endpoints.map((endpoint) => endpoint.url)).toEqual([
      "us-central1-aiplatform.googleapis.com",
    ]);
  });

  test("GEMINI_API_KEY is forwarded in x-goog-api-key, to GOOGLE_GEMINI_BASE_URL or the Gemini API, when settings select the key", () => {
    const user = userWithSettings(API_KEY_USER);
    expect(geminiKeys(user, { GEMINI_API_KEY: "k" })).toEqual([
      {
        variable: "GEMINI_API_KEY",
        header: "x-goog-api-key",
        upstream: "https://generativelanguage.googleapis.com",
        redirect: { kind: "variable", variable: "GOOGLE_GEMINI_BASE_URL" },
      },
    ]);
    expect(geminiKeys(user, { GEMINI_API_KEY: "k", GOOGLE_GEMINI_BASE_URL: "http://127.0.0.1:9/" })[0]?.upstream).toBe(
      "http://127.0.0.1:9",
    );
  });

  test("no route without a selected key auth type (a set base URL would be Gemini's refused gateway type), nor without the key", () => {
    expect(geminiKeys(userWithSettings({}), { GEMINI_API_KEY: "k" })).toEqual([]);
    expect(geminiKeys(userWithSettings({ security: { auth: { selectedType: "oauth-personal" } } }), { GEMINI_API_KEY: "k" })).toEqual([]);
    expect(geminiKeys(userWithSettings(API_KEY_USER), {})).toEqual([]);
  });
});

describe("gemini stream parser", () => {
  const parse = (text: string) => replay(text, createGeminiStreamParser());

  test("a fix: the session, the tool call with the changed file, streamed pieces joined into one message, usage, finished", () => {
    const { events, finish } = parse(
      lines(
        INIT,
        { type: "message", role: "user", content: "make add() return the sum" },
        { type: "tool_use", tool_name: "write_file", tool_id: "w1", parameters: { file_path: "/w/math.js", content: "x" } },
        { type: "tool_result", tool_id: "w1", status: "success" },
        { type: "message", role: "assistant", content: "Fixed add(). A", delta: true },
        { type: "message", role: "assistant", content: "ll tests pass.", delta: true },
        { type: "result", status: "success", stats: STATS },
      ),
    );
    expect(events).toEqual([
      { type: "agent.session", sessionId: SESSION_ID },
      { type: "agent.tool.started", id: "w1", name: "write_file", input: { file_path: "/w/math.js", content: "x" } },
      { type: "agent.tool.finished", id: "w1", ok: true },
      { type: "agent.file.changed", path: "/w/math.js", change: "write" },
      { type: "agent.message", text: "Fixed add(). All tests pass." },
      { type: "agent.usage", inputTokens: 200, outputTokens: 40, costUsd: null },
    ]);
    expect(finish).toEqual({
      verdict: { kind: "finished" },
      sessionId: SESSION_ID,
      finalMessage: "Fixed add(). All tests pass.",
      usage: { inputTokens: 200, outputTokens: 40, costUsd: null },
    });
  });

  test("a failed tool is ok:false with its error and changes no file; warnings are agent errors", () => {
    const { events } = parse(
      lines(
        INIT,
        { type: "tool_use", tool_name: "replace", tool_id: "r1", parameters: { file_path: "/w/a.js" } },
        { type: "tool_result", tool_id: "r1", status: "error", error: { type: "edit_no_occurrence_found", message: "0 occurrences" } },
        { type: "error", severity: "warning", message: "Loop detected" },
      ),
    );
    expect(events.slice(1)).toEqual([
      { type: "agent.tool.started", id: "r1", name: "replace", input: { file_path: "/w/a.js" } },
      { type: "agent.tool.finished", id: "r1", ok: false, output: "0 occurrences" },
      { type: "agent.error", message: "gemini warning: Loop detected" },
    ]);
  });

  test.each([
    ['[API Error: {"error":{"code":401,"message":"API key not valid","status":"UNAUTHENTICATED"}}]', "auth_failed"],
    ['[API Error: {"error":{"code":403,"message":"denied","status":"PERMISSION_DENIED"}}]', "auth_failed"],
    ["[API Error: You exceeded your current quota]\nPlease wait and try again later.", "rate_limited"],
    ['[API Error: {"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}]', "provider_error"],
    ["[API Error: terminated]", "provider_error"],
    // The next two as Gemini 0.61.0 words them: nothing listening at the base URL, and a model name the API does not know.
    ["[API Error: exception TypeError: fetch failed sending request]", "network_unreachable"],
    ["[API Error: models/gemini-9 is not found for API version v1beta]", "agent_reported_error"],
  ])("a failed result %s is %s, whatever the exit code", (message, detail) => {
    expect(parse(lines(INIT, failedResult(message))).finish.verdict).toEqual({ kind: "failed", detail, message, hint: null });
  });

  test("the turn limit is max_turns", () => {
    const verdict = parse(lines(INIT, failedResult("Reached max session turns for this session.", "MaxSessionTurnsError"))).finish.verdict;
    expect(verdict).toMatchObject({ kind: "failed", detail: "max_turns" });
  });

  test("a stream without its result is incomplete, its last words kept; an empty one too", () => {
    const cut = parse(lines(INIT, { type: "message", role: "assistant", content: "Half", delta: true }));
    expect(cut.finish).toMatchObject({ verdict: { kind: "incomplete" }, sessionId: SESSION_ID, finalMessage: "Half", usage: null });
    expect(parse("").finish.verdict).toEqual({ kind: "incomplete" });
  });

  test("bad lines, unknown types and odd shapes become diagnostics, never a crash", () => {
    const { events, finish } = parse(
      lines(
        "not json",
        { type: "mystery" },
        { no: "type" },
        { type: "init" },
        { type: "tool_use", tool_id: 3 },
        { type: "result", status: "success" },
      ),
    );
    expect(events.map((event) => event.type)).toEqual(["diagnostic", "diagnostic", "diagnostic", "diagnostic", "diagnostic"]);
    expect(finish.verdict).toEqual({ kind: "finished" });
  });
});

describe("gemini recorded transcripts", () => {
  goldenTranscriptTests("gemini", () => createGeminiStreamParser());
});
