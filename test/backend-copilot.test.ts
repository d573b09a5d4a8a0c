import { describe, expect, test } from "vitest";
import {
  COPILOT_LOGIN_FILES,
  copilotDefinition,
  copilotKeys,
  copilotNetwork,
  copilotResume,
  userCopilotHome,
} from "../backends/copilot.js";
import {
  COPILOT_PASSED_ON_TYPES,
  COPILOT_SKIPPED_TYPES,
  copilotFailureDetail,
  createCopilotStreamParser,
} from "../backends/copilot-stream.js";
import { cliInfo, cliInvocation, cliResumeInvocation, lines } from "./helpers/backend-fixtures.js";
import { goldenTranscriptTests, replay } from "./helpers/golden.js";

const invocation = cliInvocation("/opt/copilot/bin/copilot");
const SESSION = invocation.sessionId;

const FLAGS = [
  "--output-format",
  "json",
  "--allow-all-tools",
  "--allow-all-paths",
  "--no-custom-instructions",
  "--no-ask-user",
  "--disable-builtin-mcps",
  "--no-auto-update",
  "--disable-client-telemetry",
  "-C",
  "/work/clone/ws",
];

/** A session event as copilot 1.0.102 writes it: `{type, data, id, timestamp, parentId}`. */
function event(type: string, data: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return { type, data, id: `id-${type}`, timestamp: "2026-12-06T07:16:34.300Z", parentId: null, ...extra };
}

const result = (exitCode: number, sessionId = SESSION) => ({
  type: "result",
  timestamp: "2026-12-06T07:16:34.373Z",
  sessionId,
  exitCode,
  usage: {
    premiumRequests: 0,
    totalApiDurationMs: 43,
    sessionDurationMs: 256,
    codeChanges: { linesAdded: 1, linesRemoved: 1, filesModified: [] },
  },
});

const sessionError = (errorType: string, message: string, statusCode?: number) =>
  event("session.error", { errorType, message, ...(statusCode === undefined ? {} : { statusCode }) });

const parse = (transcript: string) => replay(transcript, copilotDefinition.parser(invocation, cliInfo("copilot")));

describe("copilot argv, env and home", () => {
  test("JSON output, every tool allowed, no repo instructions, no GitHub MCP, no update or telemetry, handoff's session id, the task on stdin", () => {
    const command = copilotDefinition.command(invocation);
    expect(command.file).toBe("/opt/copilot/bin/copilot");
    expect(command.args).toEqual([...FLAGS, `--session-id=${SESSION}`]);
    expect(command.stdin).toBe("make add() return the sum");
    // Over a COPILOT_ALLOW_ALL=true passed with --env, which would trust the clone (its MCP servers, hooks).
    expect(command.env).toEqual({ COPILOT_ALLOW_ALL: "false" });
  });

  test("passes --model through", () => {
    expect(copilotDefinition.command(cliInvocation("copilot", { model: "gpt-4.1" })).args).toContain("--model");
    expect(copilotDefinition.command(cliInvocation("copilot", { model: "gpt-4.1" })).args.slice(-3)).toEqual([
      "--model",
      "gpt-4.1",
      `--session-id=${SESSION}`,
    ]);
  });

  test("a private COPILOT_HOME without auto-update, with the user's config.json linked in", () => {
    const home = copilotDefinition.home("/var/handoff/homes/run-1", { HOME: "/home/ann" });
    expect(home.env).toEqual({ COPILOT_HOME: "/var/handoff/homes/run-1/copilot", COPILOT_AUTO_UPDATE: "false" });
    expect(home.dirs).toEqual(["/var/handoff/homes/run-1/copilot"]);
    expect(COPILOT_LOGIN_FILES).toEqual(["config.json"]);
    expect(home.links).toEqual([{ at: "/var/handoff/homes/run-1/copilot/config.json", target: "/home/ann/.copilot/config.json" }]);
  });

  test("the user's absolute $COPILOT_HOME wins over ~/.copilot", () => {
    expect(userCopilotHome({ HOME: "/home/ann", COPILOT_HOME: "/srv/copilot" })).toBe("/srv/copilot");
    expect(userCopilotHome({ HOME: "/home/ann", COPILOT_HOME: "relative" })).toBe("/home/ann/.copilot");
  });
});

