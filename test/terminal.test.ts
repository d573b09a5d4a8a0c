import { describe, expect, test } from "vitest";
import type { AgentOutcome, ExternalAgentResult } from "../src/agent/backend.js";
import type { PolicyFinding } from "../src/patch/rules/findings.js";
import type { CommandRecord } from "../src/verify/shell-commands.js";
import { EXIT_CODES, type RunStatus, TERMINAL_REASONS, type TerminalReason, statusOf } from "../src/vocabulary/terminal-reasons.js";
import { type RunFacts, decideOutcome } from "../src/verdict/decide.js";
import type { BaselineOutcome, VerificationOutcome } from "../src/verify/verify.js";
import type { TestEvidence } from "../src/verify/test-evidence.js";

/** The exit-code table of docs/cli.md#exit-codes, copied by hand: the code must agree with the docs, not with itself. */
const CONTRACT_EXIT_CODES: Record<TerminalReason, number> = {
  verified: 0,
  verification_failed: 1,
  no_changes: 3,
  policy_or_artifact_error: 4,
  source_repository_changed: 5,
  external_agent_error: 6,
  environment_unavailable: 7,
  timeout: 124,
  user_cancelled: 130,
};

/**
 * result.json's status per terminal reason, written by hand from the `status` row of docs/run-directory.md, which maps each reason
 * to them: a run that got as far as judging a patch (or found none) completed, a cancel is cancelled, the rest failed.
 */
const CONTRACT_STATUS: Record<TerminalReason, RunStatus> = {
  verified: "completed",
  verification_failed: "completed",
  no_changes: "completed",
  policy_or_artifact_error: "failed",
  source_repository_changed: "failed",
  external_agent_error: "failed",
  environment_unavailable: "failed",
  timeout: "failed",
  user_cancelled: "cancelled",
};

function command(overrides: Partial<CommandRecord> = {}): CommandRecord {
  return { command: "npm test", phase: "verify", exitCode: 0, signal: null, timedOut: false, durationMs: 12, ...overrides };
}

function agentResult(outcome: AgentOutcome): ExternalAgentResult {
  return {
    outcome,
    executable: "/bin/sh",
    version: null,
    sessionId: null,
    exitCode: outcome.kind === "finished" ? 0 : 1,
    signal: null,
    finalMessage: "done",
    usage: null,
    stderrTail: "",
    durationMs: 5,
  };
}

const FAILED_TEST = command({ exitCode: 1 });
const VIOLATION: PolicyFinding = { path: "evil.bin", rule: "binary", message: "binary files are not allowed" };

/** The facts of a clean verified run; each test changes what it is about. */
function facts(overrides: Partial<RunFacts> = {}): RunFacts {
  return {
    cancelled: null,
    sourceChanged: [],
    agent: agentResult({ kind: "finished" }),
    runDirWrite: null,
    artifactError: null,
    patch: { empty: false, violations: [] },
    verification: { kind: "passed", commands: [command()], tests: null },
    held: null,
    baseline: null,
    verifyCommands: ["npm test"],
    testEdits: null,
    holdoutCount: 0,
    tests: null,
    noVerify: null,
    setupFailed: null,
    ...overrides,
  };
}

/** Every bad thing at once except the one under test and what outranks it. */
const EVERYTHING_WRONG: Partial<RunFacts> = {
  cancelled: "interrupted",
  setupFailed: command({ phase: "setup", command: "npm ci", exitCode: 1 }),
  agent: agentResult({ kind: "failed", detail: "auth_failed", message: "not logged in", hint: "log in" }),
  artifactError: { detail: "extract_failed", message: "extract failed" },
  patch: { empty: false, violations: [VIOLATION] },
  verification: { kind: "command_failed", commands: [FAILED_TEST], failed: FAILED_TEST, tests: null },
};

function expectVerdict(input: RunFacts, terminalReason: TerminalReason, detail: string | null) {
  const verdict = decideOutcome(input);
  expect({ terminalReason: verdict.terminalReason, detail: verdict.detail }).toEqual({ terminalReason, detail });
  expect(verdict.status).toBe(CONTRACT_STATUS[terminalReason]);
  expect(verdict.summary).not.toBe("");
  expect(verdict.summary).not.toContain("\n");
  return verdict;
}

