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
import { type InputReason, MAX_LISTED_INPUTS, findVerificationInputs, inputFor, inputsRecord } from "../src/verify/inputs.js";
import { holdPackageJson, runnerKeysChanged, scriptsChanged } from "../src/verify/package-json.js";

/**
 * Issue 12 item 1: which files of the base commit decide what verification runs. An agent that edits one of them
 * can write its own verdict (a `check.sh` rewritten to `exit 0`, a `test` script set to `echo ok`), so each has to
 * be found from the commands and the base tree alone, whatever the commands hold, without ever throwing.
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

describe("files a setup or verify command names", () => {
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
    ["cat data/input.txt | sh check.sh", "data/input.txt"],
    ["sh check.sh < data/input.txt", "data/input.txt"],
    ["(sh check.sh)", "check.sh"],
    ["set -e\nsh check.sh", "check.sh"],
    ["bash -c 'sh check.sh'", "check.sh"],
    ["bash -ec \"sh -c 'sh check.sh'\"", "check.sh"],
    ["eval 'sh check.sh'", "check.sh"],
    ["sh ./scripts/../check.sh", "check.sh"],
  ])("`%s` makes %s a verification input, named by the command", (command, path) => {
    const files = {
      "check.sh": "exit 1",
      "scripts/test.sh": "exit 1",
      "test/run.js": "",
      "tests/x.py": "",
      "ci/vitest.ci.ts": "",
      "data/input.txt": "",
      "src/a.js": "",
    };
    const inputs = inputsOf([command], files);
    expect(inputs.files.find((input) => input.path === path)).toMatchObject({
      reason: "named_by_command",
      why: expect.stringContaining("named by"),
    });
    expect(reasons([command], files)["src/a.js"]).toBeUndefined();
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

  test("a word naming a directory is not an input by itself: `make -C src` makes src/Makefile one, not all of src", () => {
    const files = { Makefile: "", "src/Makefile": "", "src/a.c": "", "src/b.c": "", "lib/x.py": "" };
    expect(reasons(["make -C src"], files)).toEqual({ "src/Makefile": "named_by_command" });
    expect(reasons(["pytest lib", "ls src/"], files)).toEqual({});
  });

  test("`make` reads the makefile of its directory; `make -f X` reads X only", () => {
    const files = { Makefile: "", "ci.mk": "", GNUmakefile: "" };
    expect(reasons(["make test"], files)).toEqual({ Makefile: "named_by_command", GNUmakefile: "named_by_command" });
    expect(reasons(["make -f ci.mk test"], files)).toEqual({ "ci.mk": "named_by_command" });
    expect(reasons(["make --file=ci.mk"], files)).toEqual({ "ci.mk": "named_by_command" });
  });

  test("a word that leaves the repository (`../../etc/passwd`, an absolute path) is not an input, and nothing throws", () => {
    const files = { "etc/passwd": "", "a/b/x": "" };
    expect(reasons(["cat ../../etc/passwd /etc/passwd ~/etc/passwd"], files)).toEqual({});
    expect(reasons(["cd a/b && cat ../../etc/passwd"], files)).toEqual({ "etc/passwd": "named_by_command" });
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
    expect(reasons([`echo ${words.join(" ")}`], files)).toEqual({ "check.sh": "named_by_command" });
    const globs = Array.from({ length: 10_000 }, (_, i) => `src/m${i}.j*`);
    expect(inputsOf([`ls ${globs.join(" ")}`], files).files).toHaveLength(16);
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

  test("a glob word matches base files from its directory, never past the top", () => {
    const files = { "checks/a.py": "", "checks/b.py": "", "checks/sub/c.py": "", "other/d.py": "" };
    expect(Object.keys(reasons(["python -m pytest checks/*.py"], files)).sort()).toEqual(["checks/a.py", "checks/b.py"]);
    expect(reasons(["cd other && python ../../*.py"], files)).toEqual({});
    expect(Object.keys(reasons(["cd other && python ../*/*.py"], files)).sort()).toEqual(["checks/a.py", "checks/b.py", "other/d.py"]);
  });
});

