import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { RunResult } from "../src/verdict/result.js";
import { renderVerdictJunit } from "../src/verify/junit-verdict.js";
import { JUNIT_MAX_BYTES, type JunitEvidence, type TestStatus, parseJunit, readJunitEvidence } from "../src/verify/junit.js";
import { compareTestResults, TestEvidence, testEvidenceRecord, testTotals } from "../src/verify/test-evidence.js";
import { runCli } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, delegate, readJson } from "./helpers/run.js";

/**
 * Test-level evidence (docs/verification.md): JUnit XML as real tools write it, read as hostile input (the checkout
 * ran the agent's code), compared base → patched, and handoff's own verdict written back as JUnit.
 */
const FIXTURES = resolve(import.meta.dirname, "../fixtures/junit");
const VITEST_BIN = resolve(import.meta.dirname, "../node_modules/.bin/vitest");

function fixture(name: string): Buffer {
  return readFileSync(join(FIXTURES, name));
}

function parsed(bytes: Buffer | string): Map<string, TestStatus> {
  const outcome = parseJunit(Buffer.from(bytes));
  if (outcome.kind !== "parsed") throw new Error(`expected a parse, got: ${outcome.diagnostic}`);
  return outcome.tests;
}

/** A JUnit file with one suite holding `cases` (name → status), as a minimal reporter would write it. */
function junitXml(cases: Record<string, TestStatus>, suite = "suite"): string {
  const body = Object.entries(cases)
    .map(([name, status]) => {
      const inner = status === "failed" ? '<failure message="no">stack</failure>' : status === "skipped" ? "<skipped/>" : "";
      return `<testcase classname="${suite}" name="${name}">${inner}</testcase>`;
    })
    .join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="${suite}">\n${body}\n</testsuite></testsuites>\n`;
}

/** A checkout directory with files in it (relative path → content). */
function checkout(files: Record<string, string> = {}): string {
  const dir = join(tempDir("handoff-junit"), "checkout");
  mkdirSync(dir, { recursive: true });
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

function read(tests: Record<string, TestStatus>): JunitEvidence {
  return { kind: "read", tests: new Map(Object.entries(tests)), diagnostics: [] };
}

describe("parseJunit: the shapes real tools write", () => {
  test("vitest's junit reporter (fixture written by this repo's vitest): file > describe > name, failed and skipped told apart", () => {
    expect(parsed(fixture("vitest.xml"))).toEqual(
      new Map([
        ["test/math.test.js > add > adds zero", "passed"],
        ["test/math.test.js > add > adds two numbers", "failed"],
        ["test/math.test.js > add > adds strings", "skipped"],
      ]),
    );
  });

  test("vitest's junit reporter run live in a temp project gives the same ids as the kept fixture", () => {
    const dir = checkout({
      "package.json": '{"name":"live","type":"module"}\n',
      "test/math.test.js": readFileSync(join(FIXTURES, "vitest-project.test.js"), "utf8"),
    });
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("VITEST")));
    try {
      execFileSync(VITEST_BIN, ["run", "--globals", "--reporter=junit", "--outputFile=junit.xml"], { cwd: dir, env, stdio: "ignore" });
    } catch {
      // vitest exits 1: one test fails on purpose.
    }
    const live = readJunitEvidence(dir, ["junit.xml"]);
    expect(live).toMatchObject({ kind: "read", diagnostics: [] });
    expect(live.kind === "read" && [...live.tests]).toEqual([...parsed(fixture("vitest.xml"))]);
  });

  test("pytest --junitxml (fixture written by pytest 9): classname > name, <error> is a failure, parametrised cases apart", () => {
    expect(parsed(fixture("pytest.xml"))).toEqual(
      new Map([
        ["tests.test_math > test_adds_zero", "passed"],
        ["tests.test_math > test_adds_two_numbers", "failed"],
        ["tests.test_math > test_adds_strings", "skipped"],
        ["tests.test_math > test_param[1_0]", "passed"],
        ["tests.test_math > test_param[1_1]", "passed"],
        ["tests.test_math.TestClass > test_method", "passed"],
        ["tests.test_math > test_error", "failed"],
      ]),
    );
  });

  // The next four are written from the formats as documented, with our own test names:
  // jest-junit README "Example 1" (default classname and name templates, both "{classname} {title}");
  // mocha-junit-reporter test/mock-results.js (a "Root Suite", classname = the test's title, name = its full title);
  // go-junit-report testdata/107-report.xml (classname = the package, <skipped message>, a go.version property);
  // nextest fixtures/nextest-tests-junit.xml (<rerunFailure> beside <failure>, <flakyFailure> on a test that passed).
  test("jest-junit's default shape: a classname equal to the name is not repeated in the id", () => {
    expect(parsed(fixture("jest-junit.xml"))).toEqual(
      new Map([
        ["math add adds two numbers", "passed"],
        ["math add adds a negative number", "failed"],
        ["math add adds strings", "skipped"],
        ["strings trims both ends", "passed"],
      ]),
    );
  });

  test("mocha-junit-reporter: the empty Root Suite adds nothing, CDATA failures are failures", () => {
    expect(parsed(fixture("mocha-junit-reporter.xml"))).toEqual(
      new Map([
        ["adds two numbers > add adds two numbers", "passed"],
        ["adds a negative number > add adds a negative number", "failed"],
        ["adds strings > add adds strings", "skipped"],
        ["trims both ends > strings trims both ends", "passed"],
      ]),
    );
  });

  test("go-junit-report: package > test, subtests by their slash name, properties ignored", () => {
    expect(parsed(fixture("go-junit-report.xml"))).toEqual(
      new Map([
        ["example.com/calc > TestAdd", "passed"],
        ["example.com/calc > TestAdd/negative", "failed"],
        ["example.com/calc > TestAddStrings", "skipped"],
        ["example.com/calc > TestSub", "passed"],
      ]),
    );
  });

  test("cargo-nextest: a test that failed its retries is failed, one that passed after a flaky failure is passed", () => {
    expect(parsed(fixture("nextest.xml"))).toEqual(
      new Map([
        ["calc::tests > add::adds_two_numbers", "passed"],
        ["calc::tests > add::adds_a_negative_number", "failed"],
        ["calc::tests > add::flaky_on_first_try", "passed"],
      ]),
    );
  });

  test("a bare <testsuite> root and nested suites: a test case without classname is named by its nearest suite, file first", () => {
    const xml = `<testsuite name="outer">
      <testcase name="top"/>
      <testsuite name="inner"><testcase name="deep"><error/></testcase><testcase file="a.py" classname="k" name="with file"/></testsuite>
    </testsuite>`;
    expect(parsed(xml)).toEqual(
      new Map([
        ["outer > top", "passed"],
        ["inner > deep", "failed"],
        ["a.py > k > with file", "passed"],
      ]),
    );
  });

  test("J5: a parametrised test reported twice under one id stays two tests (#2), not merged into the worst status", () => {
    const xml = `<testsuite name="s"><testcase classname="c" name="t[x]"/><testcase classname="c" name="t[x]"><failure/></testcase><testcase classname="c" name="t[x]"><skipped/></testcase></testsuite>`;
    expect(parsed(xml)).toEqual(
      new Map([
        ["c > t[x]", "passed"],
        ["c > t[x] #2", "failed"],
        ["c > t[x] #3", "skipped"],
      ]),
    );
  });

  test("J5: a test name of 100,000 characters is cut to 500, and markup in names is decoded, not dropped", () => {
    const tests = parsed(
      `<testsuite name="s"><testcase classname="c" name="${"n".repeat(100_000)}"/><testcase classname="c" name="a &lt;&amp;&gt; &quot;b&quot;"/></testsuite>`,
    );
    const [long, marked] = [...tests.keys()];
    expect(long).toHaveLength(500);
    expect(long!.endsWith("…")).toBe(true);
    expect(marked).toBe('c > a <&> "b"');
  });

  test("J3: a billion-laughs JUnit file does not expand: its entities are left as text or refused, never multiplied", () => {
    const levels = Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i};`.repeat(10)}">`).join("\n");
    const laughs = `<?xml version="1.0"?>\n<!DOCTYPE lolz [\n<!ENTITY lol0 "lol">\n${levels}\n]>\n<testsuite name="s"><testcase classname="c" name="&lol9;"/></testsuite>\n`;
    const outcome = parseJunit(Buffer.from(laughs));
    const heap = JSON.stringify(outcome.kind === "parsed" ? [...outcome.tests] : outcome);
    expect(heap.length).toBeLessThan(2000);
    // One entity of 1,000 characters used 10,000 times (quadratic blow-up) is refused by the length bound.
    const quadratic = `<!DOCTYPE x [<!ENTITY big "${"a".repeat(1000)}">]><testsuite name="s"><testcase name="${"&big;".repeat(10_000)}"/></testsuite>`;
    expect(parseJunit(Buffer.from(quadratic))).toEqual({
      kind: "malformed",
      diagnostic: expect.stringMatching(/over the XML parser's limits/),
    });
  });

  test("J3: a report nested 100,000 suites deep is a diagnostic, not a stack overflow", () => {
    const deep = `<testsuites>${'<testsuite name="s">'.repeat(100_000)}<testcase name="t"/>${"</testsuite>".repeat(100_000)}</testsuites>`;
    expect(parseJunit(Buffer.from(deep))).toEqual({ kind: "malformed", diagnostic: expect.stringMatching(/nesting depth/) });
  });

  test("J4: a truncated JUnit file is a one-line diagnostic with its position that quotes nothing of it, not a crash", () => {
    const secret = "SECRET-IN-THE-FILE";
    const outcome = parseJunit(Buffer.from(`<testsuites><testsuite name="${secret}"><testcase name="${secret}">`));
    expect(outcome.kind).toBe("malformed");
    const diagnostic = outcome.kind === "malformed" ? outcome.diagnostic : "";
    expect(diagnostic).toMatch(/^not well-formed XML \(\w+ at line \d+, column \d+\)$/);
    expect(diagnostic).not.toContain(secret);
    expect(parseJunit(Buffer.from("<html><body>ok</body></html>"))).toEqual({
      kind: "malformed",
      diagnostic: expect.stringMatching(/not JUnit XML/),
    });
    expect(parseJunit(Buffer.from([0xff, 0xfe, 0x00, 0x3c]))).toMatchObject({ kind: "malformed" });
  });
});

