import { realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { escapeControls } from "../vocabulary/display.js";
import { readFileSafely } from "../lib/safe-read.js";

/**
 * Test-level evidence (docs/verification.md, "Test-level evidence"): the JUnit XML a verify command wrote in the
 * verification checkout, read as hostile input. The checkout ran code the agent wrote, so the file may be huge, a
 * symlink, a FIFO, a billion laughs or plain garbage: each is a one-line diagnostic, never a crash or a hang.
 */

export type TestStatus = "passed" | "failed" | "skipped";

/** The most handoff reads of one JUnit file; a larger one is a diagnostic and is never read. */
export const JUNIT_MAX_BYTES = 32 * 1024 * 1024;
/** A test id longer than this is cut (with `…`): names are hostile text and result.json stays small. */
export const JUNIT_MAX_ID_CHARS = 500;

export type JunitParse =
  | { readonly kind: "parsed"; readonly tests: Map<string, TestStatus> }
  | { readonly kind: "malformed"; readonly diagnostic: string };

export type JunitEvidence =
  | { readonly kind: "read"; readonly tests: ReadonlyMap<string, TestStatus>; readonly diagnostics: readonly string[] }
  | { readonly kind: "none"; readonly diagnostics: readonly string[] };

/** The parts of a file handoff reads: testsuites, testsuite, testcase and whether it holds failure, error or skipped. */
type XmlNode = Record<string, unknown>;

const ATTR = "@_";

/**
 * A maintained parser, never a regular expression. Entities declared in a DOCTYPE are bounded (few, short, and
 * limited in total expansion), so a billion-laughs file fails to parse instead of expanding; the five XML entities
 * are always decoded. Values stay strings (no number parsing: `1.10` and `1.1` are different tests).
 */
const PARSER = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: ATTR,
  parseAttributeValue: false,
  parseTagValue: false,
  trimValues: false,
  isArray: (name, _path, _leaf, isAttribute) => !isAttribute && (name === "testsuite" || name === "testcase"),
  // Only what DOCTYPE entities add counts against the length (the five XML entities shorten text): a report with
  // a million `&quot;` in its stack traces parses, one `&big;` repeated into megabytes does not.
  processEntities: { enabled: true, maxEntityCount: 16, maxEntitySize: 1024, maxExpandedLength: 100_000 },
  maxNestedTags: 100,
});

/**
 * The tests in one JUnit XML file: `<testsuites>` or a bare `<testsuite>`, suites nested at any depth, each
 * `<testcase>` failed when it holds `<failure>` or `<error>`, skipped when it holds `<skipped>`, passed otherwise
 * (nextest's `<flakyFailure>` on a test that passed in the end is a pass). The diagnostic never quotes the file.
 */
export function parseJunit(bytes: Buffer): JunitParse {
  const collector = new TestCollector();
  const outcome = collectJunit(bytes, collector);
  return outcome === null ? { kind: "parsed", tests: collector.tests } : { kind: "malformed", diagnostic: outcome };
}

/** Adds the tests of one file to `collector`; the diagnostic when the file is not JUnit XML, else null. */
function collectJunit(bytes: Buffer, collector: TestCollector): string | null {
  let text = bytes.toString("utf8");
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let document: XmlNode;
  try {
    const valid = XMLValidator.validate(text);
    if (valid !== true) return `not well-formed XML (${valid.err.code} at line ${valid.err.line}, column ${valid.err.col})`;
    document = PARSER.parse(text) as XmlNode;
  } catch {
    // The messages would quote the file (entity and tag names): the diagnostic says what kind of limit, not what.
    return "not parsed: over the XML parser's limits (DOCTYPE entities, expansion or nesting depth)";
  }
  const suites = childNodes(document, "testsuites");
  const bare = childNodes(document, "testsuite");
  if (suites.length === 0 && bare.length === 0) return "no <testsuites> or <testsuite> element at the top: not JUnit XML";
  for (const root of suites) collectSuite(root, "", collector);
  for (const suite of bare) collectSuite(suite, attribute(suite, "name"), collector);
  return null;
}

/** Test cases of a suite and of the suites inside it; `suiteName` names a test case that has no classname. */
function collectSuite(suite: XmlNode, suiteName: string, collector: TestCollector): void {
  for (const testcase of childNodes(suite, "testcase")) {
    const id = testId(attribute(testcase, "file"), attribute(testcase, "classname") || suiteName, attribute(testcase, "name"));
    collector.add(id, statusOf(testcase));
  }
  for (const nested of childNodes(suite, "testsuite")) collectSuite(nested, attribute(nested, "name") || suiteName, collector);
}

function statusOf(testcase: XmlNode): TestStatus {
  if (Object.hasOwn(testcase, "failure") || Object.hasOwn(testcase, "error")) return "failed";
  if (Object.hasOwn(testcase, "skipped")) return "skipped";
  return "passed";
}