describe("decideOutcome precedence", () => {
  test("a clean run is verified", () => {
    expectVerdict(facts(), "verified", null);
  });

  test("a changed source overrides everything, and the summary names the paths", () => {
    const verdict = expectVerdict(
      facts({ ...EVERYTHING_WRONG, sourceChanged: ["a.js", "b.js"] }),
      "source_repository_changed",
      "source_modified",
    );
    expect(verdict.summary).toContain("a.js, b.js");
    expect(verdict.hint).not.toBeNull();
  });

  test("a changed source overrides a verified run; a long list is cut in the summary", () => {
    const paths = ["1", "2", "3", "4", "5", "6", "7"].map((n) => `f${n}.js`);
    const verdict = expectVerdict(facts({ sourceChanged: paths }), "source_repository_changed", "source_modified");
    expect(verdict.summary).toContain("f5.js, …");
    expect(verdict.summary).not.toContain("f6.js");
  });

  test("a run whose handoff died, swept by a later start, is decided here too: user_cancelled / runner_crashed, exit 130, whatever else it had; a changed source still overrides it", () => {
    const crashed = { phase: "agent", ownerPid: 7965, killed: 3, removed: 2, stillAlive: [], patchNotTaken: null };
    const verdict = expectVerdict(
      facts({ ...EVERYTHING_WRONG, runDirWrite: { artifact: "result.json", message: "ENOSPC" }, crashed }),
      "user_cancelled",
      "runner_crashed",
    );
    expect(EXIT_CODES[verdict.terminalReason]).toBe(130);
    expect(verdict.summary).toBe(
      "handoff was stopped during the agent phase (pid 7965) and did not finish; swept by a later handoff start; 3 leftover process(es) killed, 2 directory(ies) removed",
    );
    expect(verdict.hint).toBe("nothing of this run was verified; run the task again");
    const stuck = decideOutcome(
      facts({
        crashed: {
          ...crashed,
          phase: null,
          killed: 0,
          removed: 0,
          stillAlive: [{ pid: 42, command: "sleep 1000" }],
          patchNotTaken: "changes.patch is a symbolic link",
        },
      }),
    );
    expect(stuck.summary).toBe(
      "handoff was stopped before its first phase (pid 7965) and did not finish; swept by a later handoff start; changes.patch is a symbolic link: not taken as its patch",
    );
    expect(stuck.hint).toBe("these processes of the run could not be killed: 42 (sleep 1000); stop them yourself, then run the task again");
    expectVerdict(facts({ crashed, sourceChanged: ["README.md"] }), "source_repository_changed", "source_modified");
  });

  test("a run with --attempts that died in attempt 2 says so, and where the earlier attempts are", () => {
    const crashed = { phase: "agent", attempt: 2, ownerPid: 7965, killed: 0, removed: 3, stillAlive: [], patchNotTaken: null };
    const verdict = expectVerdict(facts({ crashed }), "user_cancelled", "runner_crashed");
    expect(decideOutcome(facts({ crashed: { ...crashed, attempt: 4 } })).summary).toContain("attempts 1 to 3 are in attempts/");
    expect(verdict.summary).toBe(
      "handoff was stopped during the agent phase of attempt 2 (pid 7965) and did not finish; swept by a later handoff start; 3 directory(ies) removed, attempt 1 is in attempts/1/",
    );
  });

  test("a run directory that could not be written (a full disk) comes next: artifact_write_failed outranks a cancel, the agent and the patch", () => {
    const full = { artifact: "events.jsonl", message: "ENOSPC" };
    const verdict = expectVerdict(facts({ ...EVERYTHING_WRONG, runDirWrite: full }), "policy_or_artifact_error", "artifact_write_failed");
    expect(verdict.summary).toContain("events.jsonl");
    expect(verdict.summary).toContain("ENOSPC");
    expectVerdict(
      facts({ ...EVERYTHING_WRONG, runDirWrite: full, sourceChanged: ["a.js"] }),
      "source_repository_changed",
      "source_modified",
    );
  });

  test("a cancel comes next: interrupted, or approval declined", () => {
    expectVerdict(facts(EVERYTHING_WRONG), "user_cancelled", "interrupted");
    expectVerdict(facts({ ...EVERYTHING_WRONG, cancelled: "approval_declined", agent: null }), "user_cancelled", "approval_declined");
  });

  test("a setup command failing before the agent is verification_failed (setup_failed)", () => {
    expectVerdict(facts({ ...EVERYTHING_WRONG, cancelled: null }), "verification_failed", "setup_failed");
  });

  test("then the agent: a timeout (wall or idle) outranks the patch and the verification", () => {
    const rest = { ...EVERYTHING_WRONG, cancelled: null, setupFailed: null };
    expectVerdict(facts({ ...rest, agent: agentResult({ kind: "timed_out", limit: "wall" }) }), "timeout", "wall_timeout");
    expectVerdict(facts({ ...rest, agent: agentResult({ kind: "timed_out", limit: "idle" }) }), "timeout", "idle_timeout");
  });

  test("an agent error keeps the backend's detail and hint, even if verification passed", () => {
    const verdict = expectVerdict(
      facts({ ...EVERYTHING_WRONG, cancelled: null, setupFailed: null }),
      "external_agent_error",
      "auth_failed",
    );
    expect(verdict.hint).toBe("log in");
    const failedButGreen = facts({
      agent: agentResult({ kind: "failed", detail: "exit_code_3", message: "the agent exited with code 3", hint: null }),
    });
    expectVerdict(failedButGreen, "external_agent_error", "exit_code_3");
  });

  test("an agent cancelled by the backend (without handoff's own cancel flag) is user_cancelled", () => {
    expectVerdict(facts({ agent: agentResult({ kind: "cancelled" }) }), "user_cancelled", "interrupted");
  });

  test("then handoff's own artifacts: an artifact error, or no patch at all", () => {
    const afterAgent = { ...EVERYTHING_WRONG, cancelled: null, setupFailed: null, agent: agentResult({ kind: "finished" }) };
    expectVerdict(facts(afterAgent), "policy_or_artifact_error", "extract_failed");
    expectVerdict(facts({ patch: null }), "policy_or_artifact_error", "no_patch");
  });

  test("then policy: the first violation names the detail, the rest are counted", () => {
    const second: PolicyFinding = { path: "link", rule: "symlink", message: "symlinks are not allowed" };
    const verdict = expectVerdict(
      facts({ patch: { empty: false, violations: [VIOLATION, second] }, verification: null }),
      "policy_or_artifact_error",
      "binary",
    );
    expect(verdict.summary).toContain("evil.bin");
    expect(verdict.summary).toContain("and 1 more");
  });

  test("a violation outranks an empty patch; an empty patch is no_changes", () => {
    expectVerdict(facts({ patch: { empty: true, violations: [VIOLATION] } }), "policy_or_artifact_error", "binary");
    expectVerdict(facts({ patch: { empty: true, violations: [] }, verification: null }), "no_changes", null);
  });
});

