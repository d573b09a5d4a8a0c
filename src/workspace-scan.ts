import { fileType, walkTree } from "./fs-walk.js";
import type { PolicyFinding, ViolationRule } from "./findings.js";
import { checkPathName, printablePath } from "./path-names.js";
import type { PatchPolicy } from "./policy.js";

/**
 * The lstat-only walk of the workspace after the agent is gone and before git touches it (security.md §1 P4):
 * special files, nested repositories, hard links, names git would refuse, oversized files, runaway trees.
 * Nothing is opened or followed. Findings carry their raw path so staging can leave them out.
 */
export interface ScanFinding extends PolicyFinding {
  readonly rawPath: Buffer;
  readonly rule: ViolationRule;
  /** Leave this path out of staging (reading or adding it is unsafe or would fail). */
  readonly excludeFromStaging: boolean;
}

export interface WorkspaceScan {
  readonly findings: readonly ScanFinding[];
  readonly entries: number;
  /** The walk stopped early: the workspace is too large or too deep to judge. */
  readonly fatal: ScanFinding | null;
}

export function scanWorkspace(workTree: string, policy: Pick<PatchPolicy, "maxWorkspaceEntries" | "maxDepth" | "maxFileBytes">): WorkspaceScan {
  const findings: ScanFinding[] = [];
  const add = (rawPath: Buffer, rule: ViolationRule, message: string, excludeFromStaging: boolean) =>
    findings.push({ rawPath, path: printablePath(rawPath), rule, message, excludeFromStaging });

  const summary = walkTree(workTree, {
    skipTopLevel: [".git"],
    maxEntries: policy.maxWorkspaceEntries,
    maxDepth: policy.maxDepth,
    onEntry: ({ relPath, stats }) => {
      const name = relPath.subarray(relPath.lastIndexOf(0x2f) + 1);
      const nameFindings = checkPathName(name).filter((f) => f.rule === "git_metadata_path" || f.rule === "unsafe_path");
      // Exactly `.git`: a case or Unicode variant is no repository to git on Linux, but a `.git` to macOS and
      // Windows, and is reported by its own name below (git_metadata_path).
      if (name.toString("latin1") === ".git") {
        // The repository is the directory holding `.git` (never the top level: that `.git` is skipped).
        add(relPath.subarray(0, relPath.lastIndexOf(0x2f)), "nested_repository", "a nested git repository or gitfile", true);
        return "skip";
      }
      if (nameFindings.length > 0) {
        // git itself refuses these names and would fail the whole staging step.
        add(relPath, nameFindings[0]!.rule as ViolationRule, nameFindings[0]!.message, true);
        return "skip";
      }
      const type = fileType(stats);
      switch (type) {
        case "fifo":
        case "socket":
        case "char":
        case "block":
        case "other":
          add(relPath, "special_file", `a ${type === "char" || type === "block" ? `${type} device` : type} in the workspace`, true);
          return;
        case "file":
          if (stats.nlink > 1n) add(relPath, "hard_link", `a hard link (${stats.nlink} names for one file)`, true);
          else if (stats.size > BigInt(policy.maxFileBytes)) {
            add(relPath, "file_too_large", `${stats.size} bytes, over the ${policy.maxFileBytes}-byte limit`, true);
          }
          return;
        case "dir":
        case "symlink":
          return;
      }
    },
  });

  let fatal: ScanFinding | null = null;
  if (summary.cutShort) {
    fatal = { rawPath: Buffer.alloc(0), path: "", rule: "workspace_too_large", message: `more than ${policy.maxWorkspaceEntries} entries in the workspace`, excludeFromStaging: false };
  } else if (summary.tooDeep.length > 0) {
    fatal = { rawPath: summary.tooDeep[0]!, path: printablePath(summary.tooDeep[0]!), rule: "workspace_too_deep", message: `directories nested deeper than ${policy.maxDepth}`, excludeFromStaging: false };
  }
  return { findings, entries: summary.entries, fatal };
}

/** Whether `path` is an ignored entry or lies below an ignored directory (`ls-files --directory` form). */
export function isUnderIgnored(path: Buffer, ignored: ReadonlySet<string>): boolean {
  const text = path.toString("latin1");
  if (ignored.has(text)) return true;
  let at = text.indexOf("/");
  while (at !== -1) {
    if (ignored.has(text.slice(0, at + 1))) return true;
    at = text.indexOf("/", at + 1);
  }
  return false;
}
