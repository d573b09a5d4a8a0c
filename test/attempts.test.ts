import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import type { AgentContext, ExternalAgentBackend, ExternalAgentResult, SessionToResume } from "../src/agent/backend.js";
import { FEEDBACK_OPENING, type FeedbackInput } from "../src/repair/feedback.js";
import { renderReport } from "../src/review/report.js";
import { loadRun } from "../src/run-dir/run-lookup.js";
import type { RunResult } from "../src/verdict/result.js";
import { repairable } from "../src/repair/repairable.js";
import { NO_FACTS, type Verdict } from "../src/verdict/decide.js";
import { HIDDEN_TEST_PATCH, INTEGRITY_PROJECT } from "./helpers/integrity.js";
import { FAILING_ADD_PROJECT, commitFile, gitIn, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, delegate, delegateWithoutSandbox, makeHarness, readEvents, readJson } from "./helpers/run.js";

const VERIFY = { verify: ["npm test"] };

function attempts(result: RunResult): NonNullable<RunResult["attempts"]> {
  expect(result.attempts).toBeDefined();
  return result.attempts!;
}

function sha256(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/** A user-plugged backend that edits the clone in-process: `edits[k]` is attempt k+1's body of add(), with its usage. */
function pluggedBackend(
  edits: readonly { body: string; usage: ExternalAgentResult["usage"] }[],
  options: { resumable: boolean; resumed?: SessionToResume[] },
): ExternalAgentBackend {
  let turn = 0;
  const work = (context: AgentContext): ExternalAgentResult => {
    const edit = edits[turn++]!;
    writeFileSync(join(context.cwd, "math.js"), `export function add(a, b) {\n  return ${edit.body};\n}\n`);
    return {
      outcome: { kind: "finished" },
      executable: null,
      version: null,
      sessionId: `session-${turn}`,
      exitCode: 0,
      signal: null,
      finalMessage: `turn ${turn}`,
      usage: edit.usage,
      stderrTail: "",
      durationMs: 1,
    };
  };
  const backend: ExternalAgentBackend = { name: "plugged", run: async (_task, context) => work(context) };
  if (!options.resumable) return backend;
  return {
    ...backend,
    resume: async (session, _message, context) => {
      options.resumed?.push(session);
      return { kind: "resumed", result: work(context) };
    },
  };
}

describe("--attempts: a repair attempt resumes the same session in the same clone with handoff's feedback", () => {
  test("an agent that fixes it wrongly, then rightly from the feedback on stdin and in $HANDOFF_FEEDBACK, ends verified after 2 attempts in the same clone", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add-wrongly-then-from-the-feedback.sh"), { ...VERIFY, attempts: 3 });
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    const [first, second] = attempts(run.result);
    expect(attempts(run.result)).toHaveLength(2);
    expect(first).toMatchObject({
      attempt: 1,
      terminalReason: "verification_failed",
      detail: "command_failed",
      feedback: "attempts/1/feedback.md",
    });
    expect(second).toMatchObject({ attempt: 2, terminalReason: "verified", feedback: null });
    expect(run.result.attemptsStopped).toBeNull();
    // The same clone: the note attempt 1 left is in the final patch, beside attempt 2's fix.
    expect(run.patch).toContain("+attempt 1 tried a * b + 1");
    expect(run.patch).toContain("+  return a + b;");
    const feedback = readFileSync(join(run.runDir, "attempts/1/feedback.md"), "utf8");
    expect(feedback).toContain(FEEDBACK_OPENING);
    expect(feedback).toContain("FAIL: add(2, 2) = 5");
    const events = readEvents(run.runDir).filter((event) => String(event.type).startsWith("attempt"));
    expect(events.map((event) => [event.type, event.attempt])).toEqual([
      ["attempt.started", 1],
      ["attempt.finished", 1],
      ["attempt.started", 2],
      ["attempt.finished", 2],
    ]);
    expect(events[2]).toMatchObject({ resumed: true });
    expect(run.sourceChanged).toEqual([]);
  });

  test("an agent that never fixes it ends verification_failed after N attempts, with N patches kept, each matching its sha256", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("breaks-add-differently-on-every-attempt.sh"), { ...VERIFY, attempts: 3 });
    expect(run.result.terminalReason).toBe("verification_failed");
    const list = attempts(run.result);
    expect(list.map((entry) => entry.terminalReason)).toEqual(["verification_failed", "verification_failed", "verification_failed"]);
    for (const entry of list) {
      const patch = join(run.runDir, `attempts/${entry.attempt}/changes.patch`);
      expect(readFileSync(patch, "utf8")).toContain(`return a * 10 + ${entry.attempt};`);
      expect(entry.patchSha256).toBe(sha256(patch));
      expect(existsSync(join(run.runDir, `attempts/${entry.attempt}/backend-result.json`))).toBe(true);
      expect(readFileSync(join(run.runDir, `attempts/${entry.attempt}/test.log`), "utf8")).toContain(
        `FAIL: add(2, 2) = ${20 + entry.attempt}`,
      );
    }
    // Feedback after the first two only: the third was the last the run allowed.
    expect(list.map((entry) => entry.feedback)).toEqual(["attempts/1/feedback.md", "attempts/2/feedback.md", null]);
    expect(existsSync(join(run.runDir, "attempts/3/feedback.md"))).toBe(false);
    // The top-level files are the last attempt's; test.log is the whole run's.
    expect(run.result.patch?.sha256).toBe(list[2]!.patchSha256);
    expect(sha256(join(run.runDir, "changes.patch"))).toBe(list[2]!.patchSha256);
    const log = readFileSync(join(run.runDir, "test.log"), "utf8");
    for (const n of [21, 22, 23]) expect(log).toContain(`FAIL: add(2, 2) = ${n}`);
    expect(run.result.attemptsStopped).toBeNull();
  });

  test("an agent that breaks a patch rule (a symlink) and removes it after the feedback ends verified; the feedback named the link and its rule", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("links-out-then-removes-the-link-from-the-feedback.sh"), { ...VERIFY, attempts: 2 });
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    const [first] = attempts(run.result);
    expect(first).toMatchObject({ terminalReason: "policy_or_artifact_error", detail: "symlink" });
    expect(readFileSync(join(run.runDir, "attempts/1/feedback.md"), "utf8")).toMatch(/^- passwd: symlink: /m);
    expect(readFileSync(join(run.runDir, "attempts/1/changes.patch"), "utf8")).toContain("passwd");
    expect(run.patch).not.toContain("passwd");
    expect(run.result.policy.violations).toEqual([]);
  });

  test("an agent that changes the source repository on attempt 2 ends source_repository_changed, although attempt 1 only failed verification", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, agent("writes-the-source-on-the-second-attempt.sh"), { ...VERIFY, attempts: 3 });
    expect(run.result.terminalReason).toBe("source_repository_changed");
    expect(run.sourceChanged).toContain("math.js");
    expect(attempts(run.result).map((entry) => entry.terminalReason)).toEqual(["verification_failed", "source_repository_changed"]);
    // The source changed: the fixed patch of attempt 2 was not verified.
    expect(run.result.verification.ran).toBe(false);
  });

  test("an agent that times out on attempt 2 ends timeout, attempt 1 recorded", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("sleeps-on-the-second-attempt.sh"), { ...VERIFY, attempts: 3, timeoutMs: 3000 });
    expect(run.result.terminalReason).toBe("timeout");
    expect(run.result.detail).toBe("wall_timeout");
    const list = attempts(run.result);
    expect(list.map((entry) => [entry.terminalReason, entry.detail])).toEqual([
      ["verification_failed", "command_failed"],
      ["timeout", "wall_timeout"],
    ]);
    expect(list[0]!.patchSha256).toBe(sha256(join(run.runDir, "attempts/1/changes.patch")));
  });

  test("--total-timeout reached between attempts: no further attempt, attemptsStopped says why, the last attempt's verdict stands", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    // The agent is quick; the verification outlasts the whole run's limit.
    const run = await delegate(repo, agent("breaks-add.sh"), { verify: ["sleep 4; npm test"], attempts: 3, totalTimeoutMs: 3000 });
    expect(run.result.terminalReason).toBe("verification_failed");
    expect(attempts(run.result)).toHaveLength(1);
    expect(run.result.attemptsStopped).toBe("--total-timeout was reached after attempt 1");
    expect(readEvents(run.runDir)).toContainEqual(
      expect.objectContaining({ type: "attempts.stopped", reason: run.result.attemptsStopped }),
    );
    expect(existsSync(join(run.runDir, "attempts/1/feedback.md"))).toBe(false);
  });

  test("--total-timeout reached while attempt 2's agent works: timeout (total_timeout), attempt 1 recorded", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("sleeps-on-the-second-attempt.sh"), { ...VERIFY, attempts: 3, totalTimeoutMs: 10_000 });
    expect(run.result.terminalReason).toBe("timeout");
    expect(run.result.detail).toBe("total_timeout");
    expect(attempts(run.result).map((entry) => entry.detail)).toEqual(["command_failed", "total_timeout"]);
  });

  test("a verified first attempt stops the loop: 1 attempt, no feedback", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add.sh"), { ...VERIFY, attempts: 3 });
    expect(run.result.terminalReason).toBe("verified");
    expect(attempts(run.result)).toMatchObject([{ attempt: 1, terminalReason: "verified", feedback: null }]);
    expect(existsSync(join(run.runDir, "attempts/2"))).toBe(false);
  });

  test("an unrepairable failure (the agent exits non-zero) stops the loop after attempt 1, without attemptsStopped", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("exits-nonzero.sh"), { ...VERIFY, attempts: 3 });
    expect(run.result.terminalReason).toBe("external_agent_error");
    expect(attempts(run.result)).toHaveLength(1);
    expect(run.result.attemptsStopped).toBeNull();
    expect(existsSync(join(run.runDir, "attempts/1/feedback.md"))).toBe(false);
  });
});

