import { existsSync } from "node:fs";
import { join } from "node:path";
import { quote } from "shell-quote";
import { describe, expect, test } from "vitest";
import { commandRunArgs, expectUsageError, runCli } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, makeHarness } from "./helpers/run.js";
import { resolveOptions } from "../src/run/options.js";
import { riskWarnings } from "../src/patch/rules/risk-paths.js";
import { simpleCommands } from "../src/verify/command-words.js";
import { type InputReason, MAX_LISTED_INPUTS, findVerificationInputs, inputFor, inputsRecord, mentionOf } from "../src/verify/inputs.js";
import { holdManifest, manifestChanges } from "../src/verify/manifest.js";
import { whatItDid } from "../src/verify/edit-words.js";

/**
 * Issues 12 and 26: which files decide how verification runs. An agent that edits one of them can write its own
 * verdict (a `check.sh` rewritten to `exit 0`, an `.npmrc` whose script-shell is /bin/true), so each is found from
 * the commands, the base tree and the kind of file alone, whatever the commands hold, without ever throwing; and a
 * file a command only mentions (a lint target, grep's data) is the task's to change.
 */

/** The inputs of a base tree holding `files` (path → content) for `commands`. */
function inputsOf(commands: readonly string[], files: Record<string, string>, protect: readonly string[] = []) {
  return findVerificationInputs({
    commands,
    basePaths: Object.keys(files),
    readBase: (path) => (Object.hasOwn(files, path) ? Buffer.from(files[path]!) : null),
    protect,
  });
}

/** path → reason, for the inputs of `commands` on `files`. */
function reasons(commands: readonly string[], files: Record<string, string>, protect: readonly string[] = []): Record<string, InputReason> {
  return Object.fromEntries(inputsOf(commands, files, protect).files.map((input) => [input.path, input.reason]));
}

const pkg = (scripts: Record<string, string>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ name: "p", scripts, ...extra }, null, 2);

