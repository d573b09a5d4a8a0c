import { realpathSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { GitCommandError, UsageError } from "../lib/errors.js";
import { type GitTarget, git, splitNul } from "../process/git.js";
import { displayPath } from "../lib/fs-walk.js";
import { filterOverrides, pathsUnderFilter, readFilterDrivers } from "./source-filters.js";

/** The user's repository, as handoff found it before the run. Read-only for the whole run. */
export interface SourceRepo {
  /** Real path of the work tree's top level. */
  readonly topLevel: string;
  /** Absolute git dir (per-worktree) and common dir (objects, refs). */
  readonly gitDir: string;
  readonly commonDir: string;
  readonly objectFormat: "sha1" | "sha256";
  /** Commit HEAD resolved to when the run started: the base of everything. */
  readonly baseCommit: string;
  /** The filter drivers the source's config defines: switched off in every git call on the source (source-filters.ts). */
  readonly filterDrivers: readonly string[];
}

/** Git calls on the source: explicit git dir and work tree, run from the top level, the source's filters off. */
export function sourceTarget(source: Pick<SourceRepo, "gitDir" | "topLevel" | "filterDrivers">): GitTarget {
  return { gitDir: source.gitDir, workTree: source.topLevel, cwd: source.topLevel, config: filterOverrides(source.filterDrivers) };
}

/** Finds the repository at `path` (discovery is fine here: it is the user's own repo, named by the user). */
export async function inspectSource(path: string): Promise<SourceRepo> {
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    throw new UsageError("not_a_repository", `${path}: no such directory`);
  }
  const { format, topLevel, gitDir, commonDirRaw } = (await locateAtOnce(real)) ?? (await locateStepByStep(path, real));
  const commonDir = isAbsolute(commonDirRaw) ? commonDirRaw : resolve(real, commonDirRaw || ".git");
  const target = { gitDir, workTree: topLevel, cwd: topLevel };
  // Read beside HEAD; its failure is thrown where it always was, after HEAD's.
  const filterDrivers = readFilterDrivers(target);
  filterDrivers.catch(() => {});
  const head = await git(target, ["rev-parse", "--verify", "-q", "HEAD^{commit}"], { okExitCodes: [1] });
  const baseCommit = head.stdout.toString("utf8").trim();
  if (head.exitCode !== 0 || !baseCommit) {
    throw new UsageError("no_head", `${topLevel} has no commit at HEAD yet; commit something for the agent to start from`);
  }
  return {
    topLevel: realpathSync(topLevel),
    gitDir: realpathSync(gitDir),
    commonDir: realpathSync(commonDir),
    objectFormat: format === "sha256" ? "sha256" : "sha1",
    baseCommit,
    filterDrivers: await filterDrivers,
  };
}

/** Where the repository's parts are, as rev-parse prints them (the common dir may be relative to `real`). */
interface Located {
  readonly format: string | undefined;
  readonly topLevel: string;
  readonly gitDir: string;
  readonly commonDirRaw: string;
}

const LOCATE_FLAGS = [
  "--is-bare-repository",
  "--is-inside-git-dir",
  "--show-object-format",
  "--show-toplevel",
  "--absolute-git-dir",
  "--git-common-dir",
];

/**
 * The usual case in one git call instead of four: a work tree, paths without a newline. Anything else (an error, a
 * bare repository, a git dir, git failing, a path whose newline makes the lines ambiguous) is null, and
 * locateStepByStep finds it and words its error exactly as before.
 */
async function locateAtOnce(real: string): Promise<Located | null> {
  const answer = await git({ cwd: real }, ["rev-parse", ...LOCATE_FLAGS], { okExitCodes: [128] }).catch(() => null);
  if (answer === null) return null;
  const lines = answer.stdout.toString("utf8").split("\n");
  if (answer.exitCode !== 0 || lines.length !== LOCATE_FLAGS.length + 1 || lines.at(-1) !== "") return null;
  const [bare, insideGitDir, format, topLevel, gitDir, commonDirRaw] = lines as [string, string, string, string, string, string];
  if (bare !== "false" || insideGitDir !== "false" || !topLevel || !gitDir) return null;
  return { format, topLevel, gitDir, commonDirRaw };
}

/** The probe first (its refusal, a bare repository or a git dir are usage errors), then one path per call. */
async function locateStepByStep(path: string, real: string): Promise<Located> {
  const probe = await git({ cwd: real }, ["rev-parse", "--is-bare-repository", "--is-inside-git-dir", "--show-object-format"], {
    okExitCodes: [128],
  });
  if (probe.exitCode !== 0) throw refusal(path, probe.stderr);
  const [bare, insideGitDir, format] = probe.stdout.toString("utf8").split("\n");
  if (bare === "true") throw new UsageError("bare_repository", `${path} is a bare repository; handoff needs a work tree`);
  if (insideGitDir === "true")
    throw new UsageError("inside_git_dir", `${path} is inside a repository's git directory; name its work tree instead`);
  // One path per call, only the final newline stripped: a path may hold a newline of its own.
  const [topLevel, gitDir, commonDirRaw] = await Promise.all(
    ["--show-toplevel", "--absolute-git-dir", "--git-common-dir"].map(async (flag) =>
      (await git({ cwd: real }, ["rev-parse", flag])).stdout.toString("utf8").replace(/\n$/, ""),
    ),
  );
  if (!topLevel) throw new UsageError("bare_repository", `${path} has no work tree; handoff needs one`);
  return { format, topLevel, gitDir: gitDir!, commonDirRaw: commonDirRaw ?? "" };
}

