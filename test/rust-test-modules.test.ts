import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { makeRepo, tempDir } from "./helpers/repo.js";
import { delegateWithoutSandbox } from "./helpers/run.js";
import { isTestFile } from "../src/verify/patterns.js";
import { holdTestModules, rustTestLayout } from "../src/verify/rust-test-modules.js";
import { whatItDid } from "../src/verify/edit-words.js";

const CODE = `pub fn add(a: i32, b: i32) -> i32 {
    a - b
}
`;
const FIXED = CODE.replace("a - b", "a + b");
const TESTS = `#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(1, 2), 3);
    }

    #[test]
    fn adds_zero() {
        assert_eq!(add(0, 2), 2);
    }
}
`;
const BASE = `${CODE}\n${TESTS}`;

const testModules = (text: string) =>
  rustTestLayout(text)
    ?.modules.filter((module) => module.test)
    .map((module) => ({ path: module.path, text: text.slice(module.start, module.end) }));

describe("a Rust file's inline test modules, found by brace matching", () => {
  test("a #[cfg(test)] module is found with its attributes, from the attribute to its closing brace", () => {
    expect(testModules(BASE)).toEqual([{ path: "tests", text: TESTS.trimEnd() }]);
  });

  test("braces in strings, raw strings, chars, byte strings and comments do not end the module", () => {
    const tricky = `#[cfg(test)]
mod tests {
    // a } in a line comment
    /* a } in a /* nested } */ block comment */
    #[test]
    fn braces() {
        let s = "}\\"}";
        let r = r#"}"# ;
        let r2 = r##"a "# } still inside"##;
        let b = b"}";
        let c = '}';
        let q = '\\'';
        let l: &'static str = "{";
        assert_eq!(s.len() + r.len() + r2.len() + b.len() + c.len_utf8() + q.len_utf8() + l.len(), 0);
    }
}`;
    const text = `${CODE}\n${tricky}\nfn after() {}\n`;
    expect(testModules(text)).toEqual([{ path: "tests", text: tricky }]);
  });

  test("a test module inside another module is found by its path; modules inside a test module are part of it", () => {
    const text = `mod outer {
    pub fn f() {}
    #[cfg(all(test, unix))]
    mod tests {
        mod helpers { pub fn h() {} }
        #[test]
        fn t() { helpers::h(); super::f(); }
    }
}
#[cfg(not(test))]
mod real {}
`;
    expect(testModules(text)?.map((module) => module.path)).toEqual(["outer::tests"]);
    expect(rustTestLayout(text)?.modules.map((module) => module.path)).toEqual(["outer", "outer::tests", "real"]);
  });

  test("#[cfg(test)] on a `mod tests;` declaration names a file of tests; src/tests.rs and src/tests/mod.rs are test files", () => {
    const layout = rustTestLayout(`${CODE}\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod unit_checks;\nmod other;\n`);
    expect(layout?.testModuleFiles).toEqual(["tests", "unit_checks"]);
    expect(layout?.modules).toEqual([]);
    expect(isTestFile("src/tests.rs")).toBe(true);
    expect(isTestFile("src/tests/mod.rs")).toBe(true);
    expect(isTestFile("src/a/test.rs")).toBe(true);
  });

  test("a file with an open string, an open comment or unmatched braces does not scan", () => {
    expect(rustTestLayout(`fn f() { let s = "}; }`)).toBeNull();
    expect(rustTestLayout(`fn f() {} /* open`)).toBeNull();
    expect(rustTestLayout(`mod tests { fn f() {}`)).toBeNull();
    expect(rustTestLayout(`fn f() {} }`)).toBeNull();
  });
});

