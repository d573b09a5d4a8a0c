import type { PatchFile } from "../patch/extract.js";
import { type GitTarget, git, splitNul } from "../process/git.js";
import { type SourceRepo, sourceTarget } from "../clone/source-repo.js";
import { type VerificationInputs, inputFor } from "./inputs.js";
import { runnerKeysChanged, scriptsChanged } from "./package-json.js";
import type { ChangedInput } from "./test-edits.js";

/** The most bytes of package.json handoff reads to compare scripts: a manifest is kilobytes; more is not a manifest. */
const MAX_PACKAGE_JSON_BYTES = 4 * 1024 * 1024;

/** What verification inputs are found from: every path of the base commit, and its root package.json. */
export interface BaseForInputs {
  readonly paths: readonly string[];
  readonly packageJson: Buffer | null;
}

/** Read from the base commit in the source's object store (never its work tree, never the agent's clone). */
export async function readBaseForInputs(source: SourceRepo, signal?: AbortSignal): Promise<BaseForInputs> {
  const target = sourceTarget(source);
  const listing = await git(target, ["ls-tree", "-r", "-z", "--name-only", "--full-tree", source.baseCommit], { signal });
  const paths = splitNul(listing.stdout).map((path) => path.toString("utf8"));
  return { paths, packageJson: await blobAt(target, `${source.baseCommit}:package.json`) };
}

async function blobAt(target: GitTarget, object: string): Promise<Buffer | null> {
  const size = await git(target, ["cat-file", "-s", object], { okExitCodes: [128] });
  if (size.exitCode !== 0 || !(Number(size.stdout.toString("utf8").trim()) <= MAX_PACKAGE_JSON_BYTES)) return null;
  const type = (await git(target, ["cat-file", "-t", object])).stdout.toString("utf8").trim();
  return type === "blob" ? (await git(target, ["cat-file", "blob", object], { maxBuffer: MAX_PACKAGE_JSON_BYTES })).stdout : null;
}

/** A file as handoff staged it after the agent (from the extraction's own index listing), or null when absent. */
export async function stagedBlob(privateGitDir: string, listing: Buffer, path: string): Promise<Buffer | null> {
  for (const record of splitNul(listing)) {
    const tab = record.indexOf(9);
    if (tab === -1 || record.subarray(tab + 1).toString("utf8") !== path) continue;
    const oid = record.subarray(0, tab).toString("utf8").split(" ")[1];
    return oid ? blobAt({ gitDir: privateGitDir, cwd: privateGitDir }, oid) : null;
  }
  return null;
}

/**
 * The verification inputs the patch changed. package.json, when it is an input only through its scripts, counts as
 * changed only when a script verification runs (or a test runner's key) changed: a dependency bump is not a change
 * to the checks. Its other fields stay the patch's.
 */
export function changedInputs(
  inputs: VerificationInputs,
  files: readonly PatchFile[],
  packageJson: { base: Buffer | null; patched: Buffer | null },
): ChangedInput[] {
  const changed: ChangedInput[] = [];
  for (const file of files) {
    const input = inputFor(inputs, file.path, file.change);
    // package.json as a whole is an input only when a command names it or --protect covers it.
    const scriptsOnly =
      file.path === "package.json" && (input === null || input.reason === "package_script" || input.reason === "runner_config");
    if (scriptsOnly && packageJson.base && file.change === "modified") {
      const entries = [
        ...scriptsChanged(packageJson.base, packageJson.patched, inputs.scripts).map((name) => `scripts.${name}`),
        ...runnerKeysChanged(packageJson.base, packageJson.patched ?? Buffer.alloc(0)),
      ];
      if (entries.length > 0) {
        changed.push({
          path: file.path,
          reason: input?.reason ?? "runner_config",
          why: input?.why ?? "configures a test runner",
          change: file.change,
          entries,
        });
      }
      continue;
    }
    if (input) changed.push({ path: file.path, reason: input.reason, why: input.why, change: file.change });
  }
  return changed;
}
