import type { PolicyFinding } from "../patch/rules/findings.js";
import type { HoldStep } from "./hold-to-base.js";

/** `--test-edits`: what a change to a verification input does to the verdict (docs/verification.md). */
export const TEST_EDIT_POLICIES = ["base", "reject", "allow"] as const;
export type TestEditPolicy = (typeof TEST_EDIT_POLICIES)[number];

/** A verification input the patch changed. */
export interface ChangedInput {
  readonly path: string;
  /** Why the path decides how verification runs (inputs.ts InputReason): the manifest, named by a command, configuration, a test, --protect. */
  readonly reason: string;
  readonly why: string;
  readonly change: "added" | "modified" | "deleted";
  /** package.json only: the fields that changed (`scripts.test`, `exports`); its dependencies are the patch's to change. */
  readonly entries?: readonly string[];
  /** What the patch did to it, in a reviewer's words (edit-words.ts): "skips `splat %c` (it.skip) in test/splat.js". */
  readonly did?: string;
}

/** A changed file the commands name that is not held, and why: "an argument of eslint (script "lint"): data or a target". */
export interface NotHeld {
  readonly path: string;
  readonly why: string;
}

export interface TestEditFacts {
  readonly policy: TestEditPolicy;
  readonly changed: readonly ChangedInput[];
  /** Changed files a reader might take for inputs, and why they are not held (absent in records made before issue 26). */
  readonly notHeld?: readonly NotHeld[];
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

/**
 * A test file the patch adds: new tests are what a good patch brings, so it is never a violation (`reject`) nor
 * named as a changed input (`allow`); under `base` the held run leaves it out and runs the base's tests only.
 */
export function isAddedTest(input: ChangedInput): boolean {
  return input.change === "added" && input.reason === "test_file";
}

/** The clause a verified run's summary carries when the patch changed verification inputs; null when there is none to say. */
export function judgedText(facts: TestEditFacts, heldPassed: boolean): string | null {
  const { changed, added } = withoutAddedTests(facts.changed);
  const inputs = heldInputsText(changed);
  switch (facts.policy) {
    case "base": {
      const without = added > 0 ? `, without the ${testFiles(added)} it adds,` : "";
      if (changed.length === 0) return heldPassed ? `the base's own tests${without} passed too` : null;
      return heldPassed ? `it changed ${inputs}, and held to the base's ${inputs}${without} it passed too` : `it changed ${inputs}`;
    }
    case "allow":
      return changed.length > 0 ? `it changed verification inputs ${inputs} (allowed by --test-edits allow: review them)` : null;
    case "reject":
      return changed.length > 0 ? `it changed ${inputs}` : null;
  }
}

/** What the run held to the base put back: "check.sh", or "own tests (without the test file it adds)" when the patch only added tests. */
export function heldWhatText(all: readonly ChangedInput[]): string {
  const { changed, added } = withoutAddedTests(all);
  const without = added > 0 ? ` (without the ${testFiles(added)} it adds)` : "";
  return changed.length > 0 ? `${heldInputsText(changed)}${without}` : `own tests${without}`;
}

/** The changed inputs but the test files the patch adds, and how many those are. */
function withoutAddedTests(all: readonly ChangedInput[]): { changed: ChangedInput[]; added: number } {
  const changed = all.filter((input) => !isAddedTest(input));
  return { changed, added: all.length - changed.length };
}

const testFiles = (count: number) => (count === 1 ? "test file" : `${count} test files`);

/** `--test-edits reject`: each changed input is a violation (a test file the patch adds is not). */
export function inputViolations(changed: readonly ChangedInput[]): PolicyFinding[] {
  return changed
    .filter((input) => !isAddedTest(input))
    .map((input) => ({
      path: input.path,
      rule: "verification_input_changed",
      message: `${input.change} a verification input (${input.why}); --test-edits reject`,
    }));
}

/**
 * The steps that put each changed input back for the run held to the base: a modified or deleted one restored, an
 * added one (a configuration file, a test file, a package.json) removed, one handoff computed written (`heldContents`:
 * a modified package.json with the base's fields and the patch's dependencies, a Rust file with the base's tests).
 */
export function holdSteps(changed: readonly ChangedInput[], heldContents: ReadonlyMap<string, Buffer>): HoldStep[] {
  return changed.map((input): HoldStep => {
    const bytes = heldContents.get(input.path);
    if (input.change !== "deleted" && bytes) return { kind: "write", path: input.path, bytes };
    return input.change === "added" ? { kind: "remove", path: input.path } : { kind: "restore", path: input.path };
  });
}