/**
 * `file > classname > name`, leaving out what is absent and a part equal to the one before it (vitest's classname
 * is its file; jest-junit's default classname is the name), cut at JUNIT_MAX_ID_CHARS. Stable between two runs of
 * one suite, since each part is what the test runner printed for that test.
 */
export function testId(file: string, classname: string, name: string): string {
  const parts: string[] = [];
  for (const part of [file, classname, name]) if (part !== "" && part !== parts[parts.length - 1]) parts.push(part);
  const id = parts.length === 0 ? "(unnamed test)" : parts.join(" > ");
  if (id.length <= JUNIT_MAX_ID_CHARS) return id;
  return `${Array.from(id.slice(0, JUNIT_MAX_ID_CHARS))
    .slice(0, JUNIT_MAX_ID_CHARS - 1)
    .join("")}…`;
}

/**
 * Tests by id, in the order read. The same id again (a parametrised test printed twice, one file read twice) is
 * its own test, `id #2`, `id #3`…, never merged: in document order, so the base's and the patch's files agree.
 */
class TestCollector {
  readonly tests = new Map<string, TestStatus>();
  private readonly seen = new Map<string, number>();

  add(id: string, status: TestStatus): void {
    let count = this.seen.get(id) ?? 0;
    let key = count === 0 ? id : `${id} #${count + 1}`;
    while (this.tests.has(key)) key = `${id} #${++count + 1}`;
    this.seen.set(id, count + 1);
    this.tests.set(key, status);
  }
}

function childNodes(node: XmlNode, name: string): XmlNode[] {
  if (!Object.hasOwn(node, name)) return [];
  const value = node[name];
  const list = Array.isArray(value) ? value : [value];
  // `<testcase/>` parses as an empty string: a node with no attributes.
  return list.map((item) => (typeof item === "object" && item !== null ? (item as XmlNode) : {}));
}

function attribute(node: XmlNode, name: string): string {
  const value = Object.hasOwn(node, `${ATTR}${name}`) ? node[`${ATTR}${name}`] : undefined;
  return typeof value === "string" ? value : "";
}

/**
 * The JUnit files a verify command wrote, each `path` relative to the checkout (as given with `--junit`), read
 * without trusting the checkout: never through a symlink (final or a directory leading out of the checkout), never
 * blocking on a FIFO, never more than JUNIT_MAX_BYTES. Several files merge; each problem is one diagnostic naming
 * the path. "read" when at least one file parsed.
 */
export function readJunitEvidence(checkoutDir: string, paths: readonly string[]): JunitEvidence {
  const collector = new TestCollector();
  const diagnostics: string[] = [];
  let parsed = 0;
  for (const path of paths) {
    const shown = escapeControls(path);
    const located = locate(checkoutDir, path);
    if (located.kind === "refused") {
      diagnostics.push(`${shown}: ${located.reason}, not read`);
      continue;
    }
    const read = readFileSafely(located.path, JUNIT_MAX_BYTES);
    switch (read.kind) {
      case "bytes": {
        const problem = collectJunit(read.bytes, collector);
        if (problem === null) parsed += 1;
        else diagnostics.push(`${shown}: ${problem}`);
        break;
      }
      case "too_large":
        diagnostics.push(`${shown} is ${read.size} bytes, over the ${JUNIT_MAX_BYTES / 1024 / 1024} MiB handoff reads`);
        break;
      case "not_regular":
        diagnostics.push(`${shown}: not a regular file (a symlink, FIFO, device or directory), not read`);
        break;
      case "unreadable":
        diagnostics.push(
          read.message === "ENOENT"
            ? `${shown}: not found (the verify command did not write it)`
            : `${shown}: unreadable (${read.message})`,
        );
        break;
    }
  }
  return parsed > 0 ? { kind: "read", tests: collector.tests, diagnostics } : { kind: "none", diagnostics };
}

type Located = { readonly kind: "at"; readonly path: string } | { readonly kind: "refused"; readonly reason: string };

/** The file's path with its directory resolved, when that directory is inside the checkout (after symlinks). */
function locate(checkoutDir: string, path: string): Located {
  if (path === "" || isAbsolute(path)) return { kind: "refused", reason: "not a path relative to the checkout" };
  const name = basename(path);
  if (name === "" || name === "." || name === ".." || path.endsWith("/")) return { kind: "refused", reason: "not a file name" };
  let root: string;
  let parent: string;
  try {
    root = realpathSync(checkoutDir);
    parent = realpathSync(dirname(join(checkoutDir, path)));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return {
      kind: "refused",
      reason: code === "ENOENT" ? "not found (its directory does not exist)" : `its directory is unreadable (${code ?? "error"})`,
    };
  }
  const inside = relative(root, parent);
  if (inside === ".." || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
    return { kind: "refused", reason: "its directory leads outside the checkout (a symlink or `..`)" };
  }
  return { kind: "at", path: join(parent, name) };
}
