import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { applyRun } from "../src/review/apply.js";
import { loadRun } from "../src/run-dir/run-lookup.js";
import { probeBubblewrap } from "../src/containment/sandbox.js";
import { HIDDEN_TEST_PATCH, INTEGRITY_PROJECT } from "./helpers/integrity.js";
import { makeRepo, tempDir } from "./helpers/repo.js";
import { type DelegateOutcome, agent, delegate } from "./helpers/run.js";

/**
 * Issue 12: the agent owns its loop, handoff owns the verdict, so an agent must not be able to write the verdict by
 * editing what handoff reruns. Each fixture agent below leaves add() broken and games one verification input; with
 * the defaults (`--test-edits base`) none of them is verified. The project: fixtures/integrity (see helpers/integrity.ts).
 */
const bwrap = await probeBubblewrap();

async function run(agentName: string, options: Parameters<typeof delegate>[2] = {}): Promise<DelegateOutcome> {
  const repo = await makeRepo(INTEGRITY_PROJECT);
  return delegate(repo, agent(agentName), { verify: ["npm test"], ...options });
}

function expectHeldToBase(outcome: DelegateOutcome, path: string, named = path): void {
  const r = outcome.result;
  expect(r.terminalReason, r.summary).toBe("verification_failed");
  expect(r.detail).toBe("failed_held_to_base");
  expect(r.summary).toContain(`held to the base's ${named}`);
  expect(r.hint).toContain("--test-edits allow");
  expect(r.verification.testEdits?.changed).toContainEqual(expect.objectContaining({ path, judged: "held_to_base" }));
  // As patched it passed: the patch is what ships, so that run is kept in the record too.
  expect(r.verification.commands.filter((c) => c.phase === "verify").every((c) => c.exitCode === 0)).toBe(true);
  expect(r.verification.heldToBase?.passed).toBe(false);
  expect(r.verification.passed).toBe(false);
  expect(outcome.sourceChanged).toEqual([]);
}

describe("an agent that games verification is not verified (--test-edits base, the default)", () => {
  test("rewriting the verify script (`sh check.sh`) to exit 0 fails held to the base's check.sh", async () => {
    expectHeldToBase(await run("rewrites-the-verify-script.sh", { verify: ["sh check.sh"] }), "check.sh");
  });

  test("making package.json's test script a no-op fails held to the base's scripts.test", async () => {
    const outcome = await run("no-ops-the-test-script.sh");
    expectHeldToBase(outcome, "package.json", "package.json (scripts.test)");
    expect(outcome.result.verification.testEdits?.changed[0]).toMatchObject({ path: "package.json", entries: ["scripts.test"] });
  });

  test.each([
    ["deletes-the-failing-test.sh", "deleting the one failing test"],
    ["guts-the-failing-test.sh", "gutting the failing test"],
    ["skips-the-failing-test.sh", "marking the failing test .skip"],
  ])("%s: %s fails held to the base's test file", async (name) => {
    expectHeldToBase(await run(name), "test/math.test.js");
  });

  test("excluding the test in the test runner's config fails held to the base's config", async () => {
    const outcome = await run("excludes-the-test-in-runner-config.sh");
    expectHeldToBase(outcome, "jest.config.json");
    expect(outcome.result.verification.testEdits?.changed[0]?.reason).toBe("configuration");
  });

  test("adding a conftest.py, a runner config the base lacks, fails held to the base, where it is removed", async () => {
    // Like pytest's conftest.py hooks, which can deselect tests: here the verify command skips the tests when it exists.
    const cmd = "printf 'collect_ignore_glob = [\"*\"]\\n' > conftest.py";
    const repo = await makeRepo(INTEGRITY_PROJECT);
    const outcome = await delegate(repo, cmd, { verify: ["if [ -e conftest.py ]; then exit 0; fi; node run-tests.js"] });
    expectHeldToBase(outcome, "conftest.py");
    expect(outcome.result.verification.testEdits?.changed[0]).toMatchObject({ change: "added", reason: "configuration" });
  });

  test("the verification inputs are listed in request.json, found from the base commit", async () => {
    const outcome = await run("rewrites-the-verify-script.sh", { verify: ["sh check.sh", "npm test"] });
    const request = JSON.parse(readFileSync(join(outcome.runDir, "request.json"), "utf8"));
    const paths = request.verificationInputs.files.map((f: { path: string }) => f.path);
    expect(paths).toEqual(expect.arrayContaining(["check.sh", "package.json", "jest.config.json", "test/math.test.js"]));
    expect(request.verificationInputs.scripts).toEqual(expect.arrayContaining(["test", "pretest", "posttest"]));
  });
});