describe("what is repaired, and what the feedback may show", () => {
  const verdict = (terminalReason: Verdict["terminalReason"], detail: string): Verdict => ({
    terminalReason,
    detail: detail as Verdict["detail"],
    status: "failed",
    summary: "",
    hint: null,
  });

  test("a verification the untouched base fails too (environment_broken, environment_suspect) is not repaired; a failing patch or a broken rule is", () => {
    const violation = { path: "link", rule: "symlink" as const, message: "a symlink" };
    expect(repairable(verdict("verification_failed", "command_failed"), NO_FACTS)).toBe(true);
    expect(repairable(verdict("verification_failed", "failed_held_to_base"), NO_FACTS)).toBe(true);
    expect(repairable(verdict("verification_failed", "environment_broken"), NO_FACTS)).toBe(false);
    expect(repairable(verdict("verification_failed", "environment_suspect"), NO_FACTS)).toBe(false);
    const withViolation = { ...NO_FACTS, patch: { empty: false, violations: [violation] } };
    expect(repairable(verdict("policy_or_artifact_error", "symlink"), withViolation)).toBe(true);
    const writeFailed = { ...withViolation, runDirWrite: { artifact: "changes.patch", message: "ENOSPC" } };
    expect(repairable(verdict("policy_or_artifact_error", "artifact_write_failed"), writeFailed)).toBe(false);
    expect(repairable(verdict("external_agent_error", "exit_code"), NO_FACTS)).toBe(false);
  });

  test("with held-out patches the feedback names the failing command but never shows its output: the hidden tests stay hidden", async () => {
    const holdout = join(tempDir("handoff-holdout"), "hidden-tests.patch");
    writeFileSync(holdout, HIDDEN_TEST_PATCH);
    const repo = await makeRepo(INTEGRITY_PROJECT);
    const run = await delegate(repo, agent("special-cases-the-visible-test.sh"), { ...VERIFY, attempts: 2, holdoutPatches: [holdout] });
    expect(run.result.terminalReason, run.result.summary).toBe("verification_failed");
    expect(readFileSync(join(run.runDir, "attempts/1/test.log"), "utf8")).toContain("add is not special-cased");
    const feedback = readFileSync(join(run.runDir, "attempts/1/feedback.md"), "utf8");
    expect(feedback).toContain("handoff ran `npm test` on your patch");
    expect(feedback).toContain("Its output is not shown: this run verifies with tests you do not see.");
    expect(feedback).not.toContain("special-cased");
    expect(feedback).not.toContain("hidden");
  });
});