describe("the patched file with the base's test modules, for the run held to the base", () => {
  test("the fix alone leaves the test modules unchanged: nothing is held", () => {
    expect(holdTestModules(BASE, `${FIXED}\n${TESTS}`)).toEqual({ kind: "unchanged" });
  });

  test("an #[ignore] in the test module: the fix is kept, the base's tests come back", () => {
    const patched = `${FIXED}\n${TESTS.replace("#[test]\n    fn adds()", "#[test]\n    #[ignore]\n    fn adds()")}`;
    expect(holdTestModules(BASE, patched)).toEqual({ kind: "held", text: `${FIXED}\n${TESTS}`, modules: ["tests"] });
  });

  test("a deleted test, a changed cfg on the module, or the module deleted: the base's module comes back", () => {
    const deleted = `${FIXED}\n${TESTS.replace(/\n {4}#\[test\]\n {4}fn adds\(\) \{\n.*?\n {4}\}\n/su, "\n")}`;
    expect(holdTestModules(BASE, deleted)).toMatchObject({ kind: "held", text: `${FIXED}\n${TESTS}` });
    const neverBuilt = `${FIXED}\n${TESTS.replace("#[cfg(test)]", "#[cfg(all(test, never))]")}`;
    expect(holdTestModules(BASE, neverBuilt)).toMatchObject({ kind: "held", text: `${FIXED}\n${TESTS}` });
    const gone = holdTestModules(BASE, FIXED);
    expect(gone.kind).toBe("held");
    expect(gone.kind === "held" && testModules(gone.text)).toEqual([{ path: "tests", text: TESTS.trimEnd() }]);
    expect(gone.kind === "held" && gone.text.startsWith(FIXED)).toBe(true);
  });

  test("a test module the patch adds is left out; a nested one the patch deletes comes back inside its parent", () => {
    const added = `${FIXED}\n${TESTS}\n#[cfg(test)]\nmod more_tests {\n    #[test]\n    fn exits() { std::process::exit(0) }\n}\n`;
    expect(holdTestModules(BASE, added)).toMatchObject({ kind: "held", text: `${FIXED}\n${TESTS}\n\n`, modules: ["more_tests"] });
    const nested = `mod outer {\n    pub fn f() -> i32 { 1 }\n    #[cfg(test)]\n    mod tests {\n        #[test]\n        fn t() { assert_eq!(super::f(), 2); }\n    }\n}\n`;
    const held = holdTestModules(nested, "mod outer {\n    pub fn f() -> i32 { 2 }\n}\n");
    expect(held.kind === "held" && testModules(held.text)?.map((module) => module.path)).toEqual(["outer::tests"]);
    expect(held.kind === "held" && held.text).toContain("fn f() -> i32 { 2 }");
  });

  test("test attributes changed outside the test modules cannot be isolated", () => {
    const topLevel = `${CODE}\n#[test]\nfn adds() { assert_eq!(add(1, 2), 3); }\n`;
    expect(holdTestModules(topLevel, topLevel.replace("#[test]", "#[test]\n#[ignore]"))).toMatchObject({ kind: "not_isolated" });
    expect(holdTestModules(topLevel, FIXED)).toMatchObject({ kind: "not_isolated" });
    expect(holdTestModules(BASE, `${FIXED}\n${TESTS.replace("#[cfg(test)]", "#[cfg(not(test))]")}`)).toMatchObject({
      kind: "not_isolated",
    });
    expect(holdTestModules(BASE, `${FIXED}\n${TESTS}\n#[cfg(test)]\nmod more;\n`)).toMatchObject({ kind: "not_isolated" });
    expect(holdTestModules(BASE, `${FIXED}\n${TESTS}\n/* open`)).toMatchObject({ kind: "not_isolated" });
  });

  test("a file without tests that does not scan is no test edit", () => {
    expect(holdTestModules("fn f() {}", "fn f() { /* open")).toEqual({ kind: "unchanged" });
  });
});

describe("what the patch did to a Rust test module, in a reviewer's words", () => {
  test("a deleted #[test] fn is named", () => {
    const input = { path: "src/lib.rs", reason: "test_file", why: "its inline tests", change: "modified" } as const;
    const removed = ["    #[test]", "    #[should_panic]", "    fn adds() {", "        assert_eq!(add(1, 2), 3);", "    }"];
    expect(whatItDid(input, { added: [], removed })).toBe("removes `adds` from src/lib.rs");
  });
});

describe("a run whose patch changes Rust tests the held run cannot isolate", () => {
  const TOP_LEVEL = `${CODE}\n#[test]\nfn adds() {\n    assert_eq!(add(1, 2), 3);\n}\n`;
  const run = async (testEdits: "base" | "allow") => {
    const script = join(tempDir(), "agent.sh");
    // The fix, and an #[ignore] on the test at the top level of the same file.
    writeFileSync(script, "perl -0pi -e 's/a - b/a + b/; s/#\\[test\\]\\n/#[test]\\n#[ignore]\\n/' src/lib.rs\n");
    const repo = await makeRepo({ "Cargo.toml": '[package]\nname = "adder"\nversion = "0.1.0"\n', "src/lib.rs": TOP_LEVEL });
    return (await delegateWithoutSandbox(repo, `sh ${script}`, { verify: ["true"], testEdits })).result;
  };

  test("is refused under --test-edits base (test_edit_not_isolated), before anything runs", async () => {
    const r = await run("base");
    expect(r.terminalReason, r.summary).toBe("policy_or_artifact_error");
    expect(r.detail).toBe("test_edit_not_isolated");
    expect(r.policy.violations).toContainEqual(expect.objectContaining({ path: "src/lib.rs", rule: "test_edit_not_isolated" }));
    expect(r.verification.ran).toBe(false);
  });

  test("is verified under --test-edits allow, with src/lib.rs named for review", async () => {
    const r = await run("allow");
    expect(r.terminalReason, r.summary).toBe("verified");
    expect(r.summary).toContain("src/lib.rs");
    expect(r.verification.testEdits?.changed).toContainEqual(
      expect.objectContaining({ path: "src/lib.rs", did: "skips a test (#[ignore]) in src/lib.rs" }),
    );
  });
});
