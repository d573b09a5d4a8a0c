import { describe, expect, test } from "vitest";
import { FAILING_ADD_PROJECT, makeRepo } from "./helpers/repo.js";
import { extractAfter } from "./helpers/extract.js";
import { agent, delegate } from "./helpers/run.js";
import { FIX_LINE, agentWith, artifact, expectRejected, expectVerifiedWithWarning, patchPaths } from "./helpers/verdicts.js";

/**
 * docs/threat-model.md, rows N: names and paths in the patch that harm the user when they apply it. Every hostile agent also
 * makes the legitimate fix, so a rejected run still has a patch to save.
 */
const VERIFY = { verify: ["npm test"] };

describe("N1 traversal, absolute paths, renames out of the tree", () => {
  test("N1: files written above the clone never reach the patch", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("writes-outside-the-clone.sh"), VERIFY);
    expect(run.result.terminalReason).toBe("verified");
    expect(patchPaths(run)).toEqual(["math.js"]);
    expect(run.patch).not.toContain("escape");
    expect(run.sourceChanged).toEqual([]);
    expect(run.payloadsRan).toEqual([]);
  });

  test("N1: a moved file is a deletion plus an addition, never a rename", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    // The move updates test.js's import: a test edit the task needs, allowed here (this test is about the patch's form).
    const run = await delegate(repo, agent("moves-math-into-lib.sh"), { ...VERIFY, testEdits: "allow" });
    expect(run.result.terminalReason).toBe("verified");
    expect(run.result.patch?.files.map((f) => [f.path, f.change])).toEqual([
      ["lib/math.js", "added"],
      ["math.js", "deleted"],
      ["test.js", "modified"],
    ]);
    expect(run.patch).not.toMatch(/^(rename|copy) (from|to) /mu);
    expect(run.sourceChanged).toEqual([]);
  });
});

describe("N2 names git or an OS reads as .git", () => {
  test("N2: rejects a .GIT/hooks directory (case variant of .git)", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("adds-dot-GIT-dir.sh"), VERIFY);
    expectRejected(run, "git_metadata_path", ".GIT");
    expect(run.patch).not.toContain("hooks/post-checkout");
  });

  test.each([
    ["git~1", "the NTFS 8.3 short name"],
    ["GIT~1", "the upper-case NTFS short name"],
    [".git.", "a trailing dot Windows drops"],
    [".git ", "a trailing space Windows drops"],
    [".git::$INDEX_ALLOCATION", "an NTFS stream name"],
    ["sub/.GIT", "a case variant below the top level"],
  ])("N2: rejects %s/hooks (%s)", async (name) => {
    // The rule on extraction alone; the case variant above runs it end to end.
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await extractAfter(repo, agentWith("adds-git-lookalike-dir.sh", name));
    expect(run.extraction.violations).toContainEqual(expect.objectContaining({ rule: "git_metadata_path", path: name }));
    expect(run.patch).toContain(FIX_LINE);
    expect(run.patch).not.toContain("hooks/post-checkout");
    expect(run.payloadsRan).toEqual([]);
  });
});

describe("N3 invisible and bidi-control characters", () => {
  test("N3: rejects .g<U+200C>it/hooks, which HFS+ reads as .git, and shows the character escaped", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("adds-zero-width-git-dir.sh"), VERIFY);
    expectRejected(run, "git_metadata_path", ".g\\u200cit");
    expect(run.patch).not.toContain("hooks/post-checkout");
    expect(artifact(run, "result.json")).not.toContain("\u200c");
  });

  test("N3: rejects a name with a right-to-left override and never prints the raw override", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("adds-bidi-control-name.sh"), VERIFY);
    expectRejected(run, "invisible_character", "evil\\u202etxt.js");
    expect(patchPaths(run)).toContain("evil\\u202etxt.js");
    expect(artifact(run, "result.json")).not.toContain("\u202e");
  });
});

