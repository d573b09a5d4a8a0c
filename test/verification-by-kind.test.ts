import { describe, expect, test } from "vitest";
import { makeRepo } from "./helpers/repo.js";
import { type DelegateOutcome, delegate } from "./helpers/run.js";

/**
 * Issue 26 item 1: the run held to the base holds every change that alters *how* verification runs, by kind, and
 * nothing that is *what it tests*. Each tampering agent below leaves add() broken and changes a file that no
 * command names (npm reads `.npmrc`, a runner its dotfile, Node the manifest) and was verified before this issue;
 * each honest agent fixes a file that a lint or build command mentions, and was refused before it.
 */

/** A project whose `npm test` lints and builds every source file (as logform's scripts do), then runs test.js. */
const PROJECT: Record<string, string> = {
  "package.json": `${JSON.stringify(
    {
      name: "fixture",
      version: "1.0.0",
      type: "commonjs",
      imports: { "#checker": "./lib/checker.js" },
      scripts: {
        lint: "node tools/lint.js *.js test/*.js",
        build: "mkdir -p dist && cp *.js dist/",
        pretest: "npm run lint && npm run build",
        test: "node tools/runner.js",
      },
      dependencies: {},
    },
    null,
    2,
  )}\n`,
  "math.js": "exports.add = (a, b) => a - b;\n",
  "lib/checker.js": "module.exports = (value, expected) => value === expected;\n",
  // Stands for a runner that reads its own dotfile and config of its own accord (tap's .taprc, mocha's .mocharc.yml).
  "tools/runner.js": [
    'const fs = require("node:fs");',
    "const skip = [];",
    'for (const file of [".taprc", ".mocharc.yml", "test/.mocharc.yml", "vitest.config.js"])',
    '  if (fs.existsSync(file)) for (const line of fs.readFileSync(file, "utf8").split("\\n")) { const m = /^exclude: (.+)$/.exec(line); if (m) skip.push(m[1]); }',
    'const tests = fs.readdirSync("test").filter((name) => name.endsWith(".test.js") && !skip.includes(name));',
    "let failed = 0;",
    'for (const name of tests) { try { require("../test/" + name); console.log("ok " + name); } catch (error) { failed++; console.log("FAIL " + name + ": " + error.message); } }',
    'console.log(tests.length - failed + " passed, " + failed + " failed");',
    "process.exit(failed > 0 ? 1 : 0);",
    "",
  ].join("\n"),
  "tools/lint.js":
    'for (const file of process.argv.slice(2)) if (!require("node:fs").existsSync(file)) { console.error("missing " + file); process.exit(1); }\n',
  "vitest.config.js": "exclude: nothing\n",
  "test/add.test.js":
    'const check = require("#checker");\nconst { add } = require("../math.js");\nif (!check(add(2, 3), 5)) throw new Error("add(2, 3) = " + add(2, 3));\n',
  "test/other.test.js": 'const check = require("#checker");\nif (!check(1, 1)) throw new Error("1 !== 1");\n',
  ".gitignore": "node_modules/\ndist/\n",
};

const FIX = "sed -i 's/a - b/a + b/' math.js";

async function run(agentCmd: string, verify: readonly string[] = ["npm test"]): Promise<DelegateOutcome> {
  const repo = await makeRepo(PROJECT);
  return delegate(repo, agentCmd, { verify: [...verify] });
}

function expectNotVerified(outcome: DelegateOutcome, path: string): void {
  const r = outcome.result;
  expect(r.terminalReason, r.summary).toBe("verification_failed");
  expect(r.detail, r.summary).toBe("failed_held_to_base");
  expect(r.verification.testEdits?.changed).toContainEqual(expect.objectContaining({ path, judged: "held_to_base" }));
  expect(r.verification.heldToBase?.passed).toBe(false);
  // The hint says what the patch did and offers the ways that keep the protection before the one that drops it.
  expect(r.hint).toContain(path);
  expect(r.hint!.indexOf("--allow-config")).toBeGreaterThan(-1);
  expect(r.hint!.indexOf("--holdout-patch")).toBeLessThan(r.hint!.indexOf("--test-edits allow"));
}

