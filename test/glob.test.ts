import { describe, expect, test } from "vitest";
import { globToRegExp, matchesAnyGlob } from "../src/patch/rules/glob.js";

const matches = (pattern: string, path: string) => globToRegExp(pattern).test(path);

describe("globToRegExp", () => {
  test.each([
    // a pattern without `/` matches the last segment at any depth
    ["*.md", "README.md", true],
    ["*.md", "docs/a/b.md", true],
    ["*.md", "README.mdx", false],
    ["math.js", "lib/math.js", true],
    ["docs", "x/docs", true],
    ["docs", "docs/a.md", false],
    ["**/node_modules/**", "a/node_modules/b/c.js", true],
    ["**/node_modules/**", "node_modules/x", true],
    // `*` and `?` stay inside one segment
    ["src/*.js", "src/a.js", true],
    ["src/*.js", "src/sub/a.js", false],
    ["src/?.js", "src/a.js", true],
    ["src/?.js", "src/ab.js", false],
    ["a?b", "a/b", false],
    // a pattern with `/` is anchored at the root
    ["src/*.js", "lib/src/a.js", false],
    ["docs/a.md", "x/docs/a.md", false],
    // `**` spans segments, including none
    ["src/**", "src/a/b/c.js", true],
    ["**/*.md", "README.md", true],
    ["**/*.md", "a/b/c.md", true],
    ["a/**/b", "a/b", true],
    ["a/**/b", "a/x/y/b", true],
    ["a/**/b", "a/xb", false],
    // a trailing `/` matches everything below that directory
    ["docs/", "docs/notes.md", true],
    ["docs/", "docs/a/b/c", true],
    ["docs/", "docs", false],
    ["docs/", "mydocs/x", false],
    ["docs/", "sub/docs/x", false],
    // `./` and a leading `/` anchor at the repository root
    ["./src/", "src/a.js", true],
    ["/.env", ".env", true],
    ["/.env", "config/.env", false],
    ["/secrets/", "secrets/key.pem", true],
    ["/secrets/", "app/secrets/key.pem", false],
    // braces alternate, and nest
    ["*.{js,ts}", "src/a.ts", true],
    ["*.{js,ts}", "src/a.rs", false],
    ["{src,lib}/**", "lib/x/y.js", true],
    ["a.{b,{c,d}}", "a.d", true],
    // a `{` without its `}` is literal
    ["x{a,b", "x{a,b", true],
    ["x{a,b", "xa", false],
    // classes, negated with ! or ^, never match `/`
    ["[a-c].js", "b.js", true],
    ["[a-c].js", "d.js", false],
    ["[!a-c].js", "d.js", true],
    ["[!a-c].js", "a.js", false],
    ["[^a-c].js", "d.js", true],
    ["docs[!_]*.md", "docs/a.md", false],
    ["docs[!_]*.md", "docsX.md", true],
    ["a[/]b", "a/b", false],
    // regex metacharacters are literal
    ["(x).js", "(x).js", true],
    ["a+b", "a+b", true],
    ["a+b", "aab", false],
    ["a.b", "axb", false],
    ["$HOME", "$HOME", true],
    ["a]b", "a]b", true],
    ["a[b", "a[b", true],
    ["a|b", "a", false],
  ])("%s ~ %s: %s", (pattern, path, expected) => {
    expect(matches(pattern, path)).toBe(expected);
  });

  test("dotfiles are matched by * (no hidden-file exception)", () => {
    expect(matches("*", ".env")).toBe(true);
    expect(matches("*.yml", ".github/workflows/.hidden.yml")).toBe(true);
  });

  test("an unmatched `]`, `}` or `(` does not throw", () => {
    for (const pattern of ["a]", "}", "a(", ")", "x{", "[", "\\"]) expect(() => globToRegExp(pattern), pattern).not.toThrow();
  });
});

describe("matchesAnyGlob", () => {
  test("any one pattern is enough; no pattern matches nothing", () => {
    const patterns = ["docs/", "*.md"].map(globToRegExp);
    expect(matchesAnyGlob("docs/x.txt", patterns)).toBe(true);
    expect(matchesAnyGlob("a/b.md", patterns)).toBe(true);
    expect(matchesAnyGlob("src/x.ts", patterns)).toBe(false);
    expect(matchesAnyGlob("anything", [])).toBe(false);
  });
});
