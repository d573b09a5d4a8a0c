import { existsSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { ExternalCodingRunner, type RunOptions, UsageError } from "../src/index.js";
import { resolveOptions } from "../src/run/options.js";
import { FLAG_NAMES } from "../src/settings/setting-names.js";
import { runCli } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { makeHarness } from "./helpers/run.js";

/** The usage error a call throws (the test fails if it throws none). */
function refusal(call: () => unknown): UsageError {
  try {
    call();
  } catch (error) {
    if (error instanceof UsageError) return error;
    throw error;
  }
  throw new Error("accepted");
}

const A_FLAG = /(^|[\s('"])--?[a-z]/;

describe("the library's errors name RunOptions fields; the command line's the same errors with its flags", () => {
  const cases: [Partial<RunOptions>, string, string][] = [
    [{ timeoutMs: -1 }, "timeoutMs must be a positive number", "--timeout must be a positive number"],
    [{ idleTimeoutMs: 3e12 }, "idleTimeoutMs must be at most", "--idle-timeout must be at most"],
    [{ attempts: 21 }, "attempts must be at most 20", "--attempts must be at most 20"],
    [{ limits: { maxFiles: 0 } }, "limits.maxFiles must be a positive whole number", "--max-files must be a positive whole number"],
    [{ caps: { memoryBytes: 1.5 } }, "caps.memoryBytes must be a positive whole number", "--max-memory must be a positive whole number"],
    [{ testEdits: "never" as "base" }, "testEdits must be base, reject or allow", "--test-edits must be base, reject or allow"],
    [{ sandbox: "docker" as "none" }, "sandbox must be auto, bwrap or none", "--sandbox must be auto, bwrap or none"],
    [{ env: ["A=B"] }, "env takes a variable name, not 'A=B'", "--env takes a variable name, not 'A=B'"],
    [{ runId: "../up" }, "runId '../up' must be one path segment", "--run-id '../up' must be one path segment"],
    [
      { allowNet: ["https://example.com/"] },
      "allowNet 'https://example.com/': name a host",
      "--allow-net 'https://example.com/': name a host",
    ],
    [{ allow: ["[z-a]"] }, "allow '[z-a]' is not a valid pattern", "--allow '[z-a]' is not a valid pattern"],
    [{ junit: ["/etc/junit.xml"] }, "junit '/etc/junit.xml' must be a path relative", "--junit '/etc/junit.xml' must be a path relative"],
    [{ expose: ["/no/such/place"] }, "expose '/no/such/place' does not exist", "--expose '/no/such/place' does not exist"],
    [{ noVerify: true }, "noVerify and verify contradict each other", "--no-verify and --verify contradict each other"],
    [{ verify: [], baseline: false }, "no verify command: set verify", "no verify command: pass --verify CMD"],
  ];

  test.each(cases)("%j", (bad, library, commandLine) => {
    const base = { repo: tempDir(), task: "fix it", verify: ["npm test"], ...makeHarness() };
    const error = refusal(() => resolveOptions({ ...base, ...bad }, {}, tempDir()));
    expect(error.message).toContain(library);
    expect(error.message).not.toMatch(A_FLAG);
    expect(error.saying(FLAG_NAMES)).toContain(commandLine);
  });

  test("the command line still says --timeout, --no-verify and --verify", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const outcome = await runCli(["run", "-C", repo, "--yes", "--no-verify", "--verify", "npm test", "--", "fix it"]);
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toBe("handoff: --no-verify and --verify contradict each other: give one or the other\n");
  });
});

describe("run() refuses before anything exists, in the library's words", () => {
  test("without a repo: repo is required (the process's directory is never assumed)", async () => {
    const harness = makeHarness();
    const options = { task: "fix it", verify: ["npm test"], yes: true, ...harness } as unknown as RunOptions;
    await expect(new ExternalCodingRunner().run(options)).rejects.toMatchObject({
      code: "no_repo",
      message: "repo is required: the source repository's directory",
    });
    expect(existsSync(harness.runsDir)).toBe(false);
  });

  test("a mistyped backend gets the name it most likely meant; a far one, the names to choose from", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = (backend: string) =>
      new ExternalCodingRunner().run({ repo, task: "t", backend, verify: ["npm test"], yes: true, ...makeHarness() });
    await expect(run("codx")).rejects.toMatchObject({ code: "unknown_backend", message: "unknown backend 'codx'; did you mean 'codex'?" });
    await expect(run("cluade")).rejects.toThrow("did you mean 'claude'?");
    await expect(run("emacs")).rejects.toThrow(/^unknown backend 'emacs' \(expected one of codex, claude, .*, command\)$/);
  });

  test("no approval: set yes, or pass an approve callback; the command line says --yes", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const running = new ExternalCodingRunner().run({
      repo,
      task: "t",
      backend: "command",
      agentCmd: "true",
      verify: ["true"],
      ...makeHarness(),
    });
    const error = await running.then(
      () => null,
      (thrown: unknown) => thrown as UsageError,
    );
    expect(error?.message).toMatch(/^approval required: set yes: true, or pass an approve callback/);
    expect(error?.saying(FLAG_NAMES)).toMatch(/pass --yes to let the agent edit the disposable clone$/);
  });

  test("the command backend without agentCmd, and an agentCmd for another backend, name the fields", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = (options: Partial<RunOptions>) =>
      new ExternalCodingRunner().run({ repo, task: "t", verify: ["true"], yes: true, ...makeHarness(), ...options });
    await expect(run({ backend: "command" })).rejects.toThrow(/^the command backend needs agentCmd$/);
    await expect(run({ backend: "claude", agentCmd: "./a.sh" })).rejects.toThrow(
      /^agentCmd only applies to the command backend .* use bin to/,
    );
  });
});