describe("package.json scripts a command runs", () => {
  const files = {
    "package.json": pkg({ test: "node scripts/check.js && npm run lint", lint: "sh scripts/lint.sh", build: "tsc", posttest: "echo done" }),
    "scripts/check.js": "",
    "scripts/lint.sh": "",
    "tools/gen.ts": "",
  };

  test("`npm test` makes package.json an input with the test script, its pre/post scripts, the scripts it runs, and the files they name", () => {
    const inputs = inputsOf(["npm test"], files);
    expect(inputs.scripts).toEqual(["lint", "postlint", "posttest", "prelint", "pretest", "test"]);
    expect(reasons(["npm test"], files)).toEqual({
      "package.json": "package_script",
      "scripts/check.js": "package_script",
      "scripts/lint.sh": "package_script",
    });
    expect(inputs.files.find((input) => input.path === "scripts/lint.sh")!.why).toBe('named by script "lint"');
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
    expect(reasons([command], files)["package.json"]).toBe("package_script");
  });

  test("`npm ci` in setup runs the root's install and prepare scripts", () => {
    expect(inputsOf(["npm ci"], files).scripts).toEqual(expect.arrayContaining(["prepare", "postinstall", "preinstall"]));
  });

  test("`npx X`, `bun test` and a bare `yarn X` where X is no script run no script, but their words still name files", () => {
    expect(inputsOf(["npx tsx tools/gen.ts", "bun test", "yarn nonexistent"], files)).toMatchObject({ scripts: [] });
    expect(reasons(["npx tsx tools/gen.ts"], files)).toEqual({ "tools/gen.ts": "named_by_command" });
  });

  test('a script that runs itself ("test": "npm run test") or two that run each other end, each read once', () => {
    const cyclic = { "package.json": pkg({ test: "npm run test", a: "npm run b && sh a.sh", b: "npm run a" }), "a.sh": "" };
    expect(inputsOf(["npm test"], cyclic).scripts).toEqual(["posttest", "pretest", "test"]);
    expect(inputsOf(["npm run a"], cyclic).scripts).toEqual(["a", "b", "posta", "postb", "prea", "preb"]);
    expect(reasons(["npm run a"], cyclic)["a.sh"]).toBe("package_script");
  });

  test("npm-run-all patterns run every script they match", () => {
    const all = { "package.json": pkg({ "test:unit": "sh u.sh", "test:e2e": "sh e.sh", build: "tsc" }), "u.sh": "", "e.sh": "" };
    expect(reasons(["npm-run-all 'test:**'"], all)).toEqual({
      "package.json": "package_script",
      "u.sh": "package_script",
      "e.sh": "package_script",
    });
    expect(reasons(["npx run-s 'test:*'"], all)).toEqual({
      "package.json": "package_script",
      "u.sh": "package_script",
      "e.sh": "package_script",
    });
  });

  test("a package.json that is not valid JSON at the base: `npm test` still makes it an input, with the test script's names, and nothing throws", () => {
    const broken = { "package.json": '{ "scripts": { "test": ', "check.sh": "" };
    const inputs = inputsOf(["npm test"], broken);
    expect(inputs.scripts).toEqual(["posttest", "pretest", "test"]);
    expect(reasons(["npm test"], broken)).toEqual({ "package.json": "package_script" });
  });

  test("a package.json whose jest key configures the runner is an input even when no script runs", () => {
    expect(reasons(["npx jest"], { "package.json": pkg({}, { jest: { testPathIgnorePatterns: [] } }) })).toEqual({
      "package.json": "runner_config",
    });
    expect(reasons(["npx mocha"], { "package.json": pkg({}) })).toEqual({ "package.json": "runner_config" });
    expect(reasons(["pytest"], { "package.json": pkg({}) })).toEqual({});
  });
});

