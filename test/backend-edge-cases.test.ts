import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { CLI_INFOS } from "../backends/index.js";
import type { ExternalAgentResult } from "../src/agent/backend.js";
import { runBackend } from "./helpers/backend-fixtures.js";
import { runCli } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";

/**
 * What the real CLIs cannot be made to do on demand, played by fake CLIs in fixtures/fake-clis/: every backend must
 * turn each into a clear agent failure, never a crash, a hang or unbounded memory.
 */
const FAKES = resolve(import.meta.dirname, "../fixtures/fake-clis");
const CLI_BACKENDS = CLI_INFOS.map((info) => info.name);

/** Backend `backendName` run with the fake CLI `fake` as its --bin (none: looked up on `path`). */
function runFake(backendName: string, fake: string | null, path = "/usr/bin:/bin") {
  return runBackend(backendName, { env: { PATH: path }, executable: fake ? join(FAKES, fake) : null });
}

function failure(result: ExternalAgentResult) {
  expect(result.outcome.kind).toBe("failed");
  return result.outcome as Extract<ExternalAgentResult["outcome"], { kind: "failed" }>;
}

describe.each(CLI_BACKENDS)("the %s backend against a misbehaving CLI", (name) => {
  test("keeps a line over the size limit as a diagnostic and calls the stream malformed", async () => {
    const { result, events } = await runFake(name, "prints-oversized-line.sh");
    expect(failure(result).detail).toBe("malformed_event_stream");
    expect(events.some((event) => event.type === "diagnostic" && /too long/.test(event.message))).toBe(true);
    expect(result.version).toBe("0.0.0-fake");
  });

  test("turns garbage bytes into diagnostics, never a crash", async () => {
    const { result, events } = await runFake(name, "prints-garbage-bytes.sh");
    expect(failure(result).detail).toBe("malformed_event_stream");
    expect(events.filter((event) => event.type === "diagnostic").length).toBeGreaterThanOrEqual(2);
    expect(failure(result).hint).toMatch(/tested with/);
  });

  test("survives a 50 MB stderr flood with a bounded tail", async () => {
    const { result } = await runFake(name, "floods-stderr.sh");
    expect(failure(result).detail).toBe("malformed_event_stream");
    expect(result.stderrTail.length).toBeLessThanOrEqual(16 * 1024);
    // One 50 MB run of letters: a token cut at the tail's start, so none of it is kept (src/lib/clip.ts).
    expect(result.stderrTail).toBe("(50000000 earlier bytes) …");
  });

  test("explains a CLI that exits before writing any event with its own stderr line", async () => {
    const { result } = await runFake(name, "exits-before-output.sh");
    const failed = failure(result);
    expect(failed.detail).toBe("agent_reported_error");
    expect(failed.message).toContain("before writing any event: fatal: could not load config.toml");
    expect(result.exitCode).toBe(1);
  });

  test("reports executable_unavailable with an install hint when the CLI is not on PATH", async () => {
    const { result } = await runFake(name, null, "/nonexistent");
    const failed = failure(result);
    expect(failed.detail).toBe("executable_unavailable");
    expect(failed.hint).toMatch(/npm install -g/);
    expect(result.exitCode).toBeNull();
  });

  test("reports executable_unavailable when the CLI's runtime is missing", async () => {
    const { result } = await runFake(name, "version-fails.sh");
    const failed = failure(result);
    expect(failed.detail).toBe("executable_unavailable");
    expect(failed.message).toContain("bun");
  });
});

describe.each(["pi", "omp"])("the %s backend when the CLI has no key for the model", (name) => {
  test("quotes the stderr reason given after the session header and calls it auth_failed", async () => {
    const { result, events } = await runFake(name, "header-then-no-key.sh");
    const failed = failure(result);
    expect(failed.detail).toBe("auth_failed");
    expect(failed.message).toBe(`${name} exited with code 1 before finishing its stream: error: No API key found for anthropic.`);
    expect(failed.hint).toMatch(/log in/);
    expect(events).toContainEqual({ type: "agent.session", sessionId: "01a22952-7d6f-7187-8fdf-21241162f472" });
  });
});

describe("a misbehaving CLI through the whole pipeline", () => {
  test("ends external_agent_error with exit 6 and the CLI's own words in result.json", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runsDir = join(tempDir("handoff-runs"), "runs");
    const outcome = await runCli([
      "run",
      "-C",
      repo,
      "--backend",
      "claude",
      "--bin",
      join(FAKES, "exits-before-output.sh"),
      "--yes",
      "--json",
      "--no-verify",
      "--runs-dir",
      runsDir,
      "--",
      "fix it",
    ]);
    expect(outcome.code).toBe(6);
    const result = JSON.parse(outcome.stdout);
    expect(result.terminalReason).toBe("external_agent_error");
    expect(result.detail).toBe("agent_reported_error");
    expect(result.summary).toContain("fatal: could not load config.toml");
    expect(result.backend.version).toBe("0.0.0-fake");
  });
});
