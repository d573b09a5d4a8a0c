import type { PolicyFinding } from "../patch/rules/findings.js";
import type { HoldStep } from "./hold-to-base.js";

/** `--test-edits`: what a change to a verification input does to the verdict (docs/verification.md). */
export const TEST_EDIT_POLICIES = ["base", "reject", "allow"] as const;
export type TestEditPolicy = (typeof TEST_EDIT_POLICIES)[number];

/** A verification input the patch changed. */
export interface ChangedInput {
  readonly path: string;
  /** Why the path decides what verification runs (inputs.ts): named by a command, a package.json script, a runner config, a test, --protect. */
  readonly reason: string;
  readonly why: string;
  readonly change: "added" | "modified" | "deleted";
  /** package.json only: the entries that changed (`scripts.test`, `jest`); the rest of the file is the patch's to change. */
  readonly entries?: readonly string[];
}

export interface TestEditFacts {
  readonly policy: TestEditPolicy;
  readonly changed: readonly ChangedInput[];
}

export type Judgement = "held_to_base" | "rejected" | "allowed";

export function judgementOf(policy: TestEditPolicy): Judgement {
  switch (policy) {
    case "base":
      return "held_to_base";
    case "reject":
      return "rejected";
    case "allow":
      return "allowed";
  }
}

/** "check.sh", "check.sh and test/a.test.js", "check.sh, package.json (scripts.test) and 3 more". */
export function heldInputsText(changed: readonly ChangedInput[]): string {
  const names = changed.map((input) => (input.entries?.length ? `${input.path} (${input.entries.join(", ")})` : input.path));
  if (names.length <= 1) return names[0] ?? "nothing";
  const shown = names.slice(0, 4);
  const rest = names.length - shown.length;
  return rest > 0 ? `${shown.join(", ")} and ${rest} more` : `${shown.slice(0, -1).join(", ")} and ${shown.at(-1)}`;
}

/** The clause a verified run's summary carries when the patch changed verification inputs. */
export function judgedText(facts: TestEditFacts, heldPassed: boolean): string {
  const inputs = heldInputsText(facts.changed);
  switch (facts.policy) {
    case "base":
      return heldPassed ? `it changed ${inputs}, and held to the base's ${inputs} it passed too` : `it changed ${inputs}`;
    case "allow":
      return `it changed verification inputs ${inputs} (allowed by --test-edits allow: review them)`;
    case "reject":
      return `it changed ${inputs}`;
  }
}

/** `--test-edits reject`: each changed input is a violation. */
export function inputViolations(changed: readonly ChangedInput[]): PolicyFinding[] {
  return changed.map((input) => ({
    path: input.path,
    rule: "verification_input_changed",
    message: `${input.change} a verification input (${input.why}); --test-edits reject`,
  }));
}

/**
 * The steps that put each changed input back for the run held to the base: a modified or deleted one restored, an
 * added one (a new runner config) removed, package.json given the base's scripts (`heldPackageJson`, or the base
 * file whole when the patch deleted it). Tests the patch added are not inputs and stay.
 */
export function holdSteps(changed: readonly ChangedInput[], heldPackageJson: Buffer | null): HoldStep[] {
  return changed.map((input): HoldStep => {
    if (input.entries?.length && input.change === "modified" && heldPackageJson)
      return { kind: "write", path: input.path, bytes: heldPackageJson };
    return input.change === "added" ? { kind: "remove", path: input.path } : { kind: "restore", path: input.path };
  });
}