describe("what a command executes or loads is an input; what it only mentions is not", () => {
  test.each([
    ["sh check.sh", "check.sh"],
    ["./scripts/test.sh", "scripts/test.sh"],
    ["node test/run.js", "test/run.js"],
    ["pytest tests/x.py", "tests/x.py"],
    ["pytest tests/x.py::test_add -q", "tests/x.py"],
    ["CHECK=strict sh check.sh", "check.sh"],
    ["env -u HOME CI=1 timeout 60 sh check.sh", "check.sh"],
    ["npx vitest run --config=ci/vitest.ci.ts", "ci/vitest.ci.ts"],
    ["npx vitest run --config ci/vitest.ci.ts", "ci/vitest.ci.ts"],
    ["true && sh check.sh || exit 1; echo done", "check.sh"],
    ["sh < check.sh", "check.sh"],
    ["(sh check.sh)", "check.sh"],
    ["set -e\nsh check.sh", "check.sh"],
    ["bash -c 'sh check.sh'", "check.sh"],
    ["bash -ec \"sh -c 'sh check.sh'\"", "check.sh"],
    ["eval 'sh check.sh'", "check.sh"],
    ["sh ./scripts/../check.sh", "check.sh"],
    ["NODE_OPTIONS='--require ./src/a.js' npm test", "src/a.js"],
    ["mocha -r src/a.js test", "src/a.js"],
    ["node --import ./src/a.js test/run.js", "src/a.js"],
    ["nyc --nycrc-path ci/vitest.ci.ts mocha", "ci/vitest.ci.ts"],
    ["python3 -m pytest -c ci/vitest.ci.ts", "ci/vitest.ci.ts"],
  ])("`%s` makes %s a verification input, named by the command", (command, path) => {
    const files = {
      "check.sh": "exit 1",
      "scripts/test.sh": "exit 1",
      "test/run.js": "",
      "tests/x.py": "",
      "ci/vitest.ci.ts": "",
      "data/input.txt": "",
      "src/a.js": "",
      "src/b.js": "",
    };
    expect(inputsOf([command], files).files.find((input) => input.path === path)).toMatchObject({ reason: "named_by_command" });
    expect(reasons([command], files)["src/b.js"]).toBeUndefined();
    expect(reasons([command], files)["data/input.txt"]).toBeUndefined();
  });

  test.each([
    ["grep -q fixed a.txt", "a.txt", "an argument of grep"],
    ["cat a.txt | sh check.sh", "a.txt", "an argument of cat"],
    ["sh check.sh < a.txt", "a.txt", ""],
    ["eslint *.js test/*.js", "splat.js", "an argument of eslint"],
    ["babel *.js -d ./dist", "splat.js", "an argument of babel"],
    ["tsc --noEmit splat.js", "splat.js", "an argument of tsc"],
    ["prettier --check .", "splat.js", ""],
    ["node check.js splat.js", "splat.js", "an argument of check.js"],
    ["sh check.sh a.txt", "a.txt", "an argument of check.sh"],
  ])("`%s` only mentions %s: not an input, and the report can say why", (command, path, why) => {
    const files = { "a.txt": "", "splat.js": "", "check.sh": "", "check.js": "", "test/splat.test.js": "" };
    const inputs = inputsOf([command], files);
    expect(inputs.byPath.get(path)).toBeUndefined();
    expect(inputFor(inputs, path, "modified")).toBeNull();
    if (why) expect(mentionOf(inputs, path)).toContain(why);
  });

  test("the logform case: lint and build globs over the sources name no source file as an input; the tests mocha runs are", () => {
    const files = {
      "package.json": pkg({
        lint: "eslint *.js test/*.js --resolve-plugins-relative-to ./node_modules/@dabh/eslint-config-populist",
        pretest: "npm run lint && npm run build",
        test: "nyc mocha test/*.js",
        build: "rimraf dist && babel *.js -d ./dist",
      }),
      "splat.js": "",
      "index.js": "",
      "test/splat.test.js": "",
      ".babelrc": "{}",
    };
    expect(reasons(["npm test"], files)).toEqual({
      "package.json": "manifest",
      "test/splat.test.js": "named_by_command",
      ".babelrc": "configuration",
    });
    expect(mentionOf(inputsOf(["npm test"], files), "splat.js")).toMatch(/an argument of (eslint|babel) \(script "(lint|build)"\)/);
  });

  test("a shell script the commands run is read in turn: what it sources or runs is an input too, transitively", () => {
    const files = {
      "check.sh": ". ./lib/env.sh\nbash scripts/run.sh\ngrep -q ok data.txt",
      "lib/env.sh": "export X=1",
      "scripts/run.sh": "#!/bin/sh\nsource ./scripts/more.sh\nnode test/all.js",
      "scripts/more.sh": "",
      "test/all.js": "",
      "data.txt": "",
      ci: "#!/usr/bin/env bash\nsh check.sh",
    };
    expect(reasons(["./ci"], files)).toEqual({
      ci: "named_by_command",
      "check.sh": "named_by_command",
      "lib/env.sh": "named_by_command",
      "scripts/run.sh": "named_by_command",
      "scripts/more.sh": "named_by_command",
      "test/all.js": "named_by_command",
    });
  });

  test("a script not yet read is wanted: the caller reads it from the base and finds again", () => {
    const inputs = findVerificationInputs({
      commands: ["sh check.sh"],
      basePaths: ["check.sh", "lib.sh"],
      readBase: () => null,
      protect: [],
    });
    expect(inputs.wanted).toEqual(["check.sh"]);
  });

  test("a word after `cd dir &&` is read from dir, and a subshell's cd ends with the subshell", () => {
    const files = { "check.sh": "", "sub/check.sh": "", "sub/a.sh": "", "b.sh": "", "sub/b.sh": "" };
    expect(reasons(["cd sub && sh check.sh"], files)).toEqual({ "sub/check.sh": "named_by_command" });
    expect(reasons(["(cd sub && sh a.sh); sh b.sh"], files)).toEqual({ "sub/a.sh": "named_by_command", "b.sh": "named_by_command" });
    expect(reasons(["cd sub/deeper/.. && sh ../check.sh"], files)).toEqual({ "check.sh": "named_by_command" });
  });

  test("a `cd` handoff cannot follow ($DIR, out of the repository) reads later words from the top rather than dropping them", () => {
    const files = { "check.sh": "" };
    expect(reasons(['cd "$DIR" && sh check.sh'], files)).toEqual({ "check.sh": "named_by_command" });
    expect(reasons(["cd .. && sh check.sh"], files)).toEqual({ "check.sh": "named_by_command" });
  });

  test("`make -C src` reads src/Makefile; a runner that filters by name (pytest, jest) given a directory holds none of its files", () => {
    const files = { Makefile: "", "src/Makefile": "", "src/a.c": "", "src/b.c": "", "lib/x.py": "" };
    expect(reasons(["make -C src"], files)).toEqual({ "src/Makefile": "named_by_command", Makefile: "configuration" });
    expect(reasons(["pytest lib", "ls src/"], files)).toEqual({ Makefile: "configuration", "src/Makefile": "configuration" });
  });

  test("`make -f X` reads X", () => {
    const files = { "ci.mk": "" };
    expect(reasons(["make -f ci.mk test"], files)).toEqual({ "ci.mk": "named_by_command" });
    expect(reasons(["make --file=ci.mk"], files)).toEqual({ "ci.mk": "named_by_command" });
  });

  test("a word that leaves the repository (`../../etc/passwd`, an absolute path) is not an input, and nothing throws", () => {
    const files = { "etc/passwd": "", "a/b/x": "" };
    expect(reasons(["sh ../../etc/passwd /etc/passwd ~/etc/passwd"], files)).toEqual({});
    expect(reasons(["cd a/b && sh ../../etc/passwd"], files)).toEqual({ "etc/passwd": "named_by_command" });
  });

  test("a command shell-quote cannot read (`${`, an unterminated quote) yields what could be read, without throwing", () => {
    const files = { "check.sh": "", "other.sh": "" };
    expect(reasons(["echo ${ ; sh check.sh"], files)).toEqual({ "check.sh": "named_by_command" });
    expect(reasons(['sh other.sh "unterminated'], files)).toEqual({ "other.sh": "named_by_command" });
    expect(() => inputsOf(["$(", "((((", ")))", "'", "\\", "${{{", "<", ">", "&&", "|"], files)).not.toThrow();
  });

  test("a 10,000-word command with 10,000 globs, over 50,000 base files, is read whole and matches only 16 globs", () => {
    const files: Record<string, string> = { "check.sh": "" };
    for (let i = 0; i < 50_000; i++) files[`src/m${i}.js`] = "";
    const words = Array.from({ length: 10_000 }, (_, i) => (i === 9_999 ? "check.sh" : `word${i}`));
    expect(reasons([`sh ${words.at(-1)} ${words.slice(0, -1).join(" ")}`], files)).toEqual({ "check.sh": "named_by_command" });
    const globs = Array.from({ length: 10_000 }, (_, i) => `src/m${i}.j*`);
    expect(inputsOf([`mocha ${globs.join(" ")}`], files).files).toHaveLength(16);
  });

  test("a chain of 16,000 `cd a &&` (128 KB) is followed only as deep as a path can be, then read from the top", () => {
    const files = { "check.sh": "", [`${"a/".repeat(100)}check.sh`]: "" };
    expect(reasons([`${"cd a && ".repeat(100)}sh check.sh`], files)).toEqual({ [`${"a/".repeat(100)}check.sh`]: "named_by_command" });
    expect(reasons([`${"cd a && ".repeat(16_000)}sh check.sh`], files)).toEqual({ "check.sh": "named_by_command" });
  });

  test("`sh -c` strings nested 12 deep are read 8 deep, and `eval` nested 50 deep is not followed without end", () => {
    const files = { "shallow.sh": "", "deep.sh": "" };
    const nested = (depth: number, inner: string) =>
      Array.from({ length: depth }).reduce<string>((command) => `sh -c ${quote([command])}`, inner);
    expect(reasons([nested(3, "sh shallow.sh")], files)).toEqual({ "shallow.sh": "named_by_command" });
    expect(reasons([nested(12, "sh deep.sh")], files)).toEqual({});
    expect(simpleCommands(`${"eval ".repeat(50)}sh deep.sh`)).toHaveLength(9);
  });

  test("a test runner's glob matches base files from its directory, never past the top", () => {
    const files = { "checks/a.py": "", "checks/b.py": "", "checks/sub/c.py": "", "other/d.py": "" };
    expect(Object.keys(reasons(["mocha checks/*.py"], files)).sort()).toEqual(["checks/a.py", "checks/b.py"]);
    expect(reasons(["cd other && tap ../../*.py"], files)).toEqual({});
    expect(Object.keys(reasons(["cd other && tap ../*/*.py"], files)).sort()).toEqual(["checks/a.py", "checks/b.py", "other/d.py"]);
  });
});

