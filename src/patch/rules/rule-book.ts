import { createHash } from "node:crypto";
import type { SafeRead } from "../../lib/safe-read.js";
import type { PolicyFinding } from "./findings.js";
import { matchesAnyGlob } from "./glob.js";
import { checkPathName, findCollisions, printablePath, windowsNameWarnings } from "./path-names.js";
import type { CompiledPolicy } from "./policy.js";
import { riskWarnings } from "./risk-paths.js";
import { findSecrets } from "./secrets.js";

/**
 * The patch's rule book: judges the changed files as git staged them, with plain inputs (no workspace, no git), so
 * a rule can be tested on a list of entries. Extraction (../extract.ts) stages the workspace and calls it.
 */
export interface ChangedEntry {
  /** The path as git lists it, raw (a name need not be UTF-8). */
  readonly path: Buffer;
  /** git's status letter: A, M, D, T (R and C are refused). */
  readonly status: string;
  readonly oldMode: string;
  readonly newMode: string;
  /** The staged blob's id, compared with the bytes the workspace holds. */
  readonly newId: string;
  /** Lines added; null for a change git calls binary. */
  readonly additions: number | null;
  /** The file's bytes as the workspace holds them; without it, the rule book asks `readContent`. */
  readonly content?: SafeRead;
}

/** The lines a file's hunks add, with their line numbers in the new file. */
export interface AddedLines {
  readonly lines: readonly string[];
  readonly numbers: readonly number[];
}

export interface PatchJudgement {
  readonly violations: PolicyFinding[];
  readonly warnings: PolicyFinding[];
}

export interface PatchFacts {
  /** The patch's size in bytes. */
  readonly patchBytes: number;
  /** Every path of the staged index, for the collision rule (read only when the patch adds a path). */
  readonly allPaths: Iterable<string>;
  readonly objectFormat: "sha1" | "sha256";
  /** Each file's added lines, in the order of `entries`; null when the patch was not parsed (then whole files are searched). */
  readonly addedLines: readonly AddedLines[] | null;
  /** Reads one entry's bytes when it carries none: files are read one at a time, never all held at once. */
  readonly readContent?: (entry: ChangedEntry) => SafeRead;
}

const BINARY_SNIFF_BYTES = 8000; // git's own heuristic: a NUL in the first 8000 bytes

export function changeKind(status: string): "added" | "modified" | "deleted" {
  return status === "A" ? "added" : status === "D" ? "deleted" : "modified";
}

/** git's object id for these bytes as a blob (what `hash-object --no-filters` prints). */
function blobId(bytes: Buffer, format: "sha1" | "sha256"): string {
  return createHash(format).update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

/** Judges the changed files against the policy; over the file limit, only the first `maxFiles` are judged. */
export function judgeEntries(entries: readonly ChangedEntry[], policy: CompiledPolicy, facts: PatchFacts): PatchJudgement {
  const violations: PolicyFinding[] = [];
  const warnings: PolicyFinding[] = [];
  if (entries.length > policy.maxFiles) {
    violations.push({
      path: "",
      rule: "too_many_files",
      message: `${entries.length} changed files, over the limit of ${policy.maxFiles} (only the first ${policy.maxFiles} are judged and listed)`,
    });
  }
  if (facts.patchBytes > policy.maxPatchBytes) {
    violations.push({
      path: "",
      rule: "patch_too_large",
      message: `the patch is ${facts.patchBytes} bytes, over the limit of ${policy.maxPatchBytes}`,
    });
  }
  const added: string[] = [];
  entries.slice(0, policy.maxFiles).forEach((entry, index) => {
    const nameFindings = checkPathName(entry.path);
    violations.push(...nameFindings);
    const path = printablePath(entry.path);
    const change = changeKind(entry.status);
    if (nameFindings.length > 0) return;
    if (change === "added") added.push(path);
    warnings.push(...windowsNameWarnings(path), ...riskWarnings(path, change));

    if (entry.status.startsWith("R")) violations.push({ path, rule: "rename", message: "a rename" });
    if (entry.status.startsWith("C")) violations.push({ path, rule: "copy", message: "a copy" });
    if (entry.newMode === "120000") violations.push({ path, rule: "symlink", message: "a symbolic link" });
    if (entry.newMode === "160000" || (entry.oldMode === "160000" && entry.status !== "D")) {
      violations.push({ path, rule: "submodule", message: "a submodule (gitlink)" });
    }
    if (entry.newMode === "100755" && entry.oldMode !== "100755") {
      warnings.push({ path, rule: "executable_bit", message: "the file becomes executable" });
    }
    if (policy.allowPatterns.length > 0 && !matchesAnyGlob(path, policy.allowPatterns)) {
      violations.push({ path, rule: "not_allowed_path", message: "outside every --allow pattern" });
    }
    if (matchesAnyGlob(path, policy.denyPatterns)) violations.push({ path, rule: "denied_path", message: "matches a --deny pattern" });

    if (entry.status === "D" || (entry.newMode !== "100644" && entry.newMode !== "100755")) return;
    const read = entry.content ?? facts.readContent?.(entry) ?? { kind: "unreadable", message: "no content given" };
    switch (read.kind) {
      case "too_large":
        violations.push({ path, rule: "file_too_large", message: `${read.size} bytes, over the ${policy.maxFileBytes}-byte limit` });
        return;
      case "not_regular":
      case "unreadable":
        violations.push({ path, rule: "staged_bytes_differ", message: "the file changed or vanished after staging" });
        return;
      case "bytes":
        break;
    }
    if (blobId(read.bytes, facts.objectFormat) !== entry.newId) {
      violations.push({
        path,
        rule: "staged_bytes_differ",
        message: "git stored other bytes than the workspace holds (attributes, eol or filter conversion)",
      });
    }
    if (read.bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0) || entry.additions === null) {
      violations.push({ path, rule: "binary", message: "binary content" });
      return;
    }
    const lines = facts.addedLines?.[index] ?? { lines: read.bytes.toString("utf8").split("\n"), numbers: [] };
    for (const hit of findSecrets(lines.lines, lines.numbers)) {
      violations.push({ path, rule: "secret", message: `looks like a ${hit.kind} (line ${hit.line})` });
    }
  });
  violations.push(...findCollisions(added, facts.allPaths));
  return { violations, warnings };
}
