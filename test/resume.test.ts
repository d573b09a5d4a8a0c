import { appendFileSync, chmodSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import type { ExternalAgentBackend, ExternalAgentResult, SessionToResume } from "../src/agent/backend.js";
import { continueRun } from "../src/repair/continue-run.js";
import { collectKeptSessions } from "../src/repair/session-gc.js";
import { ExternalCodingRunner } from "../src/run/runner.js";
import { type CliOutcome, expectUsageError, runCli } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, commitFile, makeRepo, tempDir } from "./helpers/repo.js";
import { agent } from "./helpers/run.js";

/**
 * Issue 14: `handoff resume <run> -- <instruction>` continues a finished run's session as a new run, through all four
 * gates, linked to the old one; and refuses, with one line and exit 2, a run it cannot continue.
 */

/** One handoff state (runs, workspaces, CLI homes) shared by the `run` and the `resume` of a test. */
function makeState() {
  const root = tempDir("handoff-resume");
  const env = { XDG_STATE_HOME: join(root, "xdg"), HANDOFF_WORKSPACE_DIR: join(root, "ws"), HANDOFF_CLI_HOME_DIR: join(root, "homes") };
  return { env, runsDir: join(root, "xdg", "handoff", "runs"), homesDir: env.HANDOFF_CLI_HOME_DIR, wsDir: env.HANDOFF_WORKSPACE_DIR };
}
type State = ReturnType<typeof makeState>;

async function run(state: State, repo: string, agentName: string, extra: readonly string[] = []): Promise<CliOutcome> {
  const args = ["run", "-C", repo, "-b", "command", "--agent-cmd", agent(agentName), "--verify", "npm test", "--yes", "--run-id", "first"];
  return await runCli([...args, ...extra, "--", "fix the failing test"], { env: state.env });
}

async function resume(state: State, args: readonly string[]): Promise<CliOutcome> {
  return await runCli(["resume", ...args], { env: state.env });
}

function readJson(path: string): Record<string, any> {
  return JSON.parse(readFileSync(path, "utf8"));
}

/** Rewrites a run's JSON artifact as the test needs it (mode 0644, as handoff writes it). */
function editJson(path: string, edit: (json: Record<string, any>) => void): void {
  const json = readJson(path);
  edit(json);
  rmSync(path);
  writeFileSync(path, JSON.stringify(json), { mode: 0o644 });
}

/** The runs in the runs directory other than `first`: a resume that was refused made none. */
function newRuns(state: State): string[] {
  return readdirSync(state.runsDir).filter((name) => name !== "first" && !name.startsWith("."));
}

function listOrEmpty(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}

