import { existsSync, readdirSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { UsageError } from "../src/lib/errors.js";
import { riskWarnings } from "../src/patch/rules/risk-paths.js";
import { ExternalCodingRunner } from "../src/run/runner.js";
import { FAILING_ADD_PROJECT, makeRepo } from "./helpers/repo.js";
import { extractAfter } from "./helpers/extract.js";
import { agent, delegate, delegateWithoutSandbox, makeHarness } from "./helpers/run.js";
import { FIX_LINE, agentWith, artifact, expectRejected, expectVerifiedWithWarning, patchPaths } from "./helpers/verdicts.js";

/** The policy a user sets (`--allow`, `--deny`, limits) and the content rules (binary, secrets, high-risk paths). */
const VERIFY = { verify: ["npm test"] };
const WITH_README = { ...FAILING_ADD_PROJECT, "README.md": "# fixture\n" };

describe("--allow", () => {
  test("a patch inside every --allow pattern verifies", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add.sh"), { ...VERIFY, allow: ["*.js"] });
    expect(run.result.terminalReason).toBe("verified");
    expect(run.result.policy.violations).toEqual([]);
  });

  test("a changed path outside every --allow pattern ends not_allowed_path", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add.sh"), { ...VERIFY, allow: ["src/", "docs/**"] });
    expectRejected(run, "not_allowed_path", "math.js");
  });

  test("a deletion is judged by --allow too", async () => {
    const repo = await makeRepo(WITH_README);
    const run = await extractAfter(repo, agent("fixes-add-and-adds-notes.sh"), { allow: ["*.js", "docs/"] });
    expect(run.extraction.violations).toContainEqual(expect.objectContaining({ rule: "not_allowed_path", path: "README.md" }));
    expect(run.extraction.violations).toHaveLength(1);
  });
});

describe("--deny", () => {
  test("a changed path matching --deny ends denied_path", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add.sh"), { ...VERIFY, deny: ["math.js"] });
    expectRejected(run, "denied_path", "math.js");
  });

  test("a directory pattern denies everything below it", async () => {
    const repo = await makeRepo(WITH_README);
    const run = await extractAfter(repo, agent("fixes-add-and-adds-notes.sh"), { deny: ["docs/"] });
    expect(run.extraction.violations).toContainEqual(expect.objectContaining({ rule: "denied_path", path: "docs/notes.md" }));
    expect(run.patch).toContain(FIX_LINE);
  });

  test("deleting a denied file is denied", async () => {
    const repo = await makeRepo(WITH_README);
    const run = await extractAfter(repo, agent("fixes-add-and-adds-notes.sh"), { deny: ["/README.md"] });
    expect(run.extraction.violations).toContainEqual(expect.objectContaining({ rule: "denied_path", path: "README.md" }));
    expect(run.extraction.files).toContainEqual(expect.objectContaining({ path: "README.md", change: "deleted" }));
  });

  test("deny patterns in .handoff.json at the base commit apply", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".handoff.json": JSON.stringify({ deny: ["math.js"] }) });
    const run = await delegate(repo, agent("fixes-add.sh"), VERIFY);
    expectRejected(run, "denied_path", "math.js");
  });

  test("--deny on the command line wins over .handoff.json", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".handoff.json": JSON.stringify({ deny: ["math.js"] }) });
    const run = await delegate(repo, agent("fixes-add.sh"), { ...VERIFY, deny: ["*.md"] });
    expect(run.result.terminalReason).toBe("verified");
  });

  test("a pattern that cannot compile is a usage error before any run directory exists", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const harness = makeHarness();
    const run = new ExternalCodingRunner().run({
      repo,
      task: "fix",
      backend: "command",
      agentCmd: agent("fixes-add.sh"),
      yes: true,
      runsDir: harness.runsDir,
      workspacesDir: harness.workspacesDir,
      deny: ["[z-a]"],
    });
    await expect(run).rejects.toThrow(UsageError);
    await expect(run).rejects.toMatchObject({ code: "bad_glob", message: expect.stringContaining("[z-a]") });
    expect(existsSync(harness.runsDir) ? readdirSync(harness.runsDir) : []).toEqual([]);
  });
});

describe("size caps", () => {
  test("a file over maxFileBytes ends file_too_large and is left out of the patch", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agentWith("writes-large-file.sh", "2000"), { ...VERIFY, limits: { maxFileBytes: 1000 } });
    expectRejected(run, "file_too_large", "large.txt");
    expect(run.result.policy.violations[0]?.message).toBe("2000 bytes, over the 1000-byte limit");
    expect(patchPaths(run)).toEqual(["math.js"]);
  });

  test("a patch over maxPatchBytes ends patch_too_large", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agentWith("writes-large-file.sh", "2000"), { ...VERIFY, limits: { maxPatchBytes: 1000 } });
    expectRejected(run, "patch_too_large", "");
  });

  test("the same file under the caps verifies", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agentWith("writes-large-file.sh", "2000"), {
      ...VERIFY,
      limits: { maxFileBytes: 2000, maxPatchBytes: 4000 },
    });
    expect(run.result.terminalReason).toBe("verified");
  });
});

describe("the limits apply to what the agent changed", () => {
  const NINE_MB = 9_000_000;
  const DEEP = `${"d/".repeat(300)}`;
  const fixAnd = (shell: string) => `${agent("fixes-add.sh")} && ${shell}`;

  test("a committed 9 MB file the agent did not change no longer ends file_too_large: the fix beside it verifies, even if it touched the file", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, "assets/blob.txt": "a".repeat(NINE_MB) });
    const run = await delegate(repo, fixAnd("touch assets/blob.txt"), VERIFY);
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    expect(run.result.policy.violations).toEqual([]);
    expect(patchPaths(run)).toEqual(["math.js"]);
  });

  test("an agent that grows the committed 9 MB file to 10 MB ends file_too_large: the limit applies to the new content", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, "assets/blob.txt": "a".repeat(NINE_MB) });
    const run = await delegate(repo, fixAnd("head -c 10000000 /dev/zero | tr '\\0' b > assets/blob.txt"), VERIFY);
    expectRejected(run, "file_too_large", "assets/blob.txt");
    expect(run.result.policy.violations[0]?.message).toBe("10000000 bytes, over the 8388608-byte limit");
    expect(patchPaths(run)).toEqual(["math.js"]);
  });

  test("an agent that rewrites the committed 9 MB file with other bytes of the same size ends file_too_large", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, "assets/blob.txt": "a".repeat(NINE_MB) });
    const run = await delegate(repo, fixAnd(`head -c ${NINE_MB} /dev/zero | tr '\\0' b > assets/blob.txt`), VERIFY);
    expectRejected(run, "file_too_large", "assets/blob.txt");
    expect(patchPaths(run)).toEqual(["math.js"]); // never staged: the scan saw other bytes than the base's
  });

  test("a committed tree 300 levels deep no longer ends workspace_too_deep: a file added inside it verifies", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, [`${DEEP}keep.txt`]: "deep\n" });
    const run = await delegate(repo, fixAnd(`echo new > ${DEEP}new.txt`), VERIFY);
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    expect(patchPaths(run)).toEqual([`${DEEP}new.txt`, "math.js"]);
  });

  test("a new directory past maxDepth inside a committed deeper tree still ends workspace_too_deep", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, [`${DEEP}keep.txt`]: "deep\n" });
    const run = await delegate(repo, fixAnd(`mkdir ${DEEP}new && echo new > ${DEEP}new/f.txt`), VERIFY);
    expectRejected(run, "workspace_too_deep", `${DEEP}new`, { patchSaved: false });
  });

  test("a base of 150 files under a 100-entry limit verifies; 101 new files still end workspace_too_large", async () => {
    const files = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`data/f${i}.txt`, `${i}\n`]));
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ...files });
    const limits = { maxWorkspaceEntries: 100 };
    const quiet = await delegate(repo, agent("fixes-add.sh"), { ...VERIFY, limits });
    expect(quiet.result.terminalReason, quiet.result.summary).toBe("verified");
    const flood = await delegate(repo, fixAnd("mkdir new && cd new && for i in $(seq 101); do : > n$i; done"), { ...VERIFY, limits });
    expectRejected(flood, "workspace_too_large", "", { patchSaved: false });
  });
});

describe("content rules", () => {
  test("a binary file ends binary", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("writes-binary-file.sh"), VERIFY);
    expectRejected(run, "binary", "blob.dat");
  });

  test("an AWS key committed in the clone ends secret, named by kind and never by value", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, agent("commits-an-aws-key.sh"), VERIFY);
    expectRejected(run, "secret", "config.js");
    expect(run.result.policy.violations[0]?.message).toBe("looks like a AWS access key id (line 2)");
    for (const name of ["result.json", "events.jsonl", "checkpoint.json"]) {
      expect(artifact(run, name), name).not.toContain("AKIAQWERTYUIOPASDFGH");
      expect(artifact(run, name), name).not.toContain("wJalrXUtnFEMI");
    }
  });

  test("a GitHub token appended to an existing file is found at its line in the file", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("adds-a-github-token-to-math.sh"), VERIFY);
    expectRejected(run, "secret", "math.js");
    expect(run.result.policy.violations[0]?.message).toBe("looks like a GitHub token (line 4)");
    expect(artifact(run, "result.json")).not.toContain("ghp_0123456789");
  });

  test("a private key file ends secret", async () => {
    // The rule on extraction alone; the AWS key above runs the secret rule end to end.
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await extractAfter(repo, agent("adds-a-private-key.sh"));
    expect(run.extraction.violations).toContainEqual(expect.objectContaining({ rule: "secret", path: "id_ed25519" }));
    expect(run.extraction.violations[0]?.message).toContain("private key block");
    expect(JSON.stringify(run.extraction.violations)).not.toContain("b3BlbnNzaC1rZXktdjE");
  });
});

describe("high-risk paths warn and do not reject", () => {
  test("P9: a CI workflow verifies with a ci_config warning", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("adds-ci-workflow.sh"), VERIFY);
    expectVerifiedWithWarning(run, "ci_config", ".github/workflows/ci.yml");
  });

  test("P9: a package.json edit verifies with a package_manifest warning", async () => {
    // The rule on extraction alone; the CI workflow above runs a high-risk path end to end.
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await extractAfter(repo, agent("edits-package-json.sh"));
    expect(run.extraction.violations).toEqual([]);
    expect(run.extraction.warnings).toContainEqual(expect.objectContaining({ rule: "package_manifest", path: "package.json" }));
  });

  test("P9: a new AGENTS.md verifies with an agent_instructions warning", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await extractAfter(repo, agent("adds-agents-md.sh"));
    expect(run.extraction.violations).toEqual([]);
    expect(run.extraction.warnings).toContainEqual(expect.objectContaining({ rule: "agent_instructions", path: "AGENTS.md" }));
  });

  test("P8, V3: gutting the existing test is not verified: held to the base's test.js it fails, and the edit is flagged", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("guts-the-test.sh"), VERIFY);
    expect(run.result).toMatchObject({ terminalReason: "verification_failed", detail: "failed_held_to_base" });
    expect(run.result.policy.warnings.find((w) => w.rule === "test_file_changed")?.message).toBe("modified an existing test file");
  });

  test("a file that becomes executable verifies with an executable_bit warning", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("makes-a-file-executable.sh"), VERIFY);
    expectVerifiedWithWarning(run, "executable_bit", "math.js");
    expect(run.patch).toContain("new mode 100755");
  });
});

describe("riskWarnings", () => {
  const rules = (path: string, change: "added" | "modified" | "deleted" = "modified") => riskWarnings(path, change).map((f) => f.rule);

  test.each([
    [".github/workflows/ci.yml", "ci_config"],
    ["sub/.gitlab-ci.yml", "ci_config"],
    [".husky/pre-commit", "ci_config"],
    [".vscode/tasks.json", "ci_config"],
    ["CLAUDE.md", "agent_instructions"],
    [".claude/settings.json", "agent_instructions"],
    [".mcp.json", "agent_instructions"],
    ["packages/a/package.json", "package_manifest"],
    ["requirements-dev.txt", "package_manifest"],
    [".npmrc", "package_manifest"],
    ["vitest.config.ts", "verification_config"],
    [".handoff.json", "verification_config"],
    [".gitattributes", "git_config_file"],
  ])("%s warns %s", (path, rule) => {
    expect(rules(path)).toContain(rule);
  });

  test("copilot instructions are both CI-directory and agent-instruction paths", () => {
    expect(rules(".github/copilot-instructions.md")).toEqual(["ci_config", "agent_instructions"]);
  });

  test.each(["test.js", "tests/a.py", "src/__tests__/x.ts", "a.test.ts", "b.spec.js", "test_x.py", "x_test.go"])(
    "editing or deleting the existing test %s warns test_file_changed; adding it does not",
    (path) => {
      expect(rules(path, "modified")).toContain("test_file_changed");
      expect(rules(path, "deleted")).toContain("test_file_changed");
      expect(rules(path, "added")).not.toContain("test_file_changed");
    },
  );

  test.each(["math.js", "src/index.ts", "docs/readme.md", "contest.js", "latest.ts"])("%s is an ordinary path", (path) => {
    expect(rules(path)).toEqual([]);
  });
});