describe("honest agents", () => {
  test("an agent that fixes the code and adds a new test is verified: the base's own tests pass too, without the new test", async () => {
    const outcome = await run("fixes-add-and-adds-a-test.sh");
    const r = outcome.result;
    expect(r.terminalReason, r.summary).toBe("verified");
    expect(r.detail).toBeNull();
    expect(r.verification.testEdits?.changed).toEqual([
      expect.objectContaining({
        path: "test/add-more.test.js",
        change: "added",
        reason: "test_file",
        did: "adds the test file test/add-more.test.js",
      }),
    ]);
    expect(r.verification.heldToBase?.passed).toBe(true);
    expect(r.policy.warnings.map((w) => w.rule)).not.toEqual(expect.arrayContaining(["test_file_changed"]));
    expect(r.summary).toBe("the patch passed all 1 verification command; the base's own tests, without the test file it adds, passed too");
  });

  test("--test-edits reject refuses no patch for the tests it adds", async () => {
    const r = (await run("fixes-add-and-adds-a-test.sh", { testEdits: "reject" })).result;
    expect(r.terminalReason, r.summary).toBe("verified");
    expect(r.policy.violations).toEqual([]);
  });

  test("an agent told to change a test is verified under --test-edits allow, and the summary names the test", async () => {
    const outcome = await run("changes-add-and-its-test-as-told.sh", { testEdits: "allow" });
    const r = outcome.result;
    expect(r.terminalReason, r.summary).toBe("verified");
    expect(r.summary).toContain("test/math.test.js");
    expect(r.summary).toContain("--test-edits allow");
    expect(r.verification.testEdits?.changed).toContainEqual(expect.objectContaining({ path: "test/math.test.js", judged: "allowed" }));
    expect(r.verification.heldToBase).toBeNull();
  });

  test("the same agent under --test-edits base fails held to the base, with a hint that names the switch", async () => {
    expectHeldToBase(await run("changes-add-and-its-test-as-told.sh"), "test/math.test.js");
  });

  test("--test-edits reject: a changed test is a verification_input_changed violation, nothing is run", async () => {
    const r = (await run("changes-add-and-its-test-as-told.sh", { testEdits: "reject" })).result;
    expect(r.terminalReason).toBe("policy_or_artifact_error");
    expect(r.detail).toBe("verification_input_changed");
    expect(r.policy.violations).toContainEqual(expect.objectContaining({ path: "test/math.test.js", rule: "verification_input_changed" }));
    expect(r.verification.ran).toBe(false);
  });

  test("a dependency change in package.json is not a change to the checks", async () => {
    const repo = await makeRepo(INTEGRITY_PROJECT);
    const cmd = `${agent("fixes-add-and-adds-a-test.sh")} && sed -i 's/"dependencies": {}/"dependencies": { "left-pad": "1.3.0" }/' package.json`;
    const r = (await delegate(repo, cmd, { verify: ["npm test"] })).result;
    expect(r.terminalReason, r.summary).toBe("verified");
    expect(r.verification.testEdits?.changed.map((input) => input.path)).toEqual(["test/add-more.test.js"]);
    expect(r.verification.testEdits?.notHeld).toEqual([{ path: "package.json", why: "only its dependencies changed" }]);
  });
});

describe("held-out checks (--holdout-patch)", () => {
  function holdout(content = HIDDEN_TEST_PATCH): string {
    const file = join(tempDir("handoff-holdout"), "hidden-tests.patch");
    writeFileSync(file, content);
    return file;
  }

  test("a holdout catches a wrong fix that special-cases the visible test", async () => {
    const outcome = await run("special-cases-the-visible-test.sh", { holdoutPatches: [holdout()] });
    const r = outcome.result;
    expect(r.terminalReason, r.summary).toBe("verification_failed");
    expect(r.detail).toBe("command_failed");
    expect(r.verification.holdouts).toEqual([expect.objectContaining({ files: ["test/hidden.test.js"] })]);
    expect(outcome.patch).not.toContain("hidden.test.js");
    expect(readFileSync(join(outcome.runDir, "test.log"), "utf8")).toContain("add is not special-cased");
  });

  test("a holdout passes a right fix; apply never applies it", async () => {
    const outcome = await run("fixes-add-and-adds-a-test.sh", { holdoutPatches: [holdout()] });
    const r = outcome.result;
    expect(r.terminalReason, r.summary).toBe("verified");
    expect(r.summary).toContain("1 held-out patch");
    expect(outcome.patch).not.toContain("hidden.test.js");
    expect(readFileSync(join(outcome.runDir, "request.json"), "utf8")).not.toContain("special-cased");
    await applyRun(loadRun(outcome.runDir));
    expect(existsSync(join(r.repo.path, "test/add-more.test.js"))).toBe(true);
    expect(existsSync(join(r.repo.path, "test/hidden.test.js"))).toBe(false);
  });

  test("a holdout that conflicts with the agent's patch ends verification_failed / holdout_does_not_apply", async () => {
    const conflicting = HIDDEN_TEST_PATCH.replaceAll("test/hidden.test.js", "test/add-more.test.js");
    const r = (await run("fixes-add-and-adds-a-test.sh", { holdoutPatches: [holdout(conflicting)] })).result;
    expect(r.terminalReason, r.summary).toBe("verification_failed");
    expect(r.detail).toBe("holdout_does_not_apply");
    expect(r.summary).toContain("hidden-tests.patch");
  });

  test.skipIf(!bwrap.ok)("the agent cannot read the holdout file: the sandbox hides it", async () => {
    const file = holdout();
    process.env.HANDOFF_TEST_HOLDOUT = file;
    const outcome = await run("tries-to-read-the-holdout.sh", {
      holdoutPatches: [file],
      sandbox: "bwrap",
      env: ["HANDOFF_TEST_MARKERS", "HANDOFF_TEST_SOURCE", "HANDOFF_TEST_HOLDOUT"],
    });
    expect(outcome.patch).toContain("stolen-holdout.txt");
    expect(outcome.patch).not.toContain("special-cased");
  });
});