describe("--attempts: handoff's own git writes between attempts are never the agent's tampering", () => {
  // git re-dates ("freshens") an object of handoff's store that it is asked to write again; the store's fingerprint
  // must follow handoff's own writes, or attempt 2 of an honest agent ends git_metadata_tampered.
  test("attempt 1 rewrote a file with its own bytes (extraction writes its object again): attempt 2's fix verifies", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("rewrites-the-test-unchanged-then-fixes-add.sh"), { ...VERIFY, attempts: 2 });
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    expect(attempts(run.result).map((attempt) => attempt.terminalReason)).toEqual(["verification_failed", "verified"]);
  });

  test("a held-out check whose content is in the history (verification writes its object again): attempt 2's fix verifies", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const extraCheck = 'import { add } from "./math.js";\nif (add(1, 1) !== 2) process.exit(1);\n';
    // The held-out file, committed on a side branch: its blob is in the store handoff copies from the source.
    gitIn(repo, "checkout", "-q", "-b", "side");
    commitFile(repo, "extra-check.js", extraCheck);
    gitIn(repo, "checkout", "-q", "main");
    const holdout = join(tempDir("handoff-holdout"), "extra-check.patch");
    writeFileSync(
      holdout,
      "diff --git a/extra-check.js b/extra-check.js\nnew file mode 100644\n--- /dev/null\n+++ b/extra-check.js\n@@ -0,0 +1,2 @@\n" +
        extraCheck
          .split("\n")
          .slice(0, 2)
          .map((line) => `+${line}\n`)
          .join(""),
    );
    const run = await delegate(repo, agent("fixes-add-wrongly-then-rightly.sh"), {
      verify: ["npm test", "node extra-check.js"],
      attempts: 2,
      holdoutPatches: [holdout],
    });
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    expect(attempts(run.result).map((attempt) => attempt.terminalReason)).toEqual(["verification_failed", "verified"]);
  });
});