describe("readJunitEvidence: what the checkout wrote, read as hostile input", () => {
  test("J1: a 100 MB junit.xml is a diagnostic and is never read (a sparse file)", () => {
    const dir = checkout({ "junit.xml": "" });
    truncateSync(join(dir, "junit.xml"), 100 * 1024 * 1024);
    expect(JUNIT_MAX_BYTES).toBe(32 * 1024 * 1024);
    expect(readJunitEvidence(dir, ["junit.xml"])).toEqual({
      kind: "none",
      diagnostics: ["junit.xml is 104857600 bytes, over the 32 MiB handoff reads"],
    });
  });

  test("J2: a junit.xml that is a symlink to a report outside the checkout is not followed", () => {
    const outside = join(tempDir("handoff-outside"), "real.xml");
    writeFileSync(outside, junitXml({ planted: "passed" }));
    const dir = checkout();
    symlinkSync(outside, join(dir, "junit.xml"));
    expect(readJunitEvidence(dir, ["junit.xml"])).toEqual({
      kind: "none",
      diagnostics: [expect.stringMatching(/^junit\.xml: not a regular file/)],
    });
  });

  test("J2: a junit.xml that is a FIFO does not block the reader", () => {
    const dir = checkout();
    execFileSync("mkfifo", [join(dir, "junit.xml")]);
    expect(readJunitEvidence(dir, ["junit.xml"])).toEqual({
      kind: "none",
      diagnostics: [expect.stringMatching(/^junit\.xml: not a regular file/)],
    });
  });

  test("J2: a report path through a symlinked directory that leads out of the checkout is refused, and so is ..", () => {
    const outside = tempDir("handoff-outside");
    writeFileSync(join(outside, "junit.xml"), junitXml({ planted: "passed" }));
    const dir = checkout();
    symlinkSync(outside, join(dir, "reports"));
    const evidence = readJunitEvidence(dir, ["reports/junit.xml", "../outside.xml", "/etc/passwd"]);
    expect(evidence).toEqual({
      kind: "none",
      diagnostics: [
        "reports/junit.xml: its directory leads outside the checkout (a symlink or `..`), not read",
        "../outside.xml: its directory leads outside the checkout (a symlink or `..`), not read",
        "/etc/passwd: not a path relative to the checkout, not read",
      ],
    });
  });

  test("a symlinked directory that stays inside the checkout is fine", () => {
    const dir = checkout({ "out/real/junit.xml": junitXml({ a: "passed" }) });
    symlinkSync("out/real", join(dir, "reports"));
    expect(readJunitEvidence(dir, ["reports/junit.xml"])).toMatchObject({ kind: "read", diagnostics: [] });
  });

  test("J4: a missing report and a malformed one are diagnostics naming their paths; a good one beside them is still read", () => {
    const dir = checkout({ "good.xml": junitXml({ a: "passed", b: "failed" }), "bad.xml": "<testsuites><testsuite>" });
    const evidence = readJunitEvidence(dir, ["missing.xml", "bad.xml", "good.xml", "nodir/x.xml"]);
    expect(evidence.kind).toBe("read");
    expect(evidence.kind === "read" && [...evidence.tests]).toEqual([
      ["suite > a", "passed"],
      ["suite > b", "failed"],
    ]);
    expect(evidence.diagnostics).toEqual([
      "missing.xml: not found (the verify command did not write it)",
      expect.stringMatching(/^bad\.xml: not well-formed XML \(/),
      "nodir/x.xml: not found (its directory does not exist), not read",
    ]);
  });

  test("two reports merge; the same test id in both stays two tests", () => {
    const dir = checkout({ "a.xml": junitXml({ t: "passed", u: "passed" }), "b.xml": junitXml({ t: "failed" }) });
    const evidence = readJunitEvidence(dir, ["a.xml", "b.xml"]);
    expect(evidence.kind === "read" && [...evidence.tests]).toEqual([
      ["suite > t", "passed"],
      ["suite > u", "passed"],
      ["suite > t #2", "failed"],
    ]);
  });
});

describe("compareTestResults: what the patch did, test by test", () => {
  const base = parsed(
    junitXml({
      fixedIt: "failed",
      brokeIt: "passed",
      deletedIt: "passed",
      skippedIt: "passed",
      stillRed: "failed",
      goneRed: "failed",
      same: "passed",
    }),
  );
  const patched = parsed(
    junitXml({ fixedIt: "passed", brokeIt: "failed", skippedIt: "skipped", stillRed: "failed", same: "passed", brandNew: "passed" }),
  );

  test("J7: each of the four transitions: failed → passed (fixed), passed → failed, passed → missing, passed → skipped", () => {
    const transitions = compareTestResults(base, patched);
    expect(transitions).toEqual({
      base: { passed: 4, failed: 3, skipped: 0 },
      patched: { passed: 3, failed: 2, skipped: 1 },
      fixed: { count: 1, names: ["suite > fixedIt"] },
      broke: { count: 1, names: ["suite > brokeIt"] },
      vanished: { count: 1, names: ["suite > deletedIt"] },
      newlySkipped: { count: 1, names: ["suite > skippedIt"] },
    });
  });

  test("an agent that deletes the one failing test shows nothing fixed; one that deletes a passing test shows it vanished", () => {
    const deletedTheFailing = compareTestResults(parsed(junitXml({ ok: "passed", red: "failed" })), parsed(junitXml({ ok: "passed" })));
    expect(deletedTheFailing.fixed.count).toBe(0);
    expect(deletedTheFailing.vanished.count).toBe(0);
    const deletedAPassing = compareTestResults(parsed(junitXml({ ok: "passed", red: "failed" })), parsed(junitXml({ red: "passed" })));
    expect(deletedAPassing).toMatchObject({ fixed: { count: 1 }, vanished: { count: 1, names: ["suite > ok"] } });
  });

  test("J5: 3,000 vanished tests: the count is whole, the names are the first 50 sorted", () => {
    const many = new Map<string, TestStatus>(Array.from({ length: 3000 }, (_, i) => [`t${String(i).padStart(4, "0")}`, "passed"]));
    const { vanished } = compareTestResults(many, new Map());
    expect(vanished.count).toBe(3000);
    expect(vanished.names).toHaveLength(50);
    expect(vanished.names[0]).toBe("t0000");
    expect(vanished.names[49]).toBe("t0049");
  });

  test("the result.json record: transitions only with both sides read, base diagnostics marked, and it fits RunResult's schema", () => {
    const none: JunitEvidence = { kind: "none", diagnostics: ["junit.xml: not found (the verify command did not write it)"] };
    const withBase = testEvidenceRecord(read(Object.fromEntries(patched)), read(Object.fromEntries(base)), ["junit.xml"]);
    expect(withBase).toMatchObject({ files: ["junit.xml"], patched: testTotals(patched), base: testTotals(base), vanished: { count: 1 } });
    expect(TestEvidence.parse(withBase)).toEqual(withBase);
    const noBase = testEvidenceRecord(read(Object.fromEntries(patched)), null, ["junit.xml"]);
    expect(noBase).toMatchObject({ patched: { passed: 3 }, base: null, fixed: { count: 0, names: [] }, vanished: { count: 0, names: [] } });
    const baseUnread = testEvidenceRecord(read(Object.fromEntries(patched)), none, ["junit.xml"]);
    expect(baseUnread).toMatchObject({
      base: null,
      diagnostics: ["on the base: junit.xml: not found (the verify command did not write it)"],
    });
    const patchedUnread = testEvidenceRecord(none, read(Object.fromEntries(base)), ["junit.xml"]);
    expect(patchedUnread).toMatchObject({ patched: null, base: { passed: 4 }, vanished: { count: 0 } });
  });
});

describe("handoff show with test evidence, and --format junit", () => {
  /** A finished run of the command backend, its result.json given the evidence the writer will record. */
  async function runWithEvidence(agentName: string, tests: TestEvidence | null): Promise<string> {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const { runDir } = await delegate(repo, agent(agentName), { verify: ["npm test"] });
    if (tests) {
      const resultPath = join(runDir, "result.json");
      const result = readJson(resultPath) as { verification: Record<string, unknown> };
      result.verification.tests = tests;
      writeFileSync(resultPath, `${JSON.stringify(result, null, 2)}\n`);
    }
    return runDir;
  }

  const onTheBase = parsed(
    junitXml({ "adds two numbers": "failed", "adds zero": "passed", "adds strings": "passed", subtracts: "passed" }, "math"),
  );
  const withThePatch = parsed(junitXml({ "adds two numbers": "passed", "adds strings": "skipped", subtracts: "failed" }, "math"));
  const evidence = testEvidenceRecord(read(Object.fromEntries(withThePatch)), read(Object.fromEntries(onTheBase)), ["junit.xml"]);

  test("J7: show lists vanished and newly skipped tests first, then broke, then fixed, in text and markdown", async () => {
    const runDir = await runWithEvidence("fixes-add.sh", evidence);
    const text = await runCli(["show", runDir]);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.split("\n");
    const at = (prefix: string) => lines.findIndex((line) => line.startsWith(`  ${prefix}`));
    expect(lines[at("tests (JUnit)")]).toBe(
      "  tests (JUnit): 1 passed, 1 failed, 1 skipped with the patch; 3 passed, 1 failed, 0 skipped on the base",
    );
    expect(lines[at("VANISHED")]).toBe("  VANISHED 1 (passed on the base, missing now): math > adds zero");
    expect(lines[at("NEWLY SKIPPED")]).toBe("  NEWLY SKIPPED 1 (passed on the base, skipped now): math > adds strings");
    expect(lines[at("broke")]).toBe("  broke 1 (passed on the base, fail now): math > subtracts");
    expect(lines[at("fixed")]).toBe("  fixed 1 (failed on the base, pass now): math > adds two numbers");
    expect(at("tests (JUnit)")).toBeLessThan(at("VANISHED"));
    expect(at("VANISHED")).toBeLessThan(at("NEWLY SKIPPED"));
    expect(at("NEWLY SKIPPED")).toBeLessThan(at("broke"));
    expect(at("broke")).toBeLessThan(at("fixed"));
    const markdown = await runCli(["show", runDir, "--format", "markdown"]);
    expect(markdown.stdout).toContain("- VANISHED 1 (passed on the base, missing now): `math > adds zero`");
  });

  test("J6: show --format junit on a finished run writes handoff's verdict as JUnit that parses back with the same parser", async () => {
    const verified = await runCli(["show", await runWithEvidence("fixes-add.sh", null), "--format", "junit"]);
    expect(verified.code, verified.stderr).toBe(0);
    expect(parsed(verified.stdout)).toEqual(
      new Map([
        ["handoff > verdict", "passed"],
        ["handoff.verification > [verify] npm test", "passed"],
      ]),
    );

    const failed = await runCli(["show", await runWithEvidence("breaks-add.sh", evidence), "--format", "junit"]);
    expect(failed.code, failed.stderr).toBe(0);
    expect(failed.stdout).toMatch(/<failure message="verification_failed[^"]*, exit 1: /);
    expect(parsed(failed.stdout)).toEqual(
      new Map([
        ["handoff > verdict", "failed"],
        ["handoff.verification > [verify] npm test", "failed"],
        ["handoff.tests.vanished > math > adds zero", "failed"],
        ["handoff.tests.newly_skipped > math > adds strings", "failed"],
        ["handoff.tests.broke > math > subtracts", "failed"],
        ["handoff.tests.fixed > math > adds two numbers", "passed"],
      ]),
    );
  });

  test("J6: a verdict whose test names carry controls, markup, ]]>, U+FFFE and lone surrogates is still XML that parses back", async () => {
    const runDir = await runWithEvidence("fixes-add.sh", null);
    const result = RunResult.parse(readJson(join(runDir, "result.json")));
    const hostile = ["a\u0000b\u001b[31m", '<tag attr="x">&amp;', "]]>--><!--", "bad\ufffe\uffff", "half\ud800pair", "ok 🎉"];
    const withNames = {
      ...result,
      summary: "line one\nline two\u0007",
      verification: {
        ...result.verification,
        tests: { ...testEvidenceRecord(read({}), null, []), vanished: { count: 60, names: hostile } },
      },
    };
    const xml = renderVerdictJunit(withNames);
    expect(xml).not.toMatch(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/u);
    const names = [...parsed(xml).keys()];
    expect(names).toEqual([
      "handoff > verdict",
      "handoff.verification > [verify] npm test",
      "handoff.tests.vanished > a\\x00b\\x1b[31m",
      'handoff.tests.vanished > <tag attr="x">&amp;',
      "handoff.tests.vanished > ]]>--><!--",
      "handoff.tests.vanished > bad\\ufffe\\uffff",
      "handoff.tests.vanished > half\\ud800pair",
      "handoff.tests.vanished > ok 🎉",
      "handoff.tests.vanished > 54 more not listed",
    ]);
  });
});