describe("decideOutcome when the agent could not reach its model", () => {
  const unreachable = agentResult({
    kind: "failed",
    detail: "network_unreachable",
    message: "could not connect",
    hint: "the CLI's own hint",
  });

  test("with a filtered network, the hint names the hosts the gate refused the agent", () => {
    const verdict = expectVerdict(
      facts({ agent: unreachable, agentNetwork: "filtered", agentBlocked: [{ host: "api.example.com", port: 443 }] }),
      "external_agent_error",
      "network_unreachable",
    );
    expect(verdict.hint).toMatch(/^the sandbox's network is filtered and handoff's gate refused the agent api\.example\.com:443: allow/);
    expect(verdict.hint).toContain("--allow-net HOST");
  });

  test("with a filtered network and nothing refused, the hint says the CLI may not use the proxy", () => {
    const verdict = expectVerdict(
      facts({ agent: unreachable, agentNetwork: "filtered", agentBlocked: [] }),
      "external_agent_error",
      "network_unreachable",
    );
    expect(verdict.hint).toMatch(/may not use the proxy handoff gives it \(HTTPS_PROXY\); give it your network with --allow-net '\*'$/);
  });

  test("with a filtered network, an agent that only went around the gate is told its CLI may not use the proxy, not to allow a host", () => {
    const verdict = expectVerdict(
      facts({
        agent: unreachable,
        agentNetwork: "filtered",
        agentBlocked: [
          { host: "api.example.com", port: 53, reason: "dns_lookup" },
          { host: "203.0.113.5", port: 443, reason: "outside_proxy" },
        ],
      }),
      "external_agent_error",
      "network_unreachable",
    );
    expect(verdict.hint).toBe(
      "the sandbox's network is filtered and the agent went around handoff's gate (it tried api.example.com:53, 203.0.113.5:443 directly, refused): its CLI may not use the proxy handoff gives it (HTTPS_PROXY); give it your network with --allow-net '*'",
    );
  });

  test("with a filtered network whose model route the agent used, its provider did not answer: the CLI's own hint stands, whatever else was refused", () => {
    const verdict = expectVerdict(
      facts({ agent: unreachable, agentNetwork: "filtered", agentBlocked: [{ host: "github.com", port: 443 }], agentUsedModelRoute: true }),
      "external_agent_error",
      "network_unreachable",
    );
    expect(verdict.hint).toBe("the CLI's own hint");
  });

  test("with the host's network, the CLI's own hint stands", () => {
    const verdict = expectVerdict(facts({ agent: unreachable, agentNetwork: "host" }), "external_agent_error", "network_unreachable");
    expect(verdict.hint).toBe("the CLI's own hint");
  });
});

