import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { PolicyRule } from "../../src/patch/rules/findings.js";
import { type DelegateOutcome, agent } from "./run.js";

/** The line every hostile fixture agent adds besides its attack: a rejected patch must still carry it. */
export const FIX_LINE = "+  return a + b;";

/** A fixture agent called with arguments, each single-quoted for /bin/sh. */
export function agentWith(name: string, ...args: readonly string[]): string {
  return [agent(name), ...args.map((arg) => `'${arg.replaceAll("'", `'\\''`)}'`)].join(" ");
}

/** Raw text of one artifact of the run. */
export function artifact(run: DelegateOutcome, name: string): string {
  return readFileSync(join(run.runDir, name), "utf8");
}

/**
 * The run ended `policy_or_artifact_error` with `rule` as its detail and a violation of `rule` at `path`, nothing
 * was verified, the source is untouched and no planted payload ran. With `patchSaved` (the default), the rejected
 * patch is still in changes.patch, with the agent's legitimate fix, and result.json names its exact bytes.
 */
export function expectRejected(run: DelegateOutcome, rule: PolicyRule, path: string, options: { patchSaved?: boolean } = {}): void {
  expect(run.result.terminalReason).toBe("policy_or_artifact_error");
  expect(run.result.status).toBe("failed");
  expect(run.result.detail).toBe(rule);
  expect(run.result.policy.violations).toContainEqual(expect.objectContaining({ rule, path }));
  expect(run.result.verification.ran).toBe(false);
  if (options.patchSaved ?? true) {
    expect(run.patch).toContain(FIX_LINE);
    const bytes = readFileSync(join(run.runDir, "changes.patch"));
    expect(run.result.patch?.sha256).toBe(createHash("sha256").update(bytes).digest("hex"));
  }
  expect(run.sourceChanged).toEqual([]);
  expect(run.payloadsRan).toEqual([]);
}

/** The run ended `verified` with the agent's fix in the patch, verification ran and passed, the source untouched, no payload run. */
export function expectVerifiedFix(run: DelegateOutcome): void {
  expect(run.result.terminalReason, run.result.summary).toBe("verified");
  expect(run.patch).toContain(FIX_LINE);
  expect(run.result.verification).toMatchObject({ ran: true, passed: true });
  expect(run.sourceChanged).toEqual([]);
  expect(run.payloadsRan).toEqual([]);
}

/** The run ended `verified` with no violation, a warning of `rule` at `path`, the source untouched, no payload run. */
export function expectVerifiedWithWarning(run: DelegateOutcome, rule: PolicyRule, path: string): void {
  expect(run.result.terminalReason).toBe("verified");
  expect(run.result.policy.violations).toEqual([]);
  expect(run.result.policy.warnings).toContainEqual(expect.objectContaining({ rule, path }));
  expect(run.sourceChanged).toEqual([]);
  expect(run.payloadsRan).toEqual([]);
}

/** Paths of the patch's files, as result.json lists them. */
export function patchPaths(run: DelegateOutcome): string[] {
  return (run.result.patch?.files ?? []).map((file) => file.path);
}
