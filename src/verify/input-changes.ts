import type { Extraction } from "../patch/extract.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import { type BaseForInputs, changedInputs, stagedBlob } from "./changed-inputs.js";
import type { VerificationInputs } from "./inputs.js";
import { holdPackageJson } from "./package-json.js";
import { type ChangedInput, type TestEditFacts, type TestEditPolicy, inputViolations } from "./test-edits.js";

/** Which verification inputs a patch changed, and what `--test-edits` makes of that. */
export interface InputChanges {
  readonly testEdits: TestEditFacts;
  /** `--test-edits reject`: each changed input, as a violation of the patch. */
  readonly violations: readonly PolicyFinding[];
  /** package.json as the patch left it (read once from the extraction's own index), null when absent. */
  readonly patchedPackageJson: Buffer | null;
}

export async function judgeInputChanges(
  base: BaseForInputs,
  inputs: VerificationInputs,
  extraction: Extraction,
  policy: TestEditPolicy,
): Promise<InputChanges> {
  const touchesPackageJson = extraction.files.some((file) => file.path === "package.json");
  const patchedPackageJson = touchesPackageJson
    ? await stagedBlob(extraction.privateGitDir, extraction.listing, "package.json")
    : base.packageJson;
  const changed = changedInputs(inputs, extraction.files, { base: base.packageJson, patched: patchedPackageJson });
  return { testEdits: { policy, changed }, violations: policy === "reject" ? inputViolations(changed) : [], patchedPackageJson };
}

/** package.json as patched with the base's scripts, for the run held to the base; null when its scripts did not change. */
export function heldPackageJson(changed: readonly ChangedInput[], base: Buffer | null, patched: Buffer | null): Buffer | null {
  const input = changed.find((entry) => entry.path === "package.json" && entry.entries?.length);
  return input && base && patched ? holdPackageJson(base, patched) : null;
}