describe("copilot resume", () => {
  test("--resume=<id> with the first turn's flags, -C the clone, the same id; the same in a new clone", () => {
    const same = copilotResume(cliResumeInvocation("copilot", { resumeId: "sess-1" }));
    expect("command" in same && same.command.args).toEqual([...FLAGS, "--resume=sess-1"]);
    expect("command" in same && same.command.stdin).toBe("did not pass handoff's checks");
    expect("command" in same && same.command.env).toEqual({ COPILOT_ALLOW_ALL: "false" });
    expect(same.sessionId).toBe("sess-1");
    const moved = copilotResume(cliResumeInvocation("copilot", { resumeId: "sess-1", cwd: "/work/new/ws", previousCwd: "/work/old/ws" }));
    // -C keeps it in the new clone: without it copilot changes into the session's old directory when that still exists.
    expect(moved.command.args).toContain("/work/new/ws");
    expect(moved.command.args).not.toContain("/work/old/ws");
    expect(moved.copies ?? []).toEqual([]);
    expect(moved.sessionId).toBe("sess-1");
  });
});

describe("copilot network and keys", () => {
  const byok = { COPILOT_PROVIDER_BASE_URL: "http://127.0.0.1:9000/v1", COPILOT_PROVIDER_API_KEY: "sk-1" };

  test("BYOK: only the provider's base URL", () => {
    expect(copilotNetwork({}, byok).endpoints).toEqual([
      { url: "http://127.0.0.1:9000/v1", why: "COPILOT_PROVIDER_BASE_URL (its own model provider)" },
    ]);
  });

  test("a GitHub login: api.github.com and the Copilot API hosts; an Enterprise host's own", () => {
    expect(copilotNetwork({}, {}).endpoints.map((endpoint) => endpoint.url)).toEqual([
      "api.github.com",
      "api.githubcopilot.com",
      "api.individual.githubcopilot.com",
      "api.business.githubcopilot.com",
      "api.enterprise.githubcopilot.com",
    ]);
    expect(copilotNetwork({}, { GH_HOST: "acme.ghe.com" }).endpoints.map((endpoint) => endpoint.url)).toEqual([
      "api.acme.ghe.com",
      "copilot-api.acme.ghe.com",
    ]);
    expect(copilotNetwork({}, { GH_HOST: "acme.ghe.com", COPILOT_GH_HOST: "github.com" }).endpoints[0]?.url).toBe("api.github.com");
  });

  test("the API key is forwarded as copilot sends it: bearer for openai, x-api-key for anthropic, to the base URL", () => {
    const redirect = { kind: "variable", variable: "COPILOT_PROVIDER_BASE_URL" };
    expect(copilotKeys({}, { ...byok, COPILOT_PROVIDER_BASE_URL: "http://127.0.0.1:9000/v1/" })).toEqual([
      { variable: "COPILOT_PROVIDER_API_KEY", header: "bearer", upstream: "http://127.0.0.1:9000/v1", redirect },
    ]);
    expect(copilotKeys({}, { ...byok, COPILOT_PROVIDER_TYPE: "anthropic" })).toEqual([
      { variable: "COPILOT_PROVIDER_API_KEY", header: "x-api-key", upstream: "http://127.0.0.1:9000/v1", redirect },
    ]);
    // The bearer token wins over the key in copilot, so it is the one forwarded.
    expect(copilotKeys({}, { ...byok, COPILOT_PROVIDER_BEARER_TOKEN: "tok", COPILOT_PROVIDER_TYPE: "azure" })).toEqual([
      { variable: "COPILOT_PROVIDER_BEARER_TOKEN", header: "bearer", upstream: "http://127.0.0.1:9000/v1", redirect },
    ]);
  });

  test("nothing forwarded where copilot would send the key some other way, or there is no BYOK", () => {
    expect(copilotKeys({}, { COPILOT_PROVIDER_API_KEY: "sk-1" })).toEqual([]);
    expect(copilotKeys({}, { ...byok, COPILOT_PROVIDER_TYPE: "azure" })).toEqual([]);
    expect(copilotKeys({}, { ...byok, COPILOT_PROVIDER_API_KEY_COMMAND: "pass show key" })).toEqual([]);
    expect(copilotKeys({}, { ...byok, COPILOT_PROVIDER_HEADERS: "Authorization: Bearer x" })).toEqual([]);
    expect(copilotKeys({}, { ...byok, COPILOT_PROVIDER_WIRE_API: "responses", COPILOT_PROVIDER_TRANSPORT: "websockets" })).toEqual([]);
    expect(copilotKeys({}, { COPILOT_PROVIDER_BASE_URL: "http://127.0.0.1:9000/v1" })).toEqual([]);
    expect(copilotKeys({}, { GH_TOKEN: "gho_x" })).toEqual([]);
  });
});