describe("decideOutcome on verification", () => {
  const verified = (verification: VerificationOutcome | null, baseline: BaselineOutcome | null = null, verifyCommands = ["npm test"]) =>
    facts({ verification, baseline, verifyCommands });

  test("passed with commands is verified", () => {
    expectVerdict(verified({ kind: "passed", commands: [command()], tests: null }), "verified", null);
  });

  test("--no-verify ends verified/nothing_checked, and the summary says first that nothing was checked", () => {
    const verdict = expectVerdict(
      facts({ verification: { kind: "passed", commands: [], tests: null }, verifyCommands: [], noVerify: { configVerifySkipped: 0 } }),
      "verified",
      "nothing_checked",
    );
    expect(verdict.summary).toBe(
      "NOTHING WAS CHECKED (--no-verify): the patch is valid and applies to the base commit, but no verification command ran",
    );
    expect(verdict.hint).toContain("--verify");
    const skipped = decideOutcome(
      facts({ verification: { kind: "passed", commands: [], tests: null }, verifyCommands: [], noVerify: { configVerifySkipped: 2 } }),
    );
    expect(skipped.summary).toContain("the 2 verify commands in .handoff.json were skipped");
  });

  test("a pass with no verify command and no --no-verify is never verified (no silent pass)", () => {
    expectVerdict(verified({ kind: "passed", commands: [], tests: null }, null, []), "policy_or_artifact_error", "verification_not_run");
  });

  test("a failing command is command_failed; a timed-out one is command_timed_out", () => {
    expectVerdict(
      verified({ kind: "command_failed", commands: [FAILED_TEST], failed: FAILED_TEST, tests: null }),
      "verification_failed",
      "command_failed",
    );
    const slow = command({ exitCode: null, signal: "SIGTERM", timedOut: true });
    expectVerdict(
      verified({ kind: "command_failed", commands: [slow], failed: slow, tests: null }),
      "verification_failed",
      "command_timed_out",
    );
  });

  test("with --baseline, a failure is worded from what the same command did on the untouched base", () => {
    const failed: VerificationOutcome = { kind: "command_failed", commands: [FAILED_TEST], failed: FAILED_TEST, tests: null };
    const base = (records: CommandRecord[], setupFailed = false): BaselineOutcome => ({
      passed: false,
      commands: records,
      setupFailed,
      holdoutsApplied: null,
      tests: null,
    });
    const onBase = (overrides: Partial<CommandRecord>) => command({ phase: "baseline", ...overrides });
    expectVerdict(verified(failed, { ...base([onBase({})]), passed: true }), "verification_failed", "regression");
    expectVerdict(verified(failed, base([onBase({ exitCode: 1 })])), "verification_failed", "still_failing");
    const setup = command({ phase: "baseline-setup", command: "npm ci", exitCode: 1 });
    expectVerdict(verified(failed, base([setup], true)), "verification_failed", "environment_broken");
    const notFound = command({ exitCode: 127 });
    expectVerdict(
      verified({ kind: "command_failed", commands: [notFound], failed: notFound, tests: null }, base([onBase({ exitCode: 127 })])),
      "verification_failed",
      "environment_suspect",
    );
  });

  test("with JUnit evidence, a red base that still fails is told apart: no test ran, some fixed, none fixed", () => {
    const failed: VerificationOutcome = { kind: "command_failed", commands: [FAILED_TEST], failed: FAILED_TEST, tests: null };
    const baseline: BaselineOutcome = {
      passed: false,
      commands: [command({ phase: "baseline", exitCode: 1 })],
      setupFailed: false,
      holdoutsApplied: null,
      tests: null,
    };
    const none = { count: 0, names: [] };
    const evidence = (overrides: Partial<TestEvidence>): TestEvidence => ({
      files: ["junit.xml"],
      patched: { passed: 3, failed: 1, skipped: 0 },
      base: { passed: 3, failed: 1, skipped: 0 },
      fixed: none,
      broke: none,
      vanished: none,
      newlySkipped: none,
      diagnostics: [],
      ...overrides,
    });
    const decide = (tests: TestEvidence) => decideOutcome(facts({ verification: failed, baseline, tests }));
    expect(decide(evidence({ base: null, patched: null }))).toMatchObject({ detail: "environment_suspect" });
    expect(decide(evidence({ base: { passed: 0, failed: 4, skipped: 0 } }))).toMatchObject({ detail: "environment_suspect" });
    expect(decide(evidence({ fixed: { count: 1, names: ["a > b"] } }))).toMatchObject({
      detail: "still_failing",
      summary: expect.stringContaining("a > b"),
    });
    expect(decide(evidence({}))).toMatchObject({ detail: "still_failing", summary: expect.stringContaining("fixed none") });
  });

  test("a right fix on a red base is verified, and the summary says what it fixed", () => {
    const baseline: BaselineOutcome = {
      passed: false,
      commands: [command({ phase: "baseline", exitCode: 1 })],
      setupFailed: false,
      holdoutsApplied: null,
      tests: null,
    };
    const verdict = expectVerdict(facts({ baseline }), "verified", null);
    expect(verdict.summary).toContain("it fixed `npm test` (red on the base, green now)");
  });

  test("passed as patched but failed held to the base is failed_held_to_base, naming the inputs and the switch", () => {
    const testEdits = {
      policy: "base" as const,
      changed: [{ path: "check.sh", reason: "named_by_command", why: "named by `sh check.sh`", change: "modified" as const }],
    };
    const held: VerificationOutcome = { kind: "command_failed", commands: [FAILED_TEST], failed: FAILED_TEST, tests: null };
    const verdict = expectVerdict(facts({ testEdits, held }), "verification_failed", "failed_held_to_base");
    expect(verdict.summary).toContain("held to the base's check.sh");
    expect(verdict.hint).toContain("--test-edits allow");
    const passed = expectVerdict(facts({ testEdits, held: { kind: "passed", commands: [command()], tests: null } }), "verified", null);
    expect(passed.summary).toContain("held to the base's check.sh it passed too");
    const allowed = expectVerdict(facts({ testEdits: { ...testEdits, policy: "allow" } }), "verified", null);
    expect(allowed.summary).toContain("allowed by --test-edits allow");
  });

  test("tests that passed on the base and vanished fail verification unless --test-edits allow", () => {
    const none = { count: 0, names: [] };
    const tests: TestEvidence = {
      files: ["junit.xml"],
      patched: { passed: 1, failed: 0, skipped: 0 },
      base: { passed: 2, failed: 0, skipped: 0 },
      fixed: none,
      broke: none,
      vanished: { count: 1, names: ["math > sub"] },
      newlySkipped: none,
      diagnostics: [],
    };
    expectVerdict(facts({ tests }), "verification_failed", "tests_vanished");
    const allowed = expectVerdict(facts({ tests, testEdits: { policy: "allow", changed: [] } }), "verified", null);
    expect(allowed.summary).toContain("WARNING");
  });

  test("a held-out patch that does not apply on top of the agent's is verification_failed / holdout_does_not_apply", () => {
    expectVerdict(
      facts({ verification: { kind: "holdout_failed", source: "/x/hidden.patch", message: "already exists" } }),
      "verification_failed",
      "holdout_does_not_apply",
    );
  });

  test("setup failing in the fresh checkout is setup_failed; verification editing tracked files is verification_changed_patch", () => {
    const setup = command({ phase: "setup", command: "npm ci", exitCode: 1 });
    expectVerdict(verified({ kind: "setup_failed", commands: [setup], failed: setup }), "verification_failed", "setup_failed");
    expectVerdict(
      verified({ kind: "patch_changed", commands: [command()], changes: null }),
      "verification_failed",
      "verification_changed_patch",
    );
  });

  test("verification_changed_patch says whether the commands rewrote files of the tested tree or left new untracked ones, naming them", () => {
    const none = { count: 0, names: [] };
    const rewrote = expectVerdict(
      verified({
        kind: "patch_changed",
        commands: [command()],
        changes: { modified: { count: 1, names: ["src/a.py"] }, deleted: none, added: none },
      }),
      "verification_failed",
      "verification_changed_patch",
    );
    expect(rewrote.summary).toContain("changed 1 tracked file (src/a.py)");
    expect(rewrote.summary).not.toContain("untracked");
    expect(rewrote.hint).toContain("read-only");
    const left = expectVerdict(
      verified({
        kind: "patch_changed",
        commands: [command()],
        changes: { modified: none, deleted: none, added: { count: 12, names: ["out/report.txt", "out/\\x1b[31m"] } },
      }),
      "verification_failed",
      "verification_changed_patch",
    );
    expect(left.summary).toContain("wrote 12 new untracked files (out/report.txt, out/\\x1b[31m, and 10 more) that no .gitignore covers");
    expect(left.summary).not.toContain("tracked file (");
    expect(left.hint).toContain(".gitignore");
  });

  test("a patch that does not round-trip is handoff's artifact error, not a verification failure", () => {
    expectVerdict(verified({ kind: "apply_failed", message: "corrupt patch" }), "policy_or_artifact_error", "patch_does_not_apply");
    expectVerdict(verified({ kind: "round_trip_mismatch", message: "index differs" }), "policy_or_artifact_error", "round_trip_mismatch");
    expectVerdict(verified(null), "policy_or_artifact_error", "verification_not_run");
  });

  test("a cancel during verification is user_cancelled", () => {
    expectVerdict(verified({ kind: "cancelled", commands: [] }), "user_cancelled", "interrupted");
  });
});

describe("terminal reasons and exit codes", () => {
  test("every terminal reason maps to the contract's exit code, and nothing else does", () => {
    expect(EXIT_CODES).toEqual(CONTRACT_EXIT_CODES);
    expect([...TERMINAL_REASONS].sort()).toEqual(Object.keys(CONTRACT_EXIT_CODES).sort());
    const codes = Object.values(EXIT_CODES);
    expect(new Set(codes).size).toBe(codes.length);
    expect(codes).not.toContain(2); // reserved for usage errors, which never reach a terminal reason
  });

  test.each(TERMINAL_REASONS)("%s has the status the contract implies", (reason) => {
    expect(statusOf(reason)).toBe(CONTRACT_STATUS[reason]);
  });
});
