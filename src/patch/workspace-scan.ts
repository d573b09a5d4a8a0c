import type { BigIntStats } from "node:fs";
import { type BaseTree, EMPTY_BASE } from "../clone/base-tree.js";
import { type DirectoryListings, PATH_MAX, fileType, walkTreeYielding } from "../lib/fs-walk.js";
import type { PolicyFinding, ViolationRule } from "./rules/findings.js";
import { checkPathName, foldLikeNtfsAndHfs, printablePath } from "./rules/path-names.js";
import type { PatchPolicy } from "./rules/policy.js";

/**
 * The lstat-only walk of the workspace after the agent is gone and before git touches it (docs/gates.md, gate 3 step 3):
 * special files, nested repositories, hard links, names git would refuse, oversized files, runaway trees, and
 * anything written below a submodule's path (git stages nothing there). Nothing is opened or followed. Findings
 * carry their raw path so staging can leave them out. The limits apply to what the agent changed: a file the base
 * checkout wrote, still holding its bytes, is not oversized; a directory the base has is not too deep; the entry
 * limit is raised by the base's number of files.
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

/**
 * Names git opens by itself wherever it meets them in the work tree, whatever the pathspec excludes: `ls-files`
 * and `add` read every `.gitignore`, `add` every `.gitattributes`. git opens them without O_NONBLOCK (a FIFO blocks
 * it for ever; git calls have no timeout) and reads a `.gitignore` whole into memory (a 100 GB sparse one is a
 * memory bomb). git (2.32+) does not follow a symlink here, so only special and oversized files are a hazard.
 */
const READ_BY_GIT = new Set([".gitignore", ".gitattributes"]);

/**
 * A symlink git refuses to stage (verify_path, CVE-2018-11235): one whose path has a component read as
 * `.gitmodules` by git, NTFS (`.gitmodules.`, `.gitmodules::$DATA`, short names `gitmod~1`, `gi7eba~1`) or HFS+
 * (ignorable code points). `git add -A` then fails as a whole, so it must be left out. A superset is fine: every
 * symlink is rejected anyway.
 */
function gitRefusesSymlink(relPath: Buffer): boolean {
  return relPath
    .toString("utf8")
    .split("/")
    .some((part) => {
      const folded = foldLikeNtfsAndHfs(part);
      return folded === ".gitmodules" || /^g[a-z0-9]{0,5}~[0-9]/u.test(folded);
    });
}