describe("test-level evidence (--junit) and the baseline", () => {
  const junit = { verify: ["node run-tests.js --junit junit.xml"], junit: ["junit.xml"], baseline: true } as const;

  test("JUnit evidence records each of the four transitions: fixed, broke, vanished, newly skipped", async () => {
    const r = (await run("fixes-one-test-and-breaks-the-rest.sh", { ...junit, testEdits: "allow" })).result;
    const tests = r.verification.tests!;
    expect(tests.fixed).toMatchObject({ count: 1, names: [expect.stringContaining("add adds")] });
    expect(tests.broke).toMatchObject({ count: 1, names: [expect.stringContaining("mul multiplies")] });
    expect(tests.vanished).toMatchObject({ count: 1, names: [expect.stringContaining("sub subtracts")] });
    expect(tests.newlySkipped).toMatchObject({ count: 1, names: [expect.stringContaining("div divides")] });
    expect(r.terminalReason).toBe("verification_failed");
  });

  test("under base, a passing test that vanished fails verification even though the fix is right", async () => {
    const repo = await makeRepo(INTEGRITY_PROJECT);
    const cmd = `${agent("fixes-add-and-adds-a-test.sh")} && sed -i '/sub subtracts/d' test/math.test.js`;
    const r = (await delegate(repo, cmd, { ...junit })).result;
    expect(r.terminalReason, r.summary).toBe("verification_failed");
    expect(r.detail).toBe("tests_vanished");
    expect(r.summary).toContain("sub subtracts");
    // Held to the base, the deleted test came back and passed: only the test evidence catches this one.
    expect(r.verification.heldToBase?.passed).toBe(true);
  });

  test("a right fix on a red base: the outcome says the patch fixed the command and which tests", async () => {
    const r = (await run("fixes-add-and-adds-a-test.sh", junit)).result;
    expect(r.terminalReason, r.summary).toBe("verified");
    expect(r.summary).toContain("it fixed `node run-tests.js --junit junit.xml` (red on the base, green now)");
    expect(r.verification.baseline?.transitions).toEqual([{ command: junit.verify[0], base: "red", patched: "green" }]);
    expect(r.verification.tests?.fixed.count).toBe(1);
  });

  test("a wrong fix on a red base: still red, as on the base", async () => {
    const repo = await makeRepo(INTEGRITY_PROJECT);
    const r = (await delegate(repo, `sed -i '2s/a - b/a * b/' math.js`, junit)).result;
    expect(r.terminalReason).toBe("verification_failed");
    expect(r.detail).toBe("still_failing");
    expect(r.summary).toContain("still red, as on the base");
  });

  test("a broken environment: red on the base, no test ran on either side", async () => {
    const repo = await makeRepo(INTEGRITY_PROJECT);
    const r = (
      await delegate(repo, agent("fixes-add-and-adds-a-test.sh"), {
        verify: ["node -e 'process.exit(3)'"],
        junit: ["junit.xml"],
        baseline: true,
      })
    ).result;
    expect(r.detail).toBe("environment_suspect");
    expect(r.summary).toContain("the environment may be broken");
  });

  test("a green base that the patch breaks is a regression", async () => {
    const repo = await makeRepo({
      ...INTEGRITY_PROJECT,
      "math.js": INTEGRITY_PROJECT["math.js"]!.replace("return a - b;", "return a + b;"),
    });
    const r = (await delegate(repo, `sed -i 's/return a \\* b;/return a * b + 1;/' math.js`, { verify: ["npm test"], baseline: true }))
      .result;
    expect(r.detail).toBe("regression");
    expect(r.summary).toContain("green on the base, red now");
  });

  test("a malformed JUnit file is a diagnostic in result.json, not a crash", async () => {
    const r = (
      await run("fixes-add-and-adds-a-test.sh", {
        verify: ["node run-tests.js && printf '<testsuite><testcase' > junit.xml"],
        junit: ["junit.xml"],
      })
    ).result;
    expect(r.terminalReason, r.summary).toBe("verified");
    expect(r.verification.tests?.diagnostics).toEqual([expect.stringContaining("junit.xml")]);
  });

  test("a 100 MB JUnit file is not read whole: a diagnostic, the verdict unaffected", async () => {
    const r = (
      await run("fixes-add-and-adds-a-test.sh", { verify: ["node run-tests.js && truncate -s 100M junit.xml"], junit: ["junit.xml"] })
    ).result;
    expect(r.terminalReason, r.summary).toBe("verified");
    expect(r.verification.tests?.diagnostics).toEqual([expect.stringMatching(/junit\.xml.*104857600/u)]);
  });
});
