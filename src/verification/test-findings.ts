import type { TestFindings } from "../terminal.js";
import type { TestEvidence } from "./test-evidence.js";

const total = (side: { passed: number; failed: number; skipped: number } | null) => (side ? side.passed + side.failed + side.skipped : null);

/** What the verdict needs from result.json's `verification.tests`: transitions count only when both sides were read. */
export function testFindings(record: TestEvidence | null): TestFindings | null {
  if (!record) return null;
  return {
    compared: record.base !== null && record.patched !== null,
    fixed: record.fixed,
    broke: record.broke,
    vanished: record.vanished,
    newlySkipped: record.newlySkipped,
    baseTotal: total(record.base),
    patchedTotal: total(record.patched),
    basePassed: record.base?.passed ?? null,
  };
}