describe("N4 case and Unicode-normalization collisions", () => {
  test("N4: rejects MATH.js added next to math.js", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("adds-case-colliding-file.sh"), VERIFY);
    expectRejected(run, "case_collision", "MATH.js");
    expect(run.result.policy.violations[0]?.message).toContain("math.js");
  });

  test("N4: rejects Lib/extra.js when lib/ exists (directories collide too)", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, "lib/util.js": "export const util = 1;\n" });
    const run = await extractAfter(repo, agent("adds-case-colliding-dir.sh"));
    expect(run.extraction.violations).toContainEqual(expect.objectContaining({ rule: "case_collision", path: "Lib/extra.js" }));
    expect(run.patch).toContain(FIX_LINE);
  });

  test("N4: rejects an NFD café.txt added next to the committed NFC café.txt", async () => {
    const nfc = "caf\u00e9.txt";
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, [nfc]: "composed\n" });
    const run = await extractAfter(repo, agent("adds-nfd-duplicate-name.sh"));
    expect(run.extraction.violations).toContainEqual(expect.objectContaining({ rule: "case_collision", path: "cafe\u0301.txt" }));
    expect(run.patch).toContain(FIX_LINE);
  });
});

describe("N5 Windows-hostile names", () => {
  test("N5: warns about backslash, device, stream and trailing-dot names and still verifies", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("adds-windows-hostile-name.sh"), VERIFY);
    for (const path of ["..\\..\\evil.txt", "aux.c", "notes.txt:hidden", "trailing."]) {
      expectVerifiedWithWarning(run, "windows_unsafe_name", path);
    }
    expect(run.result.policy.warnings.filter((w) => w.rule === "windows_unsafe_name")).toHaveLength(4);
  });
});

describe("N6 control characters in names", () => {
  test("N6: rejects a name carrying an ANSI escape and reports it as \\x1b", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("adds-control-char-name.sh"), VERIFY);
    expectRejected(run, "control_character", "evil\\x1b[2J\\x1b[31mred.txt");
    expect(run.result.summary).not.toContain("\u001b");
    expect(artifact(run, "result.json")).not.toContain("\\u001b");
  });

  test("N6: rejects a name containing a newline", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("adds-newline-name.sh"), VERIFY);
    expectRejected(run, "control_character", "two\\x0alines.txt");
  });

  test("N6: a special file with an ANSI escape in its name is reported escaped", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("makes-fifo-with-escape-name.sh"), VERIFY);
    expectRejected(run, "special_file", "pipe\\x1b[2J.fifo");
    expect(artifact(run, "result.json")).not.toContain("\\u001b");
  });

  test("N6: an ignored file with an ANSI escape in its name is listed escaped in the warning", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("makes-escape-named-ignored-file.sh"), VERIFY);
    expect(run.result.terminalReason).toBe("verified");
    const warning = run.result.policy.warnings.find((w) => w.rule === "ignored_files_added");
    expect(warning?.message).toContain("debug\\x1b[2J.log");
    expect(artifact(run, "result.json")).not.toContain("\\u001b");
    expect(run.sourceChanged).toEqual([]);
  });
});

describe("N7 names that confuse diff-header parsers", () => {
  test("N7: non-ASCII names, spaces and a ' b' name round-trip exactly and verify", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const presence = "test -f café.txt && test -f 'with space.txt' && test -f 'a b/ b'";
    const run = await delegate(repo, agent("adds-quoted-path-names.sh"), { verify: ["npm test", presence] });
    expect(run.result.terminalReason).toBe("verified");
    expect(patchPaths(run)).toEqual(["a b/ b", "café.txt", "math.js", "with space.txt"]);
    expect(run.result.patch?.files.find((f) => f.path === "a b/ b")).toMatchObject({ change: "added", additions: 1 });
    expect(run.sourceChanged).toEqual([]);
  });
});

describe("N8 names that are not UTF-8", () => {
  test("N8: rejects a Latin-1 name and shows its byte as \\xe9", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("adds-non-utf8-name.sh"), VERIFY);
    expectRejected(run, "non_utf8_name", "caf\\xe9.txt");
  });
});

describe("N9 option-looking names", () => {
  test("N9: -rf and --option= names round-trip as plain files and verify", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const presence = "test -f ./-rf && test -f ./--output=pwned && test -f ./--upload-pack=touch";
    const run = await delegate(repo, agent("adds-option-looking-name.sh"), { verify: ["npm test", presence] });
    expect(run.result.terminalReason).toBe("verified");
    expect(patchPaths(run)).toEqual(["--output=pwned", "--upload-pack=touch", "-rf", "math.js"]);
    expect(run.sourceChanged).toEqual([]);
    expect(run.payloadsRan).toEqual([]);
  });
});
