import type { Extraction } from "../patch/extract.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import { type ManifestSides, blobAt, changedInputs, stagedBlob } from "./changed-inputs.js";
import { isManifest } from "./config-kinds.js";
import { linesByFile, whatItDid } from "./edit-words.js";
import type { VerificationInputs } from "./inputs.js";
import { holdManifest } from "./manifest.js";
import { rustTestChanges } from "./rust-tests-held.js";
import { type ChangedInput, type TestEditFacts, type TestEditPolicy, inputViolations } from "./test-edits.js";

/** Which verification inputs a patch changed, and what `--test-edits` makes of that. */
export interface InputChanges {
  readonly testEdits: TestEditFacts;
  /** `--test-edits reject`: each changed input, as a violation of the patch. */
  readonly violations: readonly PolicyFinding[];
  /**
   * Changed inputs the run held to the base gets as handoff computed them, by path: a package.json as the base's with
   * the patch's dependencies, a Rust source file as patched with the base's test modules (rust-tests-held.ts).
   */
  readonly heldContents: ReadonlyMap<string, Buffer>;
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
  const rust = await rustTestChanges(baseCommit, inputs, extraction);
  const all = [...found.changed, ...rust.changed];
  const lines = linesByFile(extraction.patch, new Set(all.map((input) => input.path)));
  const changed = all.map((input) => ({ ...input, did: whatItDid(input, lines.get(input.path) ?? null) }));
  const notHeld = found.notHeld;
  const heldContents = new Map<string, Buffer>(rust.held);
  for (const input of changed) {
    const sides = manifests.get(input.path);
    if (sides?.base) heldContents.set(input.path, sides.patched ? holdManifest(sides.base, sides.patched) : sides.base);
  }
  return { testEdits: { policy, changed, notHeld }, violations: violationsOf(policy, changed, rust.notIsolated), heldContents };
}

/** `reject`: every changed input; `base`: the test edits the held run cannot isolate; `allow`: none. */
function violationsOf(policy: TestEditPolicy, changed: readonly ChangedInput[], notIsolated: readonly PolicyFinding[]): PolicyFinding[] {
  switch (policy) {
    case "reject":
      return inputViolations(changed);
    case "base":
      return [...notIsolated];
    case "allow":
      return [];
  }
}