describe("runner configs, test files and --protect", () => {
  test("test-runner configs and test files are inputs at any depth; tsconfig is a warning, not an input", () => {
    const files = {
      "vitest.config.ts": "",
      "packages/a/jest.config.js": "",
      ".mocharc.yml": "",
      "pytest.ini": "",
      "tests/conftest.py": "",
      "phpunit.xml.dist": "",
      "test/a.test.js": "",
      "src/b.spec.ts": "",
      "pkg/x_test.go": "",
      "tsconfig.json": "",
      "src/index.ts": "",
    };
    expect(reasons([], files)).toEqual({
      "vitest.config.ts": "runner_config",
      "packages/a/jest.config.js": "runner_config",
      ".mocharc.yml": "runner_config",
      "pytest.ini": "runner_config",
      "tests/conftest.py": "runner_config",
      "phpunit.xml.dist": "runner_config",
      "test/a.test.js": "test_file",
      "src/b.spec.ts": "test_file",
      "pkg/x_test.go": "test_file",
    });
    expect(riskWarnings("tsconfig.json", "modified").map((finding) => finding.rule)).toEqual(["verification_config"]);
    expect(riskWarnings("packages/a/jest.config.js", "modified").map((finding) => finding.rule)).toEqual(["verification_config"]);
  });

  test("--protect globs make the base files they match inputs; the first reason in order wins", () => {
    const files = { "fixtures/golden.json": "", "fixtures/more/x.json": "", "test/a.test.js": "", "src/a.js": "" };
    expect(reasons([], files, ["fixtures/", "test/*.js"])).toEqual({
      "fixtures/golden.json": "protected",
      "fixtures/more/x.json": "protected",
      "test/a.test.js": "test_file",
    });
  });

  test("inputFor: an edited or deleted input is one; an added test is not, an added runner config or protected path is", () => {
    const files = { "check.sh": "", "test/a.test.js": "", "src/a.js": "" };
    const inputs = inputsOf(["sh check.sh"], files, ["golden/"]);
    expect(inputFor(inputs, "check.sh", "deleted")).toMatchObject({ reason: "named_by_command" });
    expect(inputFor(inputs, "test/a.test.js", "modified")).toMatchObject({ reason: "test_file" });
    expect(inputFor(inputs, "src/a.js", "modified")).toBeNull();
    expect(inputFor(inputs, "test/b.test.js", "added")).toBeNull();
    expect(inputFor(inputs, "vitest.config.mts", "added")).toMatchObject({ reason: "runner_config" });
    expect(inputFor(inputs, "golden/out.txt", "added")).toMatchObject({ reason: "protected" });
    expect(inputFor(inputs, "package.json", "added")).toBeNull();
    expect(inputFor(inputsOf(["npm test"], files), "package.json", "added")).toMatchObject({ reason: "package_script" });
  });

  test("a repository with 50,000 test files lists 1000 of them in request.json and counts the rest", () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 50_000; i++) files[`test/t${i}.test.js`] = "";
    const record = inputsRecord(inputsOf(["npm test"], files, ["x/"]));
    expect(record).toMatchObject({ count: 50_000, omitted: 50_000 - MAX_LISTED_INPUTS, protect: ["x/"] });
    expect(record.files).toHaveLength(MAX_LISTED_INPUTS);
  });
});

