import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { OMP_LOGIN_FILES, ompArgs, ompDefinition, ompHome, ompResume, userOmpAgentDir } from "../backends/omp.js";
import { cliInfo, cliInvocation, cliResumeInvocation, lines } from "./helpers/backend-fixtures.js";
import { goldenTranscriptTests, replay, TRANSCRIPTS } from "./helpers/golden.js";

const invocation = cliInvocation("/opt/omp/node_modules/.bin/omp");

describe("omp argv, env and home", () => {
  test("json mode, no title request, no extensions, approvals that cannot ask, the prompt on stdin", () => {
    const command = ompDefinition.command(invocation);
    expect(command.file).toBe("/opt/omp/node_modules/.bin/omp");
    expect(command.args).toEqual(["--mode", "json", "--no-title", "--no-extensions", "--approval-mode", "yolo"]);
    expect(command.stdin).toBe("make add() return the sum");
    expect(command.env).toBeUndefined();
  });

  test("passes --model through as provider/id", () => {
    expect(ompArgs({ model: "anthropic/claude-sonnet-4-5" }).slice(-2)).toEqual(["--model", "anthropic/claude-sonnet-4-5"]);
  });

  test("a private PI_CODING_AGENT_DIR with the user's agent.db, models and config linked in", () => {
    const home = ompDefinition.home("/var/handoff/homes/run-1", { HOME: "/home/ann" });
    expect(home.env).toEqual({ PI_CODING_AGENT_DIR: "/var/handoff/homes/run-1/omp" });
    expect(home.dirs).toEqual(["/var/handoff/homes/run-1/omp"]);
    expect(OMP_LOGIN_FILES).toEqual(["agent.db", "models.yml", "models.yaml", "models.json", "config.yml", "config.yaml"]);
    expect(home.links).toEqual(
      OMP_LOGIN_FILES.map((name) => ({ at: `/var/handoff/homes/run-1/omp/${name}`, target: `/home/ann/.omp/agent/${name}` })),
    );
  });

  test("the user's $PI_CODING_AGENT_DIR (absolute) wins, then $PI_CONFIG_DIR renames ~/.omp", () => {
    expect(userOmpAgentDir({ HOME: "/home/ann", PI_CODING_AGENT_DIR: "/srv/omp" })).toBe("/srv/omp");
    expect(userOmpAgentDir({ HOME: "/home/ann", PI_CODING_AGENT_DIR: "rel" })).toBe("/home/ann/.omp/agent");
    expect(userOmpAgentDir({ HOME: "/home/ann", PI_CONFIG_DIR: ".omp-work" })).toBe("/home/ann/.omp-work/agent");
    expect(userOmpAgentDir({ HOME: "/home/ann" })).toBe("/home/ann/.omp/agent");
    expect(ompHome("/h", { HOME: "/home/ann", PI_CODING_AGENT_DIR: "/srv/omp" }).links[0]!.target).toBe("/srv/omp/agent.db");
  });
});

// The parser is shared with pi (backends/pi-stream.ts, tested in backend-pi.test.ts); here what only omp writes.
describe("omp resume", () => {
  test("in the same clone: the first turn's flags (no extensions, yolo, no title) plus --resume <id>, the same id", () => {
    const resumed = ompResume(cliResumeInvocation("/opt/omp/node_modules/.bin/omp", { resumeId: "01a2" }));
    expect(resumed.command.args).toEqual([...ompDefinition.command(invocation).args, "--resume", "01a2"]);
    expect(resumed.command.stdin).toBe("did not pass handoff's checks");
    expect(resumed.sessionId).toBe("01a2");
  });

  test("in a new clone: --fork <id> (--resume would run in the old clone), a new id the stream reports", () => {
    const resumed = ompResume(cliResumeInvocation("/o", { resumeId: "01a2", cwd: "/work/new/ws", previousCwd: "/work/old/ws" }));
    expect(resumed.command.args.slice(-2)).toEqual(["--fork", "01a2"]);
    expect(resumed.command.args).toContain("--no-extensions");
    expect(resumed.sessionId).toBeUndefined();
  });
});

describe("omp stream specifics", () => {
  const parse = (text: string) => replay(text, ompDefinition.parser(invocation, cliInfo("omp")));
  const session = {
    type: "session",
    version: 3,
    id: "01a22937-613b-7418-be2c-82f42f45397c",
    timestamp: "2026-11-29T21:30:24.955Z",
    cwd: "/w",
  };

  test("omp's informational events are skipped, not diagnosed; a fallback model switch is passed on", () => {
    const fallback = { type: "retry_fallback_applied", from: "a/x", to: "b/y", role: "default" };
    const { events } = parse(
      lines(
        session,
        { type: "advisor_cost_changed" },
        { type: "config_warnings_changed" },
        { type: "model_changed" },
        { type: "thinking_level_changed", thinkingLevel: "low" },
        { type: "tool_stream_update", toolCallId: "c", toolName: "bash" },
        { type: "ttsr_triggered", rules: [] },
        { type: "todo_auto_clear" },
        { type: "goal_updated", goal: null },
        { type: "auto_compaction_start", reason: "threshold", action: "context-full" },
        { type: "auto_compaction_end", action: "context-full", result: undefined, aborted: false, willRetry: false },
        fallback,
      ),
    );
    expect(events).toEqual([
      { type: "agent.session", sessionId: session.id },
      { type: "agent.json", data: fallback },
    ]);
  });

  test("omp exits 1 on a 401 and says so in the stream too: errorStatus classifies it", () => {
    const text = readFileSync(join(TRANSCRIPTS, "omp", "auth-401.jsonl"), "utf8");
    const { finish } = parse(text);
    expect(finish.verdict).toMatchObject({ kind: "failed", detail: "auth_failed" });
  });
});

describe("omp failing before its agent starts", () => {
  test("the header and omp's pre-start advisor line are not an agent run", () => {
    const { finish } = replay(
      lines({ type: "session", version: 3, id: "s1", timestamp: "t", cwd: "/w" }, { type: "advisor_cost_changed" }),
      ompDefinition.parser(invocation, cliInfo("omp")),
    );
    expect(finish.verdict).toEqual({ kind: "incomplete" });
  });
});

goldenTranscriptTests("omp", () => ompDefinition.parser(invocation, cliInfo("omp")));