describe("--attempts through the library", () => {
  test("the feedback hook replaces handoff's message: the agent gets the hook's words, which attempts/1/feedback.md keeps", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const seen: { input: FeedbackInput; ours: string }[] = [];
    const run = await delegate(repo, agent("breaks-add-then-does-what-the-feedback-says.sh"), {
      ...VERIFY,
      attempts: 2,
      feedback: (input, ours) => {
        seen.push({ input, ours });
        return "use a + b";
      },
    });
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    expect(readFileSync(join(run.runDir, "attempts/1/feedback.md"), "utf8")).toBe("use a + b");
    expect(seen).toHaveLength(1);
    expect(seen[0]!.input).toMatchObject({
      attempt: 1,
      attempts: 2,
      terminalReason: "verification_failed",
      failedCommand: { command: "npm test", exitCode: 1, timedOut: false },
    });
    expect(seen[0]!.input.output.text).toContain("FAIL: add(2, 2) = 5");
    expect(seen[0]!.ours).toContain(FEEDBACK_OPENING);
  });

  test("a feedback hook that throws stops the loop with attemptsStopped naming its error", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("breaks-add.sh"), {
      ...VERIFY,
      attempts: 3,
      feedback: () => {
        throw new Error("no words today");
      },
    });
    expect(run.result.terminalReason).toBe("verification_failed");
    expect(attempts(run.result)).toHaveLength(1);
    expect(run.result.attemptsStopped).toBe("the feedback writer failed: no words today");
  });

  test("a user-plugged backend without resume stops after attempt 1, attemptsStopped naming why, and no feedback counted as sent", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const backend = pluggedBackend([{ body: "a * b + 1", usage: null }], { resumable: false });
    const run = await delegate(repo, "unused", { ...VERIFY, attempts: 3, backend, agentCmd: undefined });
    expect(run.result.terminalReason).toBe("verification_failed");
    expect(attempts(run.result)).toHaveLength(1);
    expect(run.result.attemptsStopped).toBe("attempt 2 did not start: the plugged backend cannot resume a session");
    // Prepared before the backend said it could not take it, but never sent: result.json names no feedback.
    expect(attempts(run.result)[0]!.feedback).toBeNull();
    const text = renderReport(loadRun(run.runDir), "text");
    expect(text).toContain(
      "\nAttempts (1; the last one decided)\n  attempt 1: verification_failed (command_failed): `npm test` failed (exit 1)\n",
    );
    expect(text).toContain("\n  no further attempt: attempt 2 did not start: the plugged backend cannot resume a session\n");
  });

  test("usage adds up across attempts, in result.json and in handoff show; resume gets the session the last turn reported, in the same clone", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const resumed: SessionToResume[] = [];
    const backend = pluggedBackend(
      [
        { body: "a * b + 1", usage: { inputTokens: 100, outputTokens: 10, costUsd: 0.5 } },
        { body: "a + b", usage: { inputTokens: 200, outputTokens: 20, costUsd: 0.25 } },
      ],
      { resumable: true, resumed },
    );
    const run = await delegate(repo, "unused", { ...VERIFY, attempts: 3, backend, agentCmd: undefined, keepWorkspace: true });
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    expect(attempts(run.result).map((entry) => entry.usage)).toEqual([
      { inputTokens: 100, outputTokens: 10, costUsd: 0.5 },
      { inputTokens: 200, outputTokens: 20, costUsd: 0.25 },
    ]);
    expect(run.result.agent.usage).toEqual({ inputTokens: 300, outputTokens: 30, costUsd: 0.75 });
    const text = renderReport(loadRun(run.runDir), "text");
    expect(text).toContain("    patch sha256 ");
    expect(text).toMatch(
      /\n {4}patch sha256 [0-9a-f]{12}…, usage 100 in \/ 10 out tokens, \$0\.5, (?:\d+ ms|\d+\.\d s), session session-1\n/,
    );
    expect(text).toContain("\n  usage over 2 attempts: 300 in / 30 out tokens, $0.75\n");
    expect(resumed).toEqual([{ sessionId: "session-1", cwd: run.result.workspace, attempt: 2 }]);
    rmSync(run.result.workspace!, { recursive: true, force: true });
  });
});

