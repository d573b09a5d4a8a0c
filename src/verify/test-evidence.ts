import { z } from "zod";
import type { JunitEvidence, TestStatus } from "./junit.js";

/**
 * What the JUnit files say about the patch, test by test (docs/verification.md, "Test-level evidence"): the four
 * transitions from the base to the patched checkout, and the record that goes under `verification.tests` in
 * result.json. Lists are bounded so result.json stays small whatever the size of the suite.
 */

/** Names kept per list (sorted, the first ones); `count` is always the whole number. */
export const TEST_NAMES_KEPT = 50;
/** Diagnostics kept (one per file at most, but `--junit` is repeatable). */
const DIAGNOSTICS_KEPT = 20;

/** Types, not interfaces, so that they fit the zod records (which have an index signature). */
export type TestTotals = {
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
};

export type TestList = {
  readonly count: number;
  readonly names: string[];
};

export type TestTransitions = {
  readonly base: TestTotals;
  readonly patched: TestTotals;
  /** Failed on the base, passes with the patch: what the patch fixed. */
  readonly fixed: TestList;
  /** Passed on the base, fails with the patch. */
  readonly broke: TestList;
  /** Passed on the base, missing with the patch (deleted, renamed, excluded from the run). */
  readonly vanished: TestList;
  /** Passed on the base, skipped with the patch. */
  readonly newlySkipped: TestList;
};

export function testTotals(tests: ReadonlyMap<string, TestStatus>): TestTotals {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for (const status of tests.values()) {
    if (status === "passed") passed += 1;
    else if (status === "failed") failed += 1;
    else skipped += 1;
  }
  return { passed, failed, skipped };
}

function bounded(names: string[]): TestList {
  return { count: names.length, names: names.sort().slice(0, TEST_NAMES_KEPT) };
}

export function compareTestResults(base: ReadonlyMap<string, TestStatus>, patched: ReadonlyMap<string, TestStatus>): TestTransitions {
  const fixed: string[] = [];
  const broke: string[] = [];
  const vanished: string[] = [];
  const newlySkipped: string[] = [];
  for (const [id, before] of base) {
    const after = patched.get(id);
    if (before === "failed" && after === "passed") fixed.push(id);
    if (before !== "passed") continue;
    if (after === undefined) vanished.push(id);
    else if (after === "failed") broke.push(id);
    else if (after === "skipped") newlySkipped.push(id);
  }
  return {
    base: testTotals(base),
    patched: testTotals(patched),
    fixed: bounded(fixed),
    broke: bounded(broke),
    vanished: bounded(vanished),
    newlySkipped: bounded(newlySkipped),
  };
}

const Totals = z.looseObject({ passed: z.number(), failed: z.number(), skipped: z.number() });
const List = z.looseObject({ count: z.number(), names: z.array(z.string()) });

/** `verification.tests` in result.json: what the writer records and what `show` and `apply` read back. */
export const TestEvidence = z.looseObject({
  /** The `--junit` paths, relative to the checkout. */
  files: z.array(z.string()),
  /** Totals in the patched checkout; null when no file could be read there. */
  patched: Totals.nullable(),
  /** Totals on the base (with `--baseline`); null without a baseline or when no file could be read there. */
  base: Totals.nullable(),
  fixed: List,
  broke: List,
  vanished: List,
  newlySkipped: List,
  /** One line per file that could not be read or parsed (missing, too large, a symlink, malformed…). */
  diagnostics: z.array(z.string()),
});
export type TestEvidence = z.infer<typeof TestEvidence>;

/** The record for result.json; the transition lists are empty unless both sides were read. */
export function testEvidenceRecord(patched: JunitEvidence, base: JunitEvidence | null, files: readonly string[]): TestEvidence {
  const diagnostics = [...patched.diagnostics, ...(base?.diagnostics ?? []).map((line) => `on the base: ${line}`)].slice(
    0,
    DIAGNOSTICS_KEPT,
  );
  const common = { files: [...files], diagnostics };
  if (patched.kind === "read" && base?.kind === "read") {
    const { base: baseTotals, patched: patchedTotals, ...lists } = compareTestResults(base.tests, patched.tests);
    return { ...common, patched: patchedTotals, base: baseTotals, ...lists };
  }
  return {
    ...common,
    patched: patched.kind === "read" ? testTotals(patched.tests) : null,
    base: base?.kind === "read" ? testTotals(base.tests) : null,
    fixed: { count: 0, names: [] },
    broke: { count: 0, names: [] },
    vanished: { count: 0, names: [] },
    newlySkipped: { count: 0, names: [] },
  };
}
