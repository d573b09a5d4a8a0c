import type { Extraction } from "../patch/extract.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import { type ManifestSides, blobAt, changedInputs, stagedBlob } from "./changed-inputs.js";
import { isManifest } from "./config-kinds.js";
import { linesByFile, whatItDid } from "./edit-words.js";
import type { VerificationInputs } from "./inputs.js";
import { holdManifest } from "./manifest.js";
import { type TestEditFacts, type TestEditPolicy, inputViolations } from "./test-edits.js";

/** Which verification inputs a patch changed, and what `--test-edits` makes of that. */
export interface InputChanges {
  readonly testEdits: TestEditFacts;
  /** `--test-edits reject`: each changed input, as a violation of the patch. */
  readonly violations: readonly PolicyFinding[];
  /** Each changed package.json as the run held to the base gets it: the base's, with the patch's dependencies. */
  readonly heldManifests: ReadonlyMap<string, Buffer>;
}

export async function judgeInputChanges(
  baseCommit: string,
  inputs: VerificationInputs,
  extraction: Extraction,
  policy: TestEditPolicy,
): Promise<InputChanges> {
  const manifests = new Map<string, ManifestSides>();
  const target = { gitDir: extraction.privateGitDir, cwd: extraction.privateGitDir };
  for (const file of extraction.files) {
    if (file.change !== "modified" || !isManifest(file.path)) continue;
    manifests.set(file.path, {
      base: await blobAt(target, `${baseCommit}:${file.path}`),
      patched: await stagedBlob(extraction.privateGitDir, extraction.listing, file.path),
    });
  }
  const found = changedInputs(inputs, extraction.files, manifests);
  const lines = linesByFile(extraction.patch, new Set(found.changed.map((input) => input.path)));
  const changed = found.changed.map((input) => ({ ...input, did: whatItDid(input, lines.get(input.path) ?? null) }));
  const notHeld = found.notHeld;
  const heldManifests = new Map<string, Buffer>();
  for (const input of changed) {
    const sides = manifests.get(input.path);
    if (sides?.base) heldManifests.set(input.path, sides.patched ? holdManifest(sides.base, sides.patched) : sides.base);
  }
  return { testEdits: { policy, changed, notHeld }, violations: policy === "reject" ? inputViolations(changed) : [], heldManifests };
}