describe("a run that continues another (RunOptions.continueFrom, what handoff resume passes)", () => {
  test("its clone holds the earlier run's patch: git apply runs in the work tree, not in the workspace root, where it found no file to patch", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const harness = makeHarness();
    const first = await delegate(repo, agent("breaks-add.sh"), { ...VERIFY, harness });
    const patch = readFileSync(join(first.runDir, "changes.patch"));
    const continueFrom = {
      runId: first.result.runId,
      runDir: first.runDir,
      sessionId: null,
      cwd: "/gone",
      home: null,
      patch,
      baseCommit: first.result.repo.baseCommit,
      holdouts: [],
    };
    const second = await delegate(repo, agent("does-nothing.sh"), { ...VERIFY, continueFrom, harness });
    // The agent changed nothing: the patch is the earlier one, verified again (and still failing).
    expect(second.result.terminalReason, second.result.summary).toBe("verification_failed");
    expect(second.patch).toBe(patch.toString("utf8"));
    expect(second.result.resumedFrom).toEqual({ runId: first.result.runId, runDir: first.runDir, sessionId: null });
  });
});

describe("a continued run whose backend cannot resume", () => {
  test("ends external_agent_error (cannot_resume) and puts the kept home back where it was kept, so the session is not used up", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const harness = makeHarness();
    const first = await delegate(repo, agent("breaks-add.sh"), { ...VERIFY, harness });
    const kept = join(harness.cliHomesDir, "kept-elsewhere-home");
    mkdirSync(kept, { recursive: true });
    writeFileSync(join(kept, "transcript.jsonl"), "the earlier session\n");
    const backend: ExternalAgentBackend = {
      name: "plugged",
      run: async () => {
        throw new Error("a continued run starts with a resumed turn");
      },
      resume: async () => ({ kind: "cannot_resume", reason: "plugged cannot continue this session here" }),
    };
    const continueFrom = {
      runId: first.result.runId,
      runDir: first.runDir,
      sessionId: "s-1",
      cwd: "/gone",
      home: kept,
      patch: readFileSync(join(first.runDir, "changes.patch")),
      baseCommit: first.result.repo.baseCommit,
      holdouts: [],
    };
    const second = await delegate(repo, "unused", { ...VERIFY, backend, agentCmd: undefined, continueFrom, harness });
    expect(second.result.terminalReason).toBe("external_agent_error");
    expect(second.result.detail).toBe("cannot_resume");
    expect(second.result.summary).toContain("plugged cannot continue this session here");
    expect(readFileSync(join(kept, "transcript.jsonl"), "utf8")).toBe("the earlier session\n");
  });
});