describe("handoff resume", () => {
  test("on a verified run: the resumed command finds its earlier patch in the clone and the instruction in $HANDOFF_FEEDBACK; the new run's patch holds both", async () => {
    const state = makeState();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const first = await run(state, repo, "fixes-add-then-follows-the-instruction.sh");
    expect(first.code, first.stderr).toBe(0);

    const resumed = await resume(state, ["first", "--yes", "--json", "--", "also", "add", "sub()"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const result = JSON.parse(resumed.stdout);
    expect(result.terminalReason).toBe("verified");
    expect(result.runId).not.toBe("first");
    expect(result.resumedFrom).toEqual({ runId: "first", runDir: join(state.runsDir, "first"), sessionId: null });
    const patch = readFileSync(join(result.runDir, "changes.patch"), "utf8");
    expect(patch).toContain("+  return a + b;"); // the earlier run's fix
    expect(patch).toContain("+export function sub(a, b) {"); // the resumed turn's
    expect(patch).toContain("+feedback: also add sub()");
    expect(patch).toContain("+stdin: also add sub()");
    // The new run's request is the instruction, with the earlier run's settings.
    expect(readJson(join(result.runDir, "request.json"))).toMatchObject({
      task: "also add sub()",
      backend: { name: "command", agentCmd: agent("fixes-add-then-follows-the-instruction.sh") },
      commands: { verify: ["npm test"] },
    });
    // The earlier run is as it was.
    expect(readJson(join(state.runsDir, "first", "result.json")).terminalReason).toBe("verified");
  });

  test("on a failed run (verification_failed): the resume fixes it and the new run ends verified", async () => {
    const state = makeState();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const first = await run(state, repo, "breaks-add-then-fixes-it-when-resumed.sh");
    expect(first.code, first.stderr).toBe(1);
    expect(readJson(join(state.runsDir, "first", "result.json")).terminalReason).toBe("verification_failed");

    const resumed = await resume(state, ["first", "--yes", "--run-id", "second", "--", "the test still fails: fix add()"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/^verified: /);
    const result = readJson(join(state.runsDir, "second", "result.json"));
    expect(result.resumedFrom.runId).toBe("first");
    const patch = readFileSync(join(state.runsDir, "second", "changes.patch"), "utf8");
    expect(patch).toContain("+  return a + b;");
    expect(patch).toContain("+feedback: the test still fails: fix add()");
  });

  test("--keep-session with the command backend keeps its home, recorded in result.json for 7 days; the resume moves it into the new run", async () => {
    const state = makeState();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const first = await run(state, repo, "fixes-add-then-follows-the-instruction.sh", ["--keep-session"]);
    expect(first.code, first.stderr).toBe(0);
    const { session } = readJson(join(state.runsDir, "first", "result.json"));
    expect(session.kept).toBe(true);
    expect(session.home.startsWith(`${state.homesDir}/first-`)).toBe(true);
    expect(existsSync(join(session.home, "handoff-task.txt"))).toBe(true);
    const days = (Date.parse(session.keptUntil) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(6.9);
    expect(days).toBeLessThanOrEqual(7);

    const resumed = await resume(state, ["first", "--yes", "--", "also add sub()"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    // Moved into the new run's home, which (no --keep-session this time) went with that run.
    expect(existsSync(session.home)).toBe(false);
    expect(listOrEmpty(state.homesDir)).toEqual([]);
  });

  describe("a backend that keeps its session in its private home (through the library)", () => {
    function finished(sessionId: string | null): ExternalAgentResult {
      const base = { executable: null, version: null, exitCode: 0, signal: null, usage: null, stderrTail: "", durationMs: 1 };
      return { ...base, outcome: { kind: "finished" }, sessionId, finalMessage: "done" };
    }

    /** Fixes add() and writes its "transcript" into its home; resumed, reads it back and adds sub(). */
    function sessionBackend(
      resumed: { session: SessionToResume; message: string; transcript: string; math: string }[],
    ): ExternalAgentBackend {
      return {
        name: "sessionful",
        async run(task, context) {
          writeFileSync(join(context.homeDir, "transcript.txt"), `user: ${task}\n`);
          writeFileSync(join(context.cwd, "math.js"), "export function add(a, b) {\n  return a + b;\n}\n");
          return finished("sess-42");
        },
        async resume(session, message, context) {
          const transcript = readFileSync(join(context.homeDir, "transcript.txt"), "utf8");
          resumed.push({ session, message, transcript, math: readFileSync(join(context.cwd, "math.js"), "utf8") });
          appendFileSync(join(context.cwd, "math.js"), "export function sub(a, b) {\n  return a - b;\n}\n");
          return { kind: "resumed", result: finished(session.sessionId) };
        },
      };
    }

    test("the resumed turn gets the recorded session id, the earlier run's work tree, and the kept home with what the first turn left in it", async () => {
      const state = makeState();
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const resumed: Parameters<typeof sessionBackend>[0] = [];
      const backend = sessionBackend(resumed);
      const dirs = { runsDir: state.runsDir, workspacesDir: state.wsDir, cliHomesDir: state.homesDir };
      const runner = new ExternalCodingRunner();
      const first = await runner.run({
        repo,
        task: "fix add()",
        backend,
        verify: ["npm test"],
        yes: true,
        runId: "first",
        keepSession: true,
        ...dirs,
      });
      expect(first.terminalReason).toBe("verified");
      expect(first.session).toMatchObject({ kept: true });
      const { nonce } = readJson(join(state.runsDir, "first", "request.json"));

      const options = continueRun("first", "also add sub()", { runsDir: state.runsDir, yes: true });
      const second = await runner.run({ ...options, backend });
      expect(second.terminalReason, second.summary).toBe("verified");
      expect(resumed).toEqual([
        {
          session: { sessionId: "sess-42", cwd: join(state.wsDir, `first-${nonce}`, "ws"), attempt: 1 },
          message: "also add sub()",
          transcript: "user: fix add()\n",
          math: "export function add(a, b) {\n  return a + b;\n}\n",
        },
      ]);
      expect(second.resumedFrom).toEqual({ runId: "first", runDir: join(state.runsDir, "first"), sessionId: "sess-42" });
      expect(existsSync(first.session!.home!)).toBe(false);
      expect(readFileSync(join(second.runDir, "changes.patch"), "utf8")).toContain("+export function sub(a, b) {");
    });

    test("a backend without resume: the new run ends external_agent_error / cannot_resume, never a fresh session", async () => {
      const state = makeState();
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const { resume: _, ...cannot } = sessionBackend([]);
      const dirs = { runsDir: state.runsDir, workspacesDir: state.wsDir, cliHomesDir: state.homesDir };
      const runner = new ExternalCodingRunner();
      await runner.run({
        repo,
        task: "fix add()",
        backend: cannot,
        verify: ["npm test"],
        yes: true,
        runId: "first",
        keepSession: true,
        ...dirs,
      });
      const second = await runner.run({
        ...continueRun("first", "also add sub()", { runsDir: state.runsDir, yes: true }),
        backend: cannot,
      });
      expect(second.terminalReason).toBe("external_agent_error");
      expect(second.detail).toBe("cannot_resume");
    });

    test("handoff gc --all between resume's check and its agent turn: gc takes the home first, and the resume ends external_agent_error / cannot_resume saying so", async () => {
      const state = makeState();
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const backend = sessionBackend([]);
      const dirs = { runsDir: state.runsDir, workspacesDir: state.wsDir, cliHomesDir: state.homesDir };
      const runner = new ExternalCodingRunner();
      const first = await runner.run({
        repo,
        task: "fix add()",
        backend,
        verify: ["npm test"],
        yes: true,
        runId: "first",
        keepSession: true,
        ...dirs,
      });
      const options = continueRun("first", "also add sub()", { runsDir: state.runsDir, yes: true });
      const collected = collectKeptSessions(state.runsDir, { all: true });
      expect(collected.removed.map((entry) => entry.home)).toEqual([first.session!.home]);
      const second = await runner.run({ ...options, backend });
      expect(second.terminalReason).toBe("external_agent_error");
      expect(second.detail).toBe("cannot_resume");
      expect(second.summary).toContain(`its kept session ${first.session!.home} was taken after this resume checked it`);
      expect(listOrEmpty(state.homesDir)).toEqual([]);
    });
  });

  describe("refuses, with one line and exit 2, and creates nothing", () => {
    /** A finished command run `first` in its own state, and what it takes to check that a refusal created nothing. */
    async function finishedRun(agentName = "fixes-add-then-follows-the-instruction.sh", extra: readonly string[] = []) {
      const state = makeState();
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const first = await run(state, repo, agentName, extra);
      expect(first.code, first.stderr).toBe(0);
      const runDir = join(state.runsDir, "first");
      return { state, repo, runDir, ws: listOrEmpty(state.wsDir), homes: listOrEmpty(state.homesDir) };
    }

    async function expectRefused(made: Awaited<ReturnType<typeof finishedRun>>, says: RegExp, args: readonly string[] = []) {
      const outcome = await resume(made.state, ["first", "--yes", ...args, "--", "also add sub()"]);
      expectUsageError(outcome, says);
      expect(newRuns(made.state)).toEqual([]);
      expect(listOrEmpty(made.state.wsDir)).toEqual(made.ws);
      expect(listOrEmpty(made.state.homesDir)).toEqual(made.homes);
    }

    test("no such run", async () => {
      const state = makeState();
      expectUsageError(await resume(state, ["nosuchrun", "--yes", "--", "more"]), /no finished run at nosuchrun/);
    });

    test("no instruction", async () => {
      const made = await finishedRun();
      expectUsageError(await resume(made.state, ["first", "--yes"]), /no task given: handoff resume <run-id\|run-dir>/);
    });

    test("a run without result.json (still running, or crashed)", async () => {
      const made = await finishedRun();
      rmSync(join(made.runDir, "result.json"));
      await expectRefused(made, /no finished run at first: it has no result\.json/);
    });

    test("a result.json others may write is not trusted", async () => {
      const made = await finishedRun();
      chmodSync(join(made.runDir, "result.json"), 0o666);
      await expectRefused(made, /result\.json is writable by others/);
    });

    test("a changes.patch whose sha256 is not result.json's", async () => {
      const made = await finishedRun();
      const path = join(made.runDir, "changes.patch");
      const patch = readFileSync(path, "utf8");
      rmSync(path);
      writeFileSync(path, patch.replace("a + b", "a + b + 0"), { mode: 0o644 });
      await expectRefused(made, /cannot resume run first: changes\.patch does not match the sha256 recorded in result\.json/);
    });

    test("the source's HEAD is no longer at the run's base commit: says so and how to get back", async () => {
      const made = await finishedRun();
      commitFile(made.repo, "README.md", "moved on\n");
      await expectRefused(
        made,
        /cannot resume run first: the source repository's HEAD is at \w{12} now, no longer at the run's base commit \w{12}; check that commit out again \(git -C .* switch --detach [0-9a-f]{40}/,
      );
    });

    test("the run's source repository is gone", async () => {
      const made = await finishedRun();
      rmSync(made.repo, { recursive: true, force: true });
      await expectRefused(made, /cannot resume run first: its source repository .* is gone/);
    });

    test("a run verified with held-out patches, resumed without them", async () => {
      const holdouts = tempDir("handoff-holdout");
      const hidden = join(holdouts, "hidden.patch");
      writeFileSync(
        hidden,
        "diff --git a/hidden.test.js b/hidden.test.js\nnew file mode 100644\n--- /dev/null\n+++ b/hidden.test.js\n@@ -0,0 +1 @@\n+// hidden\n",
      );
      const made = await finishedRun(undefined, ["--holdout-patch", hidden]);
      await expectRefused(made, /it verified with 1 held-out patch\(es\); give the same file\(s\) again with --holdout-patch/);
      const other = join(holdouts, "other.patch");
      writeFileSync(other, readFileSync(hidden, "utf8").replace("hidden\n", "other\n"));
      await expectRefused(made, /the --holdout-patch files given \(1\) are not the 1 the run verified with/, ["--holdout-patch", other]);
    });

    describe("a CLI backend's run (its result.json and request.json name claude)", () => {
      /** The command run, recorded as a claude run that reported session `sess-1`. */
      async function claudeRun(extra: readonly string[] = ["--keep-session"], sessionId: string | null = "sess-1") {
        const made = await finishedRun(undefined, extra);
        editJson(join(made.runDir, "request.json"), (request) => (request.backend.name = "claude"));
        editJson(join(made.runDir, "result.json"), (result) => {
          result.backend.name = "claude";
          result.backend.sessionId = sessionId;
        });
        return made;
      }

      test("that did not keep its session: says to run with --keep-session", async () => {
        await expectRefused(
          await claudeRun([]),
          /cannot resume run first: it did not keep its session; only a run started with --keep-session can be resumed/,
        );
      });

      test("whose kept session is gone (already continued, or expired and removed)", async () => {
        const made = await claudeRun();
        const home = readJson(join(made.runDir, "result.json")).session.home;
        rmSync(home, { recursive: true });
        made.homes.splice(0);
        await expectRefused(made, /its kept session .* is gone: it was already continued by handoff resume, or expired and removed/);
      });

      test("whose kept session has expired", async () => {
        const made = await claudeRun();
        editJson(join(made.runDir, "result.json"), (result) => (result.session.keptUntil = "2020-01-01T00:00:00.000Z"));
        await expectRefused(made, /its kept session expired at 2020-01-01T00:00:00\.000Z/);
      });

      test("whose agent never reported a session id", async () => {
        await expectRefused(await claudeRun(["--keep-session"], null), /the claude agent never reported a session id/);
      });

      test("whose recorded home is not the one handoff made for it", async () => {
        const made = await claudeRun();
        const elsewhere = tempDir("handoff-not-a-home");
        editJson(join(made.runDir, "result.json"), (result) => (result.session.home = elsewhere));
        await expectRefused(
          made,
          /its recorded session home .* is not one handoff kept \(it is not .*-home, the home handoff made for the run\)/,
        );
        expect(existsSync(elsewhere)).toBe(true);
      });
    });
  });
});
