import { describe, expect, test } from "vitest";
import { entry, judge } from "./helpers/extract.js";

/** Gate 3's rule book on plain entries: no workspace, no git, no agent. */
describe("the rule book judges a list of changed entries", () => {
  test("an ordinary added file passes with no finding", () => {
    expect(judge([entry("src/a.js", "export const a = 1;\n")])).toEqual({ violations: [], warnings: [] });
  });

  test("a symbolic link, a submodule, a rename and a copy are each a violation", () => {
    const { violations } = judge([
      entry("link", null, { newMode: "120000" }),
      entry("vendor/lib", null, { newMode: "160000" }),
      entry("moved.js", "x\n", { status: "R100" }),
      entry("copied.js", "x\n", { status: "C100" }),
    ]);
    expect(violations.map((finding) => [finding.rule, finding.path])).toEqual([
      ["symlink", "link"],
      ["submodule", "vendor/lib"],
      ["rename", "moved.js"],
      ["copy", "copied.js"],
    ]);
  });

  test("a name git reads as .git is refused before its content is looked at", () => {
    const { violations } = judge([entry(".GIT/hooks/post-checkout", "AKIAQWERTYUIOPASDFGH\n")]);
    expect(violations.map((finding) => finding.rule)).toEqual(["git_metadata_path"]);
  });

  test("bytes other than git staged are staged_bytes_differ; a NUL is binary; a key is a secret named by kind and line", () => {
    const { violations } = judge([
      entry("a.js", "one\n", { newId: "0".repeat(40) }),
      entry("blob.dat", Buffer.from([1, 0, 2])),
      entry("config.js", "const id = 1;\nconst key = 'AKIAQWERTYUIOPASDFGH';\n"),
    ]);
    expect(violations.map((finding) => [finding.rule, finding.path])).toEqual([
      ["staged_bytes_differ", "a.js"],
      ["binary", "blob.dat"],
      ["secret", "config.js"],
    ]);
    expect(violations[2]?.message).toBe("looks like a AWS access key id (line 2)");
  });

  test("a deletion is judged by --allow and --deny, and its content is never asked for", () => {
    const { violations } = judge([entry("README.md", null, { status: "D", oldMode: "100644" })], { allow: ["*.js"], deny: ["/README.md"] });
    expect(violations.map((finding) => [finding.rule, finding.path])).toEqual([
      ["not_allowed_path", "README.md"],
      ["denied_path", "README.md"],
    ]);
  });

  test("over maxFiles, too_many_files comes first and only the first maxFiles entries are judged", () => {
    const { violations } = judge([entry("a.js", "a\n"), entry("b.js", "b\n"), entry("link", null, { newMode: "120000" })], { maxFiles: 2 });
    expect(violations.map((finding) => finding.rule)).toEqual(["too_many_files"]);
  });

  test("an added file that collides with a path of the index by case is case_collision", () => {
    const { violations } = judge([entry("MATH.js", "x\n")], {}, ["MATH.js", "math.js"]);
    expect(violations).toContainEqual(expect.objectContaining({ rule: "case_collision", path: "MATH.js" }));
  });
});
