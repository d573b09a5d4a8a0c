import { describe, expect, test } from "vitest";
import { checkPathName, collisionKey, findCollisions, windowsNameWarnings } from "../src/patch/rules/path-names.js";
import { escapeControls } from "../src/vocabulary/display.js";

const rulesOf = (name: string | Buffer) => checkPathName(typeof name === "string" ? Buffer.from(name, "utf8") : name).map((f) => f.rule);

describe("checkPathName", () => {
  test.each([
    "math.js",
    "src/a b/c.ts",
    "café.txt",
    "-rf",
    "--output=x",
    ".gitignore",
    ".github/x.yml",
    "git",
    ".gitx/a",
    "a.git/b",
    "x~1",
    "日本語/ファイル.md",
  ])("accepts %s", (name) => {
    expect(rulesOf(name)).toEqual([]);
  });

  test.each(["../x", "a/../../b", "/etc/passwd", "a//b", "./a", "a/.", "a/", ""])("N1: %j is an unsafe path", (name) => {
    expect(rulesOf(name)).toContain("unsafe_path");
  });

  test.each([
    ".git",
    ".git/hooks/pre-commit",
    ".GIT/config",
    "sub/.Git/HEAD",
    "git~1/config",
    "GIT~1",
    ".git.",
    ".git. . ",
    ".git ",
    ".git::$INDEX_ALLOCATION/x",
    ".git:stream",
  ])("N2: %j reads as .git", (name) => {
    expect(rulesOf(name)).toContain("git_metadata_path");
  });

  test.each([".GIT", ".gIt", "Git~1", ".Git:x", ".GIT. ", "gIT~1", "..", "."])(
    "a single component is judged as a path is: %j is still refused",
    (name) => {
      expect(rulesOf(name).some((rule) => rule === "git_metadata_path" || rule === "unsafe_path")).toBe(true);
    },
  );

  test.each(["digit.ts", "legit", "gi", "xg", "a.g.i.t", "...", "~1", "g it"])("a single component: %j is accepted", (name) => {
    expect(rulesOf(name)).toEqual([]);
  });

  test.each(["200b", "200c", "200d", "200e", "200f", "202a", "202e", "2060", "206f", "feff", "00ad"])(
    "N3: U+%s is invisible, and .g<it>it reads as .git",
    (hex) => {
      const ch = String.fromCharCode(Number.parseInt(hex, 16));
      expect(rulesOf(`READ${ch}ME.md`)).toEqual(["invisible_character"]);
      expect(rulesOf(`.g${ch}it/hooks/x`)).toEqual(["invisible_character", "git_metadata_path"]);
    },
  );

  test.each(["\u0000", "\u0001", "\t", "\n", "\r", "\u001b", "\u007f", "\u0085", "\u009b"])("N6: %j is a control character", (ch) => {
    expect(rulesOf(`a${ch}b`)).toEqual(["control_character"]);
  });

  test("N6: the finding shows the name with its control characters escaped", () => {
    expect(checkPathName(Buffer.from("evil\u001b[31m.txt"))[0]).toEqual({
      path: "evil\\x1b[31m.txt",
      rule: "control_character",
      message: "the name contains a control character",
    });
  });

  test.each([
    [Buffer.from([0x63, 0x61, 0x66, 0xe9]), "caf\\xe9"],
    [Buffer.from([0xc3, 0x28]), "\\xc3("],
    [Buffer.from([0xed, 0xa0, 0x80]), "\\xed\\xa0\\x80"], // an encoded surrogate
    [Buffer.from([0xc0, 0xaf]), "\\xc0\\xaf"], // overlong "/"
  ])("N8: %s is not UTF-8 and shows as %s", (bytes, shown) => {
    expect(checkPathName(bytes)).toEqual([{ path: shown, rule: "non_utf8_name", message: "the name is not valid UTF-8" }]);
  });
});