/**
 * The real path of the top level of the work tree `path` is in, or null when it is in none (or git will not work
 * there): what `handoff list`, `show` and `apply` mean by "the current repository".
 */
export async function findTopLevel(path: string): Promise<string | null> {
  try {
    const found = await git({ cwd: realpathSync(path) }, ["rev-parse", "--show-toplevel"], { okExitCodes: [128] });
    const topLevel = found.stdout.toString("utf8").replace(/\n$/, "");
    return found.exitCode === 0 && topLevel !== "" ? realpathSync(topLevel) : null;
  } catch {
    return null;
  }
}

/**
 * Why git would not work in `path`, as a usage error. A repository owned by another user is refused as git refuses
 * it ("dubious ownership"): handoff's git reads no global config, so your `safe.directory` does not apply, on
 * purpose: that user controls the repository's `.git/config` (threat-model.md).
 */
function refusal(path: string, stderr: string): UsageError {
  if (/dubious ownership/.test(stderr)) {
    return new UsageError(
      "repository_owned_by_another_user",
      `${path} belongs to another user, and git refuses to work in it (dubious ownership); handoff does not honour safe.directory: run handoff as the repository's owner, or clone it to a directory you own`,
    );
  }
  const said =
    stderr
      .trim()
      .split("\n")[0]
      ?.replace(/^fatal: /, "") ?? "";
  return new UsageError(
    "not_a_repository",
    `${path} is not inside a git repository${said && !/not a git repository/.test(said) ? ` (git: ${said.slice(0, 200)})` : ""}`,
  );
}

/** One entry of `git status --porcelain=v2 -z`. */
export interface StatusEntry {
  readonly kind: "changed" | "renamed" | "unmerged" | "untracked" | "ignored";
  readonly path: Buffer;
  /** The XY field (index, work tree) of changed, renamed and unmerged entries; empty otherwise. */
  readonly xy: string;
}

export function parsePorcelainV2(output: Buffer): StatusEntry[] {
  const records = splitNul(output);
  const entries: StatusEntry[] = [];
  const pathAfterFields = (record: Buffer, fields: number) => {
    let at = 0;
    for (let i = 0; i < fields; i++) at = record.indexOf(0x20, at) + 1;
    return record.subarray(at);
  };
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!;
    switch (String.fromCharCode(record[0] ?? 0)) {
      case "1":
        entries.push({ kind: "changed", path: pathAfterFields(record, 8), xy: record.toString("latin1", 2, 4) });
        break;
      case "2":
        entries.push({ kind: "renamed", path: pathAfterFields(record, 9), xy: record.toString("latin1", 2, 4) });
        i++; // the original path follows as its own record
        break;
      case "u":
        entries.push({ kind: "unmerged", path: pathAfterFields(record, 10), xy: record.toString("latin1", 2, 4) });
        break;
      case "?":
        entries.push({ kind: "untracked", path: record.subarray(2), xy: "" });
        break;
      case "!":
        entries.push({ kind: "ignored", path: record.subarray(2), xy: "" });
        break;
      default:
        break;
    }
  }
  return entries;
}

/**
 * `git status` of the source as handoff runs it: read-only, the source's filters off (source-filters.ts), and no
 * recursion into submodules, whatever `submodule.<name>.ignore` says (a submodule's own config could run a filter).
 */
export const SOURCE_STATUS_ARGS = [
  "--no-optional-locks",
  "status",
  "--porcelain=v2",
  "-z",
  "--untracked-files=all",
  "--ignore-submodules=all",
] as const;

export interface SourceStatus {
  /** Paths with uncommitted changes (ignored files do not count). */
  readonly dirty: string[];
  /** Tracked files under one of the source's filters that git, with the filter off, sees as modified: maybe they are not. */
  readonly unverified: string[];
}

/** Uncommitted changes of the source before a run; a git failure is a one-line usage error, never a crash. */
export async function readSourceStatus(source: Pick<SourceRepo, "gitDir" | "topLevel" | "filterDrivers">): Promise<SourceStatus> {
  const target = sourceTarget(source);
  let entries: StatusEntry[];
  let filtered: Set<string>;
  try {
    entries = parsePorcelainV2((await git(target, SOURCE_STATUS_ARGS)).stdout);
    // Only a work-tree change (index = HEAD) can be the filter's doing; a staged change or a new file is real.
    const suspects = entries.filter((entry) => entry.kind === "changed" && entry.xy === ".M").map((entry) => entry.path);
    filtered = await pathsUnderFilter(target, suspects, source.filterDrivers);
  } catch (error) {
    if (!(error instanceof GitCommandError)) throw error;
    const why = error.stderr.trim().split("\n").slice(-1)[0] || `exit ${error.exitCode ?? "signal"}`;
    throw new UsageError("source_unreadable", `git cannot read the status of ${source.topLevel}: ${why}`, { cause: error });
  }
  const dirty: string[] = [];
  const unverified: string[] = [];
  for (const entry of entries) {
    (filtered.has(entry.path.toString("latin1")) ? unverified : dirty).push(displayPath(entry.path));
  }
  return { dirty, unverified };
}

/** Paths with uncommitted changes (ignored files do not count). */
export async function listDirtyPaths(source: Pick<SourceRepo, "gitDir" | "topLevel" | "filterDrivers">): Promise<string[]> {
  return (await readSourceStatus(source)).dirty;
}