export async function scanWorkspace(
  workTree: string,
  policy: Pick<PatchPolicy, "maxWorkspaceEntries" | "maxDepth" | "maxFileBytes">,
  /** Called at the first finding staging must leave out (git staging early is then stopped at once). */
  onExclusion: () => void = () => {},
  /** Directory names the staging preflight already read (`preflightStaging`). */
  listings?: DirectoryListings,
  /** What the base checkout held (`readBaseTree`): exempt from the limits, and where its submodules are. */
  base: BaseTree = EMPTY_BASE,
  /** A cancelled run: the walk throws at its next pause. */
  signal?: AbortSignal,
  /** Only these paths and what lies below them (an overlay's changes, upper-changes.ts); null: the whole tree. */
  roots: readonly Buffer[] | null = null,
  /** lstat results settling the index took moments before (fs-walk.ts `knownStats`). */
  knownStats?: Map<string, BigIntStats>,
  /** Told of each regular file walked, with its lstat, for settling the index after (racy-index.ts `RacyEntryFiles`). */
  onFileStats?: (relPath: Buffer, stats: BigIntStats) => void,
  /**
   * Directories (relative) whose every path is ignored, as git's list of ignored files says once it is in (staging
   * early): their findings are dropped whatever they are (extract.ts, isUnderIgnored), so what only an lstat could
   * find there (hard links, oversized files) is not looked for. All the rest is: names, nested repositories, special
   * files (by the type the directory tells), the .gitignore and .gitattributes git would read, the limits, and
   * entries that cannot be looked up (fs-walk.ts `walkLightly`).
   */
  allIgnored?: (relPath: Buffer) => boolean,
): Promise<WorkspaceScan> {
  const findings: ScanFinding[] = [];
  let excluding = false;
  // "left out": the entry is kept out of staging (git would refuse it, hang on it, or stage what it should not).
  const add = (rawPath: Buffer, rule: ViolationRule, message: string, staging: "left out" | "kept") => {
    const excludeFromStaging = staging === "left out";
    if (excludeFromStaging && !excluding) {
      excluding = true;
      onExclusion();
    }
    findings.push({ rawPath, path: printablePath(rawPath), rule, message, excludeFromStaging });
  };
  // The first file git would hang or exhaust memory on: extraction must stop before any git call.
  let gitHazard: ScanFinding | null = null;
  const maxFileBytes = BigInt(policy.maxFileBytes);
  // Per submodule path with anything below it: the first such entry and how many.
  const inSubmodules = new Map<string, { first: Buffer; count: number }>();
  // Walking the changed paths alone, the entry limit counts what the base does not have: as in the whole walk, where
  // the limit is raised by the base's entries.
  let added = 0;

  const summary = await walkTreeYielding(workTree, {
    listings,
    signal,
    roots: roots ?? undefined,
    knownStats,
    skipTopLevel: [".git"],
    maxEntries: policy.maxWorkspaceEntries + base.entries,
    maxDepth: policy.maxDepth,
    entersPastDepth: (relPath) => base.hasDirectory(relPath),
    walkLightly: allIgnored,
    lstatNames: READ_BY_GIT,
    onLightEntry: ({ relPath, absPath, type }) => void look(relPath, absPath, type, null),
    onEntry: ({ relPath, absPath, stats }) => look(relPath, absPath, fileType(stats), stats),
  });

  /** One entry's findings; `stats` null: walked lightly, so only what its type and name tell. */
  function look(relPath: Buffer, absPath: Buffer, type: ReturnType<typeof fileType>, stats: BigIntStats | null): "skip" | undefined {
    if (roots !== null && !base.tracks(relPath)) added++;
    const name = relPath.subarray(relPath.lastIndexOf(0x2f) + 1);
    const nameFindings = checkPathName(name).filter((f) => f.rule === "git_metadata_path" || f.rule === "unsafe_path");
    // Exactly `.git`: a case or Unicode variant is no repository to git on Linux, but a `.git` to macOS and
    // Windows, and is reported by its own name below (git_metadata_path).
    if (name.toString("latin1") === ".git") {
      // The repository is the directory holding `.git` (never the top level: that `.git` is skipped).
      add(relPath.subarray(0, relPath.lastIndexOf(0x2f)), "nested_repository", "a nested git repository or gitfile", "left out");
      return "skip";
    }
    if (nameFindings.length > 0) {
      // git itself refuses these names and would fail the whole staging step. Still walked into: git's own
      // walk enters such a directory and reads the .gitignore files in it.
      add(relPath, nameFindings[0]!.rule as ViolationRule, nameFindings[0]!.message, "left out");
      return;
    }
    if (type === "file" && stats && onFileStats) onFileStats(relPath, stats);
    const what = type === "char" || type === "block" ? `${type} device` : type;
    const special = type !== "file" && type !== "dir" && type !== "symlink";
    const oversized = type === "file" && stats !== null && stats.size > maxFileBytes && !base.unchanged(relPath, absPath, stats);
    if (base.gitlinks.size > 0 && type !== "dir") {
      const submodule = enclosingSubmodule(relPath, base.gitlinks);
      if (submodule !== null) {
        const seen = inSubmodules.get(submodule);
        if (seen) seen.count++;
        else inSubmodules.set(submodule, { first: relPath, count: 1 });
      }
    }
    const baseName = name.toString("latin1");
    if (gitHazard === null && READ_BY_GIT.has(baseName) && (special || oversized)) {
      gitHazard = special
        ? fatalFinding(
            relPath,
            "special_file",
            `a ${what} named ${baseName}: git opens each ${baseName} it meets and would block on it; extraction stopped before git ran`,
          )
        : fatalFinding(
            relPath,
            "file_too_large",
            `${stats?.size} bytes, over the ${policy.maxFileBytes}-byte limit: git reads each ${baseName} whole into memory; extraction stopped before git ran`,
          );
    }
    if (type === "symlink" && gitRefusesSymlink(relPath))
      add(relPath, "symlink", "a symbolic link named like .gitmodules, which git refuses to stage", "left out");
    else if (special) add(relPath, "special_file", `a ${what} in the workspace`, "left out");
    else if (type === "file" && stats !== null && stats.nlink > 1n)
      add(relPath, "hard_link", `a hard link (${stats.nlink} names for one file)`, "left out");
    else if (oversized) add(relPath, "file_too_large", `${stats?.size} bytes, over the ${policy.maxFileBytes}-byte limit`, "left out");
    return;
  }

  for (const [submodule, { first, count }] of inSubmodules) {
    // Not left out of staging: git stages nothing below a gitlink anyway. The reviewer must hear of it.
    const where = `written inside the submodule '${printablePath(Buffer.from(submodule, "latin1"))}'${count > 1 ? `, one of ${count} entries there` : ""}`;
    const message = `${where}: git stages nothing below a submodule's path, so the patch cannot carry ${count > 1 ? "them" : "it"}`;
    add(first, "submodule", message, "kept");
  }

  let fatal: ScanFinding | null = null;
  if (summary.cutShort || added > policy.maxWorkspaceEntries) {
    fatal = fatalFinding(Buffer.alloc(0), "workspace_too_large", `more than ${policy.maxWorkspaceEntries} entries in the workspace`);
  } else if (summary.tooDeep.length > 0) {
    fatal = fatalFinding(summary.tooDeep[0]!, "workspace_too_deep", `directories nested deeper than ${policy.maxDepth}`);
  } else if (summary.tooLong.length > 0) {
    // git skips such a path with a warning and exit 0: the file would silently be missing from the patch.
    fatal = fatalFinding(
      summary.tooLong[0]!,
      "workspace_too_deep",
      `a path too long to read: with the workspace directory it reaches PATH_MAX (${PATH_MAX} bytes)`,
    );
  } else if (summary.unreadable.length > 0) {
    // git warns about a directory it cannot read and exits 0: what is inside would silently be missing from the patch.
    fatal = fatalFinding(
      summary.unreadable[0]!,
      "unreadable_path",
      "handoff cannot read this entry, so what it holds could not be judged or staged",
    );
  } else {
    fatal = gitHazard;
  }
  return { findings, entries: summary.entries, fatal };
}

/** A finding that stops extraction: nothing is staged, so nothing needs excluding. */
function fatalFinding(rawPath: Buffer, rule: ViolationRule, message: string): ScanFinding {
  return { rawPath, path: printablePath(rawPath), rule, message, excludeFromStaging: false };
}

/** The base's submodule path that `relPath` lies below, or null. */
function enclosingSubmodule(relPath: Buffer, gitlinks: ReadonlySet<string>): string | null {
  const text = relPath.toString("latin1");
  let at = text.indexOf("/");
  while (at !== -1) {
    const prefix = text.slice(0, at);
    if (gitlinks.has(prefix)) return prefix;
    at = text.indexOf("/", at + 1);
  }
  return null;
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