describe("package.json scripts a command runs", () => {
  const files = {
    "package.json": pkg({ test: "node scripts/check.js && npm run lint", lint: "sh scripts/lint.sh", build: "tsc", posttest: "echo done" }),
    "scripts/check.js": "",
    "scripts/lint.sh": "",
    "tools/gen.ts": "",
  };

  test("`npm test` reads the test script, its pre/post scripts, the scripts it runs, and the files they execute", () => {
    const inputs = inputsOf(["npm test"], files);
    expect(inputs.scripts).toEqual(["lint", "postlint", "posttest", "prelint", "pretest", "test"]);
    expect(reasons(["npm test"], files)).toEqual({
      "package.json": "manifest",
      "scripts/check.js": "named_by_command",
      "scripts/lint.sh": "named_by_command",
    });
    expect(inputs.files.find((input) => input.path === "scripts/lint.sh")!.why).toBe('run by `sh` (script "lint")');
    expect(inputs.files.find((input) => input.path === "package.json")!.why).toContain('run by "npm test"');
  });

  test.each([
    ["npm run lint", "lint"],
    ["npm run-script lint -- --fix", "lint"],
    ["npm --silent run lint", "lint"],
    ["yarn lint", "lint"],
    ["yarn run lint", "lint"],
    ["pnpm lint", "lint"],
    ["pnpm run lint", "lint"],
    ["pnpm test", "test"],
    ["yarn test", "test"],
    ["npm t", "test"],
    ["bun run lint", "lint"],
  ])("`%s` runs the script %s, with its pre and post scripts", (command, script) => {
    const inputs = inputsOf([command], files);
    expect(inputs.scripts).toEqual(expect.arrayContaining([script, `pre${script}`, `post${script}`]));
    expect(reasons([command], files)["scripts/lint.sh"]).toBe("named_by_command");
  });

  test("`npm ci` in setup runs the root's install and prepare scripts", () => {
    expect(inputsOf(["npm ci"], files).scripts).toEqual(expect.arrayContaining(["prepare", "postinstall", "preinstall"]));
  });

  test("`npx X`, `bun test` and a bare `yarn X` where X is no script run no script; what npx runs is read as a command", () => {
    expect(inputsOf(["npx tsx tools/gen.ts", "bun test", "yarn nonexistent"], files)).toMatchObject({ scripts: [] });
    expect(reasons(["npx tsx tools/gen.ts"], files)).toEqual({ "package.json": "manifest", "tools/gen.ts": "named_by_command" });
  });

  test('a script that runs itself ("test": "npm run test") or two that run each other end, each read once', () => {
    const cyclic = { "package.json": pkg({ test: "npm run test", a: "npm run b && sh a.sh", b: "npm run a" }), "a.sh": "" };
    expect(inputsOf(["npm test"], cyclic).scripts).toEqual(["posttest", "pretest", "test"]);
    expect(inputsOf(["npm run a"], cyclic).scripts).toEqual(["a", "b", "posta", "postb", "prea", "preb"]);
    expect(reasons(["npm run a"], cyclic)["a.sh"]).toBe("named_by_command");
  });

  test("npm-run-all patterns run every script they match", () => {
    const all = { "package.json": pkg({ "test:unit": "sh u.sh", "test:e2e": "sh e.sh", build: "tsc" }), "u.sh": "", "e.sh": "" };
    const expected = { "package.json": "manifest", "u.sh": "named_by_command", "e.sh": "named_by_command" };
    expect(reasons(["npm-run-all 'test:**'"], all)).toEqual(expected);
    expect(reasons(["npx run-s 'test:*'"], all)).toEqual(expected);
  });

  test("a package.json that is not valid JSON at the base: `npm test` still reads the test script's names, and nothing throws", () => {
    const broken = { "package.json": '{ "scripts": { "test": ', "check.sh": "" };
    expect(inputsOf(["npm test"], broken).scripts).toEqual(["posttest", "pretest", "test"]);
    expect(reasons(["npm test"], broken)).toEqual({ "package.json": "manifest" });
  });
});