describe("windowsNameWarnings", () => {
  test.each([
    "..\\..\\evil.txt",
    "CON",
    "con.txt",
    "src/aux.c",
    "NUL",
    "com1.log",
    "LPT9",
    "COM¹",
    "x:stream",
    "a<b",
    'q"uote',
    "p|pe",
    "what?",
    "star*",
    "trailing.",
    "trailing ",
    "dir./x",
  ])("N5: %j is flagged", (path) => {
    expect(windowsNameWarnings(path)).toEqual([
      { path, rule: "windows_unsafe_name", message: "this name is unsafe or unusable on Windows" },
    ]);
  });

  test.each(["console.log", "auxiliary.c", "com.txt", "lpt.md", ".env", "a.b.c", "src/x"])("N5: %j is fine", (path) => {
    expect(windowsNameWarnings(path)).toEqual([]);
  });
});

describe("escapeControls", () => {
  test("C0 and C1 controls become \\xNN", () => {
    expect(escapeControls("a\u001b[2Jb\nc\u009bd\u007f")).toBe("a\\x1b[2Jb\\x0ac\\x9bd\\x7f");
  });

  test("invisible and bidi-control characters become \\uNNNN", () => {
    expect(escapeControls(".g\u200cit")).toBe(".g\\u200cit");
    expect(escapeControls("evil\u202etxt.js")).toBe("evil\\u202etxt.js");
    expect(escapeControls("\ufeffbom")).toBe("\\ufeffbom");
  });

  test("printable text, accents and non-Latin scripts stay as they are", () => {
    expect(escapeControls("café/日本語 file-1.txt")).toBe("café/日本語 file-1.txt");
  });
});

describe("collisions (N4)", () => {
  test("collisionKey folds case and Unicode normalization", () => {
    expect(collisionKey("README.md")).toBe(collisionKey("readme.md"));
    expect(collisionKey("cafe\u0301.txt")).toBe(collisionKey("caf\u00e9.txt"));
    expect(collisionKey("\u212a")).toBe(collisionKey("k")); // KELVIN SIGN
    expect(collisionKey("a.md")).not.toBe(collisionKey("b.md"));
  });

  test("an added file colliding with an existing one is reported, naming the other", () => {
    expect(findCollisions(["README.md"], ["README.md", "readme.md", "x.js"])).toEqual([
      { path: "README.md", rule: "case_collision", message: "collides with readme.md after case folding or Unicode normalization" },
    ]);
  });

  test("two added files colliding with each other are both reported", () => {
    const found = findCollisions(["A.txt", "a.txt"], ["A.txt", "a.txt"]);
    expect(found.map((f) => f.path)).toEqual(["A.txt", "a.txt"]);
  });

  test("a directory prefix collides: Src/new.js with src/old.js", () => {
    expect(findCollisions(["Src/new.js"], ["Src/new.js", "src/old.js"])[0]).toMatchObject({
      path: "Src/new.js",
      message: expect.stringContaining("src"),
    });
  });

  test("a collision below a shared directory is found, and paths that part ways above it are not", () => {
    const tree = ["lib/Util/new.js", "lib/util/old.js", "lib/other/Util.js", "docs/lib/util/x.md"];
    expect(findCollisions(["lib/Util/new.js"], tree)).toEqual([
      { path: "lib/Util/new.js", rule: "case_collision", message: "collides with lib/util after case folding or Unicode normalization" },
    ]);
    expect(findCollisions(["lib/Util/new.js"], ["lib/Util/new.js", "lib/other/Util.js", "docs/lib/util/x.md"])).toEqual([]);
  });

  test("NFD and NFC spellings of one name collide", () => {
    expect(findCollisions(["cafe\u0301.txt"], ["cafe\u0301.txt", "caf\u00e9.txt"])).toHaveLength(1);
  });

  test("distinct names, and a renamed-by-case file that replaced its old name, do not collide", () => {
    expect(findCollisions(["b.js", "src/c.js"], ["a.js", "b.js", "src/c.js", "src/d.js"])).toEqual([]);
    expect(findCollisions(["readme.md"], ["readme.md"])).toEqual([]);
  });
});
