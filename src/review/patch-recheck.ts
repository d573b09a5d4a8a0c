import type { SafeRead } from "../lib/safe-read.js";
import { type GitTarget, git } from "../process/git.js";
import { parsePatch, addedLinesPerFile } from "../patch/patch.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import { DEFAULT_POLICY, compilePolicy } from "../patch/rules/policy.js";
import { type ChangedEntry, judgeEntries } from "../patch/rules/rule-book.js";
import type { RawChange } from "../patch/raw-change.js";
import { listingPaths, parseRawWithNumstat } from "../patch/staging.js";

const DIFF_FLAGS = ["--no-renames", "--no-ext-diff", "--no-textconv", "--ignore-submodules=none", "--no-color"];

/**
 * The patch rules again, on a patch applied to an index (`target.indexFile`) over `baseCommit`: what publish mode
 * does with a run directory it downloaded, whose result.json says nothing it can trust about the patch. The rule
 * book (src/patch/rules/rule-book.ts) judges the index's changes with handoff's default policy, reading each new
 * blob from git; the run's own --allow/--deny are not known here, so only the rules every run obeys apply.
 */
export async function recheckPatchRules(
  target: GitTarget,
  baseCommit: string,
  patch: Buffer,
  objectFormat: "sha1" | "sha256",
): Promise<PolicyFinding[]> {
  const policy = compilePolicy(DEFAULT_POLICY);
  const raw = await git(target, ["diff", "--cached", "--raw", "--numstat", "-z", "--no-abbrev", ...DIFF_FLAGS, baseCommit, "--"]);
  const changes = parseRawWithNumstat(raw.stdout);
  const listing = await git(target, ["ls-files", "-s", "-z"]);
  const contents = await readBlobs(target, changes, policy.maxFileBytes);
  const entries: ChangedEntry[] = changes.map((change, index) => ({ ...change, content: contents[index] }));
  const parsed = parsePatch(patch);
  const judged = judgeEntries(entries, policy, {
    patchBytes: patch.length,
    allPaths: listingPaths(listing.stdout).map((path) => path.toString("utf8")),
    objectFormat,
    addedLines: parsed.bytes.length > policy.maxPatchBytes ? null : addedLinesPerFile(parsed, changes.length),
  });
  return judged.violations;
}

/** Each change's new blob, when it is a regular file no bigger than `maxBytes` (the rule book reads only those). */
async function readBlobs(target: GitTarget, changes: readonly RawChange[], maxBytes: number): Promise<(SafeRead | undefined)[]> {
  const wanted = changes.filter((change) => change.status !== "D" && (change.newMode === "100644" || change.newMode === "100755"));
  if (wanted.length === 0) return changes.map(() => undefined);
  const check = await git(target, ["cat-file", "--batch-check=%(objectsize)"], {
    input: `${wanted.map((change) => change.newId).join("\n")}\n`,
  });
  // One line per id: its size, or `<id> missing`, which reads as NaN.
  const sizes = check.stdout.toString("utf8").split("\n").map(Number);
  const bySize = new Map(wanted.map((change, index) => [change, sizes[index] ?? Number.NaN]));
  const reads: (SafeRead | undefined)[] = [];
  for (const change of changes) {
    const size = bySize.get(change);
    if (size === undefined) reads.push(undefined);
    else if (!Number.isFinite(size)) reads.push({ kind: "unreadable", message: "git has no such blob" });
    else if (size > maxBytes) reads.push({ kind: "too_large", size });
    else reads.push({ kind: "bytes", bytes: (await git(target, ["cat-file", "blob", change.newId], { maxBuffer: maxBytes + 1 })).stdout });
  }
  return reads;
}