describe("configuration held by kind, wherever it is and whatever names it", () => {
  test("dotfiles and dot-directories, *rc files, *.config.*, *.conf, the usual tool configs, manifests and test files at any depth", () => {
    const files = {
      ".npmrc": "",
      "packages/a/.taprc": "",
      ".mocharc.yml": "",
      ".env.test": "",
      ".config/tool.json": "",
      babelrc: "",
      "vitest.config.ts": "",
      "packages/a/jest.config.js": "",
      "nginx.conf": "",
      "tsconfig.build.json": "",
      "pytest.ini": "",
      "tox.ini": "",
      "setup.cfg": "",
      "tests/conftest.py": "",
      Makefile: "",
      "packages/a/package.json": "",
      "test/a.test.js": "",
      "src/b.spec.ts": "",
      "pkg/x_test.go": "",
      "src/index.ts": "",
      "src/crc.js": "",
      "README.md": "",
      ".changeset/brave-fox.md": "",
      ".gitignore": "",
      "sub/.gitattributes": "",
    };
    expect(reasons([], files)).toEqual({
      ".npmrc": "configuration",
      "packages/a/.taprc": "configuration",
      ".mocharc.yml": "configuration",
      ".env.test": "configuration",
      ".config/tool.json": "configuration",
      babelrc: "configuration",
      "vitest.config.ts": "configuration",
      "packages/a/jest.config.js": "configuration",
      "nginx.conf": "configuration",
      "tsconfig.build.json": "configuration",
      "pytest.ini": "configuration",
      "tox.ini": "configuration",
      "setup.cfg": "configuration",
      "tests/conftest.py": "configuration",
      Makefile: "configuration",
      "packages/a/package.json": "manifest",
      "test/a.test.js": "test_file",
      "src/b.spec.ts": "test_file",
      "pkg/x_test.go": "test_file",
    });
    expect(riskWarnings("packages/a/jest.config.js", "modified").map((finding) => finding.rule)).toEqual(["verification_config"]);
  });

  test("Cargo's manifest and a build script, which decide which Rust tests build and run, are held; a Rust source is not", () => {
    const inputs = inputsOf(["cargo test"], { "Cargo.toml": "", "crates/a/Cargo.toml": "", "src/lib.rs": "", "tests/lib.rs": "" });
    for (const path of ["Cargo.toml", "crates/a/Cargo.toml"])
      expect(inputFor(inputs, path, "modified"), path).toMatchObject({ reason: "configuration" });
    // `[lib] test = false` or `autotests = false` leaves the failing tests unbuilt; an added build.rs can set a cfg they read.
    expect(inputFor(inputs, "build.rs", "added")).toMatchObject({ reason: "configuration" });
    expect(inputFor(inputs, "crates/a/build.rs", "added")).toMatchObject({ reason: "configuration" });
    expect(inputFor(inputs, "tests/lib.rs", "modified")).toMatchObject({ reason: "test_file" });
    expect(inputFor(inputs, "src/lib.rs", "modified")).toBeNull();
  });

  test("inputFor: an added configuration file, test file, package.json or node_modules file is one; an added source file is not", () => {
    const inputs = inputsOf(["npm test"], { "package.json": pkg({ test: "mocha" }), "src/a.js": "" });
    for (const path of [".npmrc", ".taprc", "test/.mocharc.yml", "vitest.config.mts", "lib/package.json", "node_modules/helper/index.js"])
      expect(inputFor(inputs, path, "added"), path).not.toBeNull();
    expect(inputFor(inputs, "test/new.test.js", "added")).toMatchObject({ reason: "test_file", why: expect.stringContaining("adds") });
    expect(inputFor(inputs, "src/b.js", "added")).toBeNull();
    expect(inputFor(inputs, "hook.cjs", "added")).toBeNull();
  });

  test("--protect globs make the base files they match inputs; the first reason in order wins", () => {
    const files = { "golden/a.json": "", "golden/more/x.json": "", "test/a.test.js": "", "src/a.js": "", "__mocks__/dep.js": "" };
    expect(reasons([], files, ["golden/", "test/*.js"])).toEqual({
      "golden/a.json": "protected",
      "golden/more/x.json": "protected",
      "test/a.test.js": "test_file",
      "__mocks__/dep.js": "test_file",
    });
    const inputs = inputsOf(["sh check.sh"], { "check.sh": "" }, ["golden/"]);
    expect(inputFor(inputs, "golden/out.txt", "added")).toMatchObject({ reason: "protected" });
    expect(inputFor(inputs, "check.sh", "added")).toMatchObject({ reason: "named_by_command" });
  });

  test("--allow-config names a file the task must change: never an input, whatever its kind", () => {
    const inputs = findVerificationInputs({
      commands: ["sh check.sh"],
      basePaths: ["check.sh", ".npmrc", "test/a.test.js"],
      readBase: () => Buffer.from(""),
      protect: [],
      allowConfig: [".npmrc", "check.sh"],
    });
    expect(inputFor(inputs, ".npmrc", "modified")).toBeNull();
    expect(inputFor(inputs, "check.sh", "modified")).toBeNull();
    expect(inputFor(inputs, "test/a.test.js", "modified")).toMatchObject({ reason: "test_file" });
  });

  test("a repository with 50,000 test files lists 1000 of them in request.json and counts the rest", () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 50_000; i++) files[`test/t${i}.test.js`] = "";
    const record = inputsRecord(inputsOf(["npm test"], files, ["x/"]));
    expect(record).toMatchObject({ count: 50_000, omitted: 50_000 - MAX_LISTED_INPUTS, protect: ["x/"] });
    expect(record.files).toHaveLength(MAX_LISTED_INPUTS);
  });
});