describe("handoff show tells the story of the attempts", () => {
  async function twoAttemptRun(): Promise<string> {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add-wrongly-then-from-the-feedback.sh"), { ...VERIFY, attempts: 3 });
    expect(run.result.terminalReason).toBe("verified");
    return run.runDir;
  }

  test("text: each attempt in order with its verdict, patch, duration and the feedback sent, then the session", async () => {
    const runDir = await twoAttemptRun();
    const result = readJson(join(runDir, "result.json")) as unknown as RunResult;
    const text = renderReport(loadRun(runDir), "text");
    const story = text.slice(text.indexOf("\nAttempts (2; the last one decided)\n"), text.indexOf("\nContainment\n"));
    const first = story.indexOf("  attempt 1: verification_failed (command_failed): `npm test` failed (exit 1)\n");
    const feedback = story.indexOf("    feedback sent (attempts/1/feedback.md, ");
    const second = story.indexOf("  attempt 2: verified\n");
    expect(
      [first, feedback, second].every((at) => at > 0),
      story,
    ).toBe(true);
    expect(first < feedback && feedback < second).toBe(true);
    expect(story).toContain(`    patch sha256 ${result.attempts![0]!.patchSha256!.slice(0, 12)}…, `);
    expect(story).toContain("      FAIL: add(2, 2) = 5\n");
    expect(story).toContain("  session not kept");
  });

  test("markdown: the feedback in a fence no line of it can close", async () => {
    const runDir = await twoAttemptRun();
    const markdown = renderReport(loadRun(runDir), "markdown");
    expect(markdown).toContain("## Attempts (2; the last one decided)\n");
    expect(markdown).toContain("- attempt 1: verification_failed (command_failed): `npm test` failed (exit 1)\n");
    expect(markdown).toContain("  - feedback sent (`attempts/1/feedback.md`, ");
    // The feedback holds a ``` fence of its own (around the output): the report's fence is longer.
    expect(markdown).toMatch(/\n````text\nYour change \(attempt 1 of 3\)[\s\S]*\n```\n[\s\S]*\n````\n/);
    expect(markdown).toContain("- attempt 2: verified\n");
  });

  test("junit: the verdict's output names each attempt and how it ended", async () => {
    const junit = renderReport(loadRun(await twoAttemptRun()), "junit");
    expect(junit).toContain(
      "<system-out>attempt 1: verification_failed (command_failed): `npm test` failed (exit 1)\nattempt 2: verified: the patch passed all 1 verification command</system-out>",
    );
  });

  test("a feedback.md that handoff did not write (a symlink planted in its place) is named, never read", async () => {
    const runDir = await twoAttemptRun();
    const secret = join(runDir, "..", "elsewhere.txt");
    writeFileSync(secret, "not for the report\n");
    rmSync(join(runDir, "attempts/1/feedback.md"));
    symlinkSync(secret, join(runDir, "attempts/1/feedback.md"));
    const text = renderReport(loadRun(runDir), "text");
    expect(text).toContain("feedback sent: attempts/1/feedback.md not shown, handoff did not write it (a symbolic link)");
    expect(text).not.toContain("not for the report");
  });

  test("a run that kept its session says until when; a run that continued it names the run and session it continues", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const harness = makeHarness();
    const first = await delegate(repo, agent("fixes-add.sh"), { ...VERIFY, keepSession: true, harness });
    expect(first.result.session).toMatchObject({ kept: true, home: expect.any(String), keptUntil: expect.any(String) });
    const kept = renderReport(loadRun(first.runDir), "text");
    expect(kept).toContain(
      `\nSession\n  session kept for \`handoff resume\` until ${first.result.session!.keptUntil} at ${first.result.session!.home}\n`,
    );
    const continueFrom = {
      runId: first.result.runId,
      runDir: first.runDir,
      sessionId: "session-of-the-first-run",
      cwd: "/gone",
      home: null,
      patch: readFileSync(join(first.runDir, "changes.patch")),
      baseCommit: first.result.repo.baseCommit,
      holdouts: [],
    };
    const second = await delegate(repo, agent("does-nothing.sh"), { ...VERIFY, continueFrom, harness });
    expect(second.result.terminalReason, second.result.summary).toBe("verified");
    const markdown = renderReport(loadRun(second.runDir), "markdown");
    // The markdown a PR shows names the run it continues by its id: its directory is a path of this machine.
    expect(markdown).toContain(`\n## Session\n\n- continues run \`${first.result.runId}\`, session session-of-the-first-run\n`);
    expect(markdown).not.toContain(first.runDir);
    expect(markdown).toContain("- session not kept");
  });

  test("a one-attempt run's report has no attempts section", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add.sh"), VERIFY);
    const text = renderReport(loadRun(run.runDir), "text");
    expect(text).not.toContain("Attempts");
    expect(text).not.toContain("session not kept");
  });
});