describe("package.json held to the base", () => {
  const base = Buffer.from(
    `${JSON.stringify({ name: "p", scripts: { test: "node test.js" }, jest: { bail: true }, dependencies: { a: "1.0.0" } }, null, 2)}\n`,
  );

  test("holding keeps the patch's dependency change and puts the base's scripts and runner keys back", () => {
    const patched = Buffer.from(
      `${JSON.stringify({ name: "p", scripts: { test: "echo ok", lint: "x" }, dependencies: { a: "1.0.0", b: "2.0.0" }, mocha: {} }, null, 2)}\n`,
    );
    const held = JSON.parse(holdPackageJson(base, patched).toString("utf8"));
    expect(held).toEqual({ name: "p", scripts: { test: "node test.js" }, dependencies: { a: "1.0.0", b: "2.0.0" }, jest: { bail: true } });
  });

  test.each([
    ["two spaces", 2],
    ["four spaces", 4],
    ["a tab", "\t"],
  ])("holding keeps the patched file's indentation (%s) and final newline", (_name, indent) => {
    const patched = Buffer.from(`${JSON.stringify({ name: "p", scripts: { test: "echo ok" }, dependencies: { b: "2" } }, null, indent)}\n`);
    const held = holdPackageJson(base, patched).toString("utf8");
    expect(held).toBe(
      `${JSON.stringify({ name: "p", scripts: { test: "node test.js" }, dependencies: { b: "2" }, jest: { bail: true } }, null, indent)}\n`,
    );
  });

  test("holding keeps a file without a final newline without one, and CRLF line endings as CRLF", () => {
    const bare = Buffer.from(JSON.stringify({ scripts: { test: "echo ok" } }, null, 2));
    expect(holdPackageJson(base, bare).toString("utf8").endsWith("}")).toBe(true);
    const crlf = Buffer.from(`${JSON.stringify({ scripts: { test: "echo ok" } }, null, 2).replace(/\n/g, "\r\n")}\r\n`);
    const held = holdPackageJson(base, crlf).toString("utf8");
    expect(held.endsWith("}\r\n")).toBe(true);
    expect(held.replace(/\r\n/g, "")).not.toContain("\n");
  });

  test("a patch that changes neither scripts nor runner keys is held as its own bytes", () => {
    const patched = Buffer.from(`{"name":"p","scripts":{"test":"node test.js"},"jest":{"bail":true},"dependencies":{"b":"2"}}`);
    expect(holdPackageJson(base, patched)).toBe(patched);
  });

  test("invalid JSON on either side is held as the base's bytes, and counts every script as changed", () => {
    expect(holdPackageJson(base, Buffer.from("{ not json"))).toBe(base);
    expect(holdPackageJson(Buffer.from("{ not json"), base).toString("utf8")).toBe("{ not json");
    expect(scriptsChanged(base, Buffer.from("{ not json"), ["test", "pretest"])).toEqual(["test", "pretest"]);
  });

  test('a "__proto__" key in the patch stays a key and never becomes the prototype', () => {
    const patched = Buffer.from('{"__proto__": {"polluted": 1}, "scripts": {"test": "echo ok"}}');
    const held = holdPackageJson(base, patched).toString("utf8");
    expect(JSON.parse(held)).toHaveProperty("__proto__", { polluted: 1 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test("scriptsChanged names the scripts whose entries differ, absent against present included; a deleted package.json changes all", () => {
    const patched = Buffer.from(JSON.stringify({ scripts: { test: "node test.js", pretest: "rm test.js" }, dependencies: { z: "1" } }));
    expect(scriptsChanged(base, patched, ["pretest", "test", "posttest"])).toEqual(["pretest"]);
    expect(scriptsChanged(base, null, ["pretest", "test"])).toEqual(["pretest", "test"]);
    expect(scriptsChanged(base, base, ["test"])).toEqual([]);
  });

  test("runnerKeysChanged names the runner keys that differ, not a reordering of their contents", () => {
    const reordered = Buffer.from(JSON.stringify({ jest: { bail: true }, scripts: {}, name: "q" }));
    expect(runnerKeysChanged(base, reordered)).toEqual([]);
    const edited = Buffer.from(JSON.stringify({ jest: { bail: true, testPathIgnorePatterns: ["math"] }, ava: {} }));
    expect(runnerKeysChanged(base, edited)).toEqual(["jest", "ava"]);
    expect(runnerKeysChanged(base, null)).toEqual(["jest"]);
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
    const options = { task: "fix", noVerify: true, ...harness };
    expect(resolveOptions(options, { protect: ["fixtures/"] }, tempDir()).protect).toEqual(["fixtures/"]);
    expect(resolveOptions({ ...options, protect: ["golden/"] }, { protect: ["fixtures/"] }, tempDir()).protect).toEqual(["golden/"]);
    expect(resolveOptions(options, {}, tempDir()).protect).toEqual([]);
    expect(() => resolveOptions(options, { protect: ["[z-a]"] }, tempDir())).toThrow(/--protect '\[z-a\]' is not a valid pattern/);
  });
});