describe("copilot failure details", () => {
  test("copilot's errorType first, then the status and its words", () => {
    expect(copilotFailureDetail({ errorType: "authentication", message: "Authentication failed with provider", statusCode: 401 })).toBe(
      "auth_failed",
    );
    expect(copilotFailureDetail({ errorType: "rate_limit", message: "retried 5 times", statusCode: 429 })).toBe("rate_limited");
    expect(copilotFailureDetail({ errorType: "query", message: "Last error: 500 boom", statusCode: 500 })).toBe("provider_error");
    expect(
      copilotFailureDetail({
        errorType: "query",
        message: "Could not connect to local model provider at http://127.0.0.1:1/v1.",
        statusCode: null,
      }),
    ).toBe("network_unreachable");
    expect(
      copilotFailureDetail({
        errorType: "query",
        message: "Last error: Failed native model HTTP request: error decoding response body: unexpected EOF during chunk size line",
        statusCode: null,
      }),
    ).toBe("provider_error");
    expect(copilotFailureDetail({ errorType: "query", message: "Model 'x' not found on provider (HTTP 404).", statusCode: 404 })).toBe(
      "agent_reported_error",
    );
  });
});

describe("copilot stream parser", () => {
  test("a fix: the chosen session id first, tool events with the changed file, the final message, finished; no usage", () => {
    const { events, finish } = parse(
      lines(
        event("session.tools_updated", { model: "gpt-4.1" }, { ephemeral: true }),
        event("user.message", { content: "make add() return the sum" }),
        event("assistant.turn_start", { turnId: "0" }),
        event("assistant.message", {
          messageId: "m1",
          content: "",
          reasoningText: "Looking at math.js.",
          toolRequests: [{ toolCallId: "call_1", name: "edit", arguments: {} }],
        }),
        event("tool.execution_start", {
          toolCallId: "call_1",
          toolName: "edit",
          arguments: { path: "/w/math.js", old_str: "-", new_str: "+" },
        }),
        event("tool.execution_complete", {
          toolCallId: "call_1",
          success: true,
          result: { content: "File /w/math.js updated with changes." },
          fileEdits: [{ path: "/w/math.js", kind: "edit" }],
        }),
        event("assistant.message", { messageId: "m2", content: "Fixed add(). All tests pass.", toolRequests: [] }),
        event("assistant.turn_end", { turnId: "1" }),
        result(0),
      ),
    );
    expect(events).toEqual([
      { type: "agent.session", sessionId: SESSION },
      { type: "agent.reasoning", text: "Looking at math.js." },
      { type: "agent.tool.started", id: "call_1", name: "edit", input: { path: "/w/math.js", old_str: "-", new_str: "+" } },
      { type: "agent.tool.finished", id: "call_1", ok: true, output: "File /w/math.js updated with changes." },
      { type: "agent.file.changed", path: "/w/math.js", change: "edit" },
      { type: "agent.message", text: "Fixed add(). All tests pass." },
    ]);
    expect(finish).toEqual({
      verdict: { kind: "finished" },
      sessionId: SESSION,
      finalMessage: "Fixed add(). All tests pass.",
      usage: null,
    });
  });

  test("a failed tool is ok:false with its error, and changes no file", () => {
    const { events } = parse(
      lines(
        event("tool.execution_start", { toolCallId: "c", toolName: "create", arguments: { path: "/w/a" } }),
        event("tool.execution_complete", {
          toolCallId: "c",
          success: false,
          error: { message: "Path already exists", code: "failure" },
          fileEdits: [{ path: "/w/a", kind: "create" }],
        }),
        result(0),
      ),
    );
    expect(events.slice(2)).toEqual([{ type: "agent.tool.finished", id: "c", ok: false, output: "Path already exists" }]);
  });

  test("a tool call copilot refused (nobody to approve it) fails the run with permission_denied, naming it, even after exit 0", () => {
    const denied = { message: "Permission denied because no interactive user response was available.", code: "denied" };
    const { events, finish } = parse(
      lines(
        event("tool.execution_start", { toolCallId: "c1", toolName: "bash", arguments: { command: "ln -s /etc/passwd x" } }),
        event("tool.execution_complete", { toolCallId: "c1", success: false, error: denied }),
        event("assistant.message", { messageId: "m", content: "Linked it." }),
        result(0),
      ),
    );
    expect(events).toContainEqual({ type: "agent.tool.finished", id: "c1", ok: false, output: denied.message });
    expect(finish.verdict).toEqual({
      kind: "failed",
      detail: "permission_denied",
      message: "copilot refused a tool call: bash ln -s /etc/passwd x",
      hint: null,
    });
  });

  test("a provider failure: retries are errors on the way, the session.error before result decides", () => {
    const failure = event(
      "model.call_failure",
      { statusCode: 500, retryAttempt: 0, errorMessage: '{"message":"boom"}', source: "top_level" },
      { ephemeral: true },
    );
    const { events, finish } = parse(
      lines(
        failure,
        sessionError("query", "Failed to get response from the AI model; retried 5 times Last error: 500 boom", 500),
        result(1),
      ),
    );
    expect(events).toEqual([
      { type: "agent.session", sessionId: SESSION },
      { type: "agent.error", message: `copilot's model request failed (HTTP 500, attempt 1): {"message":"boom"}` },
    ]);
    expect(finish.verdict).toEqual({
      kind: "failed",
      detail: "provider_error",
      message: "Failed to get response from the AI model; retried 5 times Last error: 500 boom",
      hint: null,
    });
  });

  test("a 404 for the model gets a hint that names COPILOT_MODEL", () => {
    const { finish } = parse(
      lines(sessionError("query", "Model 'gpt-9' not found on provider at http://x/v1 (HTTP 404).", 404), result(1)),
    );
    expect(finish.verdict).toMatchObject({
      kind: "failed",
      detail: "agent_reported_error",
      hint: expect.stringContaining("COPILOT_MODEL"),
    });
  });

  test("a non-zero exit without an error event is still a failure; exit 0 after an error is finished", () => {
    expect(parse(lines(result(1))).finish.verdict).toMatchObject({ kind: "failed", detail: "agent_reported_error" });
    expect(parse(lines(sessionError("query", "x"), result(0))).finish.verdict).toEqual({ kind: "finished" });
  });

  test("a stream without its result line is incomplete, an empty one too", () => {
    expect(parse(lines(event("assistant.turn_start", { turnId: "0" }))).finish.verdict).toEqual({ kind: "incomplete" });
    expect(parse("").finish).toEqual({ verdict: { kind: "incomplete" }, sessionId: null, finalMessage: null, usage: null });
  });

  test("the result line's session id is the one reported, when it differs from the chosen one", () => {
    const { events, finish } = parse(lines(event("assistant.turn_start", { turnId: "0" }), result(0, "other-id")));
    expect(events).toEqual([
      { type: "agent.session", sessionId: SESSION },
      { type: "agent.session", sessionId: "other-id" },
    ]);
    expect(finish.sessionId).toBe("other-id");
  });

  test("warnings pass on as JSON; bad lines, unknown types and odd shapes become diagnostics, never a crash", () => {
    const parser = createCopilotStreamParser({ cli: "copilot", chosenSessionId: null });
    const warning = event("session.warning", { warningType: "x", message: "careful" });
    expect(parser.push(JSON.stringify(warning))).toEqual([{ type: "agent.json", data: warning }]);
    expect(parser.push("not json")[0]).toMatchObject({ type: "diagnostic", message: "a line that is not JSON" });
    expect(parser.push(JSON.stringify({ no: "type" }))[0]).toMatchObject({ type: "diagnostic" });
    expect(parser.push(JSON.stringify(event("brand.new", {})))[0]).toMatchObject({
      type: "diagnostic",
      message: expect.stringContaining("brand.new"),
    });
    expect(parser.push(JSON.stringify(event("tool.execution_start", { toolName: 1 })))[0]).toMatchObject({
      type: "diagnostic",
      message: expect.stringContaining("tool.execution_start"),
    });
    expect(parser.push(JSON.stringify({ type: "result", exitCode: "0" }))[0]).toMatchObject({ type: "diagnostic" });
    expect(parser.push("   ")).toEqual([]);
    expect(parser.finish().verdict).toEqual({ kind: "incomplete" });
  });

  test("skipped and passed-on types do not overlap", () => {
    expect([...COPILOT_PASSED_ON_TYPES].filter((type) => COPILOT_SKIPPED_TYPES.has(type))).toEqual([]);
    expect(COPILOT_SKIPPED_TYPES.has("assistant.message_delta")).toBe(true);
  });
});

goldenTranscriptTests("copilot", () => copilotDefinition.parser(invocation, cliInfo("copilot")));