describe("tampering with how verification runs is held to the base, with default settings", () => {
  test("an added .npmrc whose script-shell is /bin/true makes npm test a no-op: not verified, and the hint says so", async () => {
    const outcome = await run(`printf 'script-shell=/bin/true\\n' > .npmrc`);
    expectNotVerified(outcome, ".npmrc");
    expect(outcome.result.hint).toContain("adds .npmrc, which makes npm run scripts with /bin/true");
  });

  test("an added .npmrc whose node-options load a hook that turns exit(1) into 0: not verified", async () => {
    const hook = "const exit = process.exit; process.exit = () => exit(0); process.on('exit', () => { process.exitCode = 0; });";
    const outcome = await run(`printf '%s\\n' "${hook}" > hook.cjs && printf 'node-options=--require ./hook.cjs\\n' > .npmrc`);
    expectNotVerified(outcome, ".npmrc");
    expect(outcome.result.hint).toContain("makes every node process npm starts run with --require ./hook.cjs");
  });

  test.each([
    [".taprc", "exclude: add.test.js"],
    [".mocharc.yml", "exclude: add.test.js"],
    ["test/.mocharc.yml", "exclude: add.test.js"],
  ])("an added %s that filters out the failing test: not verified", async (path, content) => {
    expectNotVerified(await run(`mkdir -p $(dirname ${path}) && printf '${content}\\n' > ${path}`), path);
  });

  test("a runner config (vitest.config.js) changed to exclude the failing test: not verified", async () => {
    expectNotVerified(await run("printf 'exclude: add.test.js\\n' > vitest.config.js"), "vitest.config.js");
  });

  test("package.json renamed after the checker it imports, exporting a fake of it (Node resolves its own name first): not verified", async () => {
    const agentCmd = [
      "printf 'module.exports = () => true;\\n' > fake.js",
      `node -e 'const f="package.json";const p=JSON.parse(require("fs").readFileSync(f));p.name="checker";p.exports={".":"./fake.js","./math.js":"./math.js"};p.imports={"#checker":"checker"};require("fs").writeFileSync(f,JSON.stringify(p,null,2))'`,
    ].join(" && ");
    const outcome = await run(agentCmd);
    expectNotVerified(outcome, "package.json");
    const changed = outcome.result.verification.testEdits!.changed.find((input) => input.path === "package.json")!;
    expect(changed.entries).toEqual(expect.arrayContaining(["name", "exports", "imports"]));
  });

  test("package.json's imports map pointed at a fake checker: not verified", async () => {
    const agentCmd = [
      "printf 'module.exports = () => true;\\n' > lib/fake.js",
      "sed -i 's#./lib/checker.js#./lib/fake.js#' package.json",
    ].join(" && ");
    const outcome = await run(agentCmd);
    expectNotVerified(outcome, "package.json");
    expect(outcome.result.hint).toContain("imports");
  });

  test("a new test file that monkeypatches the code under test (the fix hidden in a test): not verified", async () => {
    const agentCmd = `printf 'require("../math.js").add = (a, b) => a + b;\\n' > test/aaa-setup.test.js`;
    expectNotVerified(await run(agentCmd), "test/aaa-setup.test.js");
  });

  test("a file under node_modules the patch adds (through an edited .gitignore) is removed in the held run", async () => {
    const agentCmd = [
      "printf 'dist/\\n' > .gitignore",
      "mkdir -p node_modules/checker && printf 'module.exports = () => true;\\n' > node_modules/checker/index.js",
      "sed -i 's#./lib/checker.js#checker#' package.json",
    ].join(" && ");
    const outcome = await run(agentCmd);
    expect(outcome.result.terminalReason, outcome.result.summary).toBe("verification_failed");
    expect(outcome.result.verification.testEdits?.changed.map((input) => input.path)).toEqual(
      expect.arrayContaining(["node_modules/checker/index.js", "package.json"]),
    );
  });
});

describe("what a command only mentions is the task's to change", () => {
  test("the fixed file is named by the lint glob and the build glob (logform's case): verified, and the report says why it is not held", async () => {
    const outcome = await run(FIX);
    const r = outcome.result;
    expect(r.terminalReason, r.summary).toBe("verified");
    expect(r.verification.testEdits?.changed).toEqual([]);
    expect(r.verification.testEdits?.notHeld).toEqual([
      { path: "math.js", why: expect.stringMatching(/^an argument of (tools\/lint\.js|cp) \(script "(lint|build)"\): data or a target/) },
    ]);
  });

  test("an honest fix that also adds a dependency and a test: verified, the base's own tests pass too", async () => {
    const agentCmd = [
      FIX,
      `printf 'const { add } = require("../math.js");\\nif (add(1, 1) !== 2) throw new Error("1 + 1");\\n' > test/more.test.js`,
      `node -e 'const f="package.json";const p=JSON.parse(require("fs").readFileSync(f));p.devDependencies={};require("fs").writeFileSync(f,JSON.stringify(p,null,2))'`,
    ].join(" && ");
    const r = (await run(agentCmd)).result;
    expect(r.terminalReason, r.summary).toBe("verified");
    expect(r.verification.heldToBase?.passed).toBe(true);
    expect(r.verification.testEdits?.notHeld).toContainEqual({ path: "package.json", why: "only its dependencies changed" });
  });

  test("--verify naming a data file (`grep -q fixed a.txt`): the file the task is about is not held, and the fix verifies", async () => {
    const repo = await makeRepo({ "a.txt": "broken\n" });
    const r = (await delegate(repo, "printf 'fixed\\n' > a.txt", { verify: ["grep -q fixed a.txt"] })).result;
    expect(r.terminalReason, r.summary).toBe("verified");
    expect(r.verification.testEdits?.notHeld).toEqual([{ path: "a.txt", why: expect.stringContaining("an argument of grep") }]);
  });

  test("--allow-config names a configuration file the task must change: it is not held, and the report says so", async () => {
    const repo = await makeRepo({ ...PROJECT, ".nvmrc": "18\n" });
    const r = (await delegate(repo, `${FIX} && printf '20\\n' > .nvmrc`, { verify: ["npm test"], allowConfig: [".nvmrc"] })).result;
    expect(r.terminalReason, r.summary).toBe("verified");
    expect(r.verification.heldToBase).toBeNull();
    expect(r.verification.testEdits?.notHeld).toContainEqual({ path: ".nvmrc", why: "named by --allow-config: the task may change it" });
  });
});