describe("package.json held to the base whole, but its dependencies", () => {
  const base = Buffer.from(
    `${JSON.stringify({ name: "p", scripts: { test: "node test.js" }, jest: { bail: true }, dependencies: { a: "1.0.0" } }, null, 2)}\n`,
  );

  test("holding takes the base's fields and the patch's dependency sections (added, changed or removed)", () => {
    const patched = Buffer.from(
      `${JSON.stringify({ name: "helper", exports: "./fake.js", scripts: { test: "echo ok" }, devDependencies: { b: "2.0.0" }, mocha: {} }, null, 2)}\n`,
    );
    const held = JSON.parse(holdManifest(base, patched).toString("utf8"));
    expect(held).toEqual({ name: "p", scripts: { test: "node test.js" }, jest: { bail: true }, devDependencies: { b: "2.0.0" } });
  });

  test.each([
    ["two spaces", 2],
    ["four spaces", 4],
    ["a tab", "\t"],
  ])("holding keeps the base file's indentation (%s) and final newline", (_name, indent) => {
    const indented = Buffer.from(`${JSON.stringify({ name: "p", dependencies: { a: "1" } }, null, indent)}\n`);
    const patched = Buffer.from(JSON.stringify({ name: "q", dependencies: { b: "2" } }));
    expect(holdManifest(indented, patched).toString("utf8")).toBe(
      `${JSON.stringify({ name: "p", dependencies: { b: "2" } }, null, indent)}\n`,
    );
  });

  test("holding keeps CRLF line endings as CRLF; a patch whose dependencies did not change is held as the base's bytes", () => {
    const crlf = Buffer.from(`${JSON.stringify({ name: "p" }, null, 2).replace(/\n/g, "\r\n")}\r\n`);
    const held = holdManifest(crlf, Buffer.from(JSON.stringify({ name: "p", dependencies: { b: "1" } }))).toString("utf8");
    expect(held.endsWith("}\r\n")).toBe(true);
    expect(held.replace(/\r\n/g, "")).not.toContain("\n");
    expect(holdManifest(base, Buffer.from(JSON.stringify({ name: "x", dependencies: { a: "1.0.0" } })))).toBe(base);
  });

  test("manifestChanges names every field but the dependencies that changed, scripts by name; invalid JSON is one change", () => {
    const patched = Buffer.from(
      JSON.stringify({
        name: "p",
        scripts: { test: "node test.js", pretest: "rm test.js" },
        imports: { "#x": "./fake.js" },
        dependencies: { z: "1" },
      }),
    );
    expect(manifestChanges(base, patched)).toEqual(["scripts.pretest", "imports", "jest"]);
    expect(
      manifestChanges(
        base,
        Buffer.from(JSON.stringify({ jest: { bail: true }, dependencies: {}, scripts: { test: "node test.js" }, name: "p" })),
      ),
    ).toEqual([]);
    expect(manifestChanges(base, Buffer.from("{ not json"))).toEqual(["(not JSON)"]);
    expect(holdManifest(base, Buffer.from("{ not json"))).toBe(base);
  });

  test("a dependency the patch points at the repository itself (file:, link:, ./) is held like any field: the base's spec, or none", () => {
    const patched = Buffer.from(
      JSON.stringify({
        name: "p",
        scripts: { test: "node test.js" },
        jest: { bail: true },
        dependencies: { a: "file:./fake-a", b: "2.0.0" },
      }),
    );
    expect(manifestChanges(base, patched)).toEqual(["dependencies.a"]);
    expect(JSON.parse(holdManifest(base, patched).toString("utf8")).dependencies).toEqual({ a: "1.0.0", b: "2.0.0" });
    const added = Buffer.from(
      JSON.stringify({ name: "p", scripts: { test: "node test.js" }, jest: { bail: true }, devDependencies: { c: "link:../c" } }),
    );
    expect(manifestChanges(base, added)).toEqual(["devDependencies.c"]);
    expect(JSON.parse(holdManifest(base, added).toString("utf8")).devDependencies).toEqual({});
  });

  test('a "__proto__" key in the patch\'s dependencies stays a key and never becomes the prototype', () => {
    const patched = Buffer.from('{"dependencies": {"__proto__": {"polluted": 1}}}');
    const held = holdManifest(base, patched).toString("utf8");
    expect(JSON.parse(held).dependencies).toHaveProperty("__proto__", { polluted: 1 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("--protect on the command line and in .handoff.json", () => {
  test("a --protect glob that cannot compile is a one-line usage error, exit 2, and nothing is created", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const root = tempDir("handoff-protect");
    const runsDir = join(root, "runs");
    const workspacesDir = join(root, "ws");
    const options = ["--yes", "--runs-dir", runsDir, "--workspace-dir", workspacesDir, "--verify", "npm test", "--protect", "[z-a]"];
    const outcome = await runCli(commandRunArgs(repo, agent("fixes-add.sh"), options, "fix"));
    expectUsageError(outcome, /--protect '\[z-a\]' is not a valid pattern/);
    expect(existsSync(runsDir)).toBe(false);
    expect(existsSync(workspacesDir)).toBe(false);
  });

  test("protect comes from .handoff.json unless given on the command line, and is checked like --allow", () => {
    const harness = makeHarness();
    const options = { repo: tempDir(), task: "fix", noVerify: true, ...harness };
    expect(resolveOptions(options, { protect: ["fixtures/"] }, tempDir()).protect).toEqual(["fixtures/"]);
    expect(resolveOptions({ ...options, protect: ["golden/"] }, { protect: ["fixtures/"] }, tempDir()).protect).toEqual(["golden/"]);
    expect(resolveOptions(options, {}, tempDir()).protect).toEqual([]);
    expect(() => resolveOptions(options, { protect: ["[z-a]"] }, tempDir())).toThrow(/^protect '\[z-a\]' is not a valid pattern/);
  });
});

describe("what the patch did, in a reviewer's words", () => {
  const lines = (added: string[], removed: string[] = []) => ({ added, removed });
  test.each([
    [
      { path: "test/splat.js", reason: "test_file", change: "modified" },
      lines(["  it.skip('splat %c', () => {"]),
      "skips `splat %c` (it.skip) in test/splat.js",
    ],
    [
      { path: "tests/main.js", reason: "named_by_command", change: "modified" },
      lines(["t.skip('expands', (t) => {"]),
      "skips `expands` (t.skip) in tests/main.js",
    ],
    [{ path: "test/a.py", reason: "test_file", change: "modified" }, lines([], ["def test_add():"]), "removes `test_add` from test/a.py"],
    [{ path: "test/a.test.js", reason: "test_file", change: "deleted" }, null, "deletes test/a.test.js"],
    [
      { path: ".npmrc", reason: "configuration", change: "added" },
      lines(["script-shell=/bin/true"]),
      "adds .npmrc, which makes npm run scripts with /bin/true",
    ],
  ] as const)("%j", (input, fileLines, words) => {
    expect(whatItDid({ ...input, why: "x" }, fileLines)).toBe(words);
  });
});
