import { createHash } from "node:crypto";
import { displayPath, walkTreeYielding } from "../lib/fs-walk.js";
import { git, gitText } from "../process/git.js";
import { readFileSafely } from "../lib/safe-read.js";
import { SOURCE_STATUS_ARGS, type SourceRepo, parsePorcelainV2, sourceTarget } from "./source-repo.js";
import { StatTable } from "./stat-table.js";

/**
 * Gate 2's source invariant: what the user's repository looked like before the run, compared again after the
 * agent and at the very end. Reads only (`--no-optional-locks`: a plain `git status` would rewrite the index).
 * Stat tuples include ctime and inode, which user space cannot restore, so a same-size write with its mtime
 * put back is still caught (docs/threat-model.md S2).
 */
export interface SourceSnapshot {
  readonly head: string;
  readonly symbolicHead: string;
  readonly refsDigest: string;
  readonly statusDigest: string;
  /** Work tree (ignored files included) and git dir: latin1 path → stat tuple (+ content hash where taken). */
  readonly entries: StatTable;
}

/** Files whose bytes are hashed as well as stat'ed: git's control files. */
const HASHED_GIT_FILES = new Set(["HEAD", "config", "index", "packed-refs", "FETCH_HEAD", "ORIG_HEAD", "shallow"]);
const MAX_HASHED_BYTES = 64 * 1024 * 1024;

function sha256(bytes: Buffer | string): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function hashFile(abs: Buffer | string): string {
  const read = readFileSafely(abs, MAX_HASHED_BYTES);
  return read.kind === "bytes" ? sha256(read.bytes) : read.kind;
}

/** With `signal` (the first snapshot only), a cancel kills the git calls and stops the walk at its next pause: it throws. */
export async function takeSourceSnapshot(source: SourceRepo, signal?: AbortSignal): Promise<SourceSnapshot> {
  const target = sourceTarget(source);
  // git runs beside the stat walk below (two cores; the walk pauses only to let a cancel in): status costs no extra wall time.
  const answers = Promise.all([
    // The commit, then the checked-out branch (`HEAD` when detached); exit 128 if HEAD no longer resolves.
    git(target, ["rev-parse", "HEAD", "--symbolic-full-name", "HEAD"], { okExitCodes: [128], signal }),
    gitText(target, ["for-each-ref", "--format=%(objectname) %(refname)"], { signal }),
    git(target, [...SOURCE_STATUS_ARGS, "--ignored"], { signal }),
  ]);
  answers.catch(() => {}); // awaited below; a walk that throws first must not leave it unhandled
  const entries = new StatTable();

  const relativeGitDir = source.gitDir.startsWith(`${source.topLevel}/`) ? source.gitDir.slice(source.topLevel.length + 1) : null;
  await walkTreeYielding(source.topLevel, {
    signal,
    skipTopLevel: relativeGitDir === ".git" ? [".git"] : [],
    onEntry: ({ relPath, stats }) => {
      const key = relPath.toString("latin1");
      if (relativeGitDir && relativeGitDir !== ".git" && key === relativeGitDir) return "skip";
      entries.add(key, stats);
    },
  });

  const gitDirs = source.commonDir === source.gitDir ? [source.gitDir] : [source.gitDir, source.commonDir];
  for (const [index, dir] of gitDirs.entries()) {
    const label = index === 0 ? ".git" : ".git(common)";
    await walkTreeYielding(dir, {
      signal,
      onEntry: ({ relPath, absPath, stats }) => {
        const rel = relPath.toString("latin1");
        entries.add(`${label}/${rel}`, stats);
        if (stats.isFile() && (HASHED_GIT_FILES.has(rel) || rel.startsWith("hooks/") || rel.startsWith("info/"))) {
          entries.setHash(`${label}/${rel}`, hashFile(absPath));
        }
      },
    });
  }

  const [heads, refs, status] = await answers;
  const topLevel = Buffer.from(`${source.topLevel}/`);
  const [head = "", symbolicHead = ""] =
    heads.exitCode === 0 ? heads.stdout.toString("utf8").trim().split("\n") : [`(HEAD does not resolve: exit ${heads.exitCode})`];
  // Dirty and untracked files: stat cannot vouch for their bytes against the index, so hash them.
  for (const entry of parsePorcelainV2(status.stdout)) {
    if (entry.kind === "ignored") continue;
    const key = entry.path.toString("latin1");
    if (entries.isFile(key)) entries.setHash(key, hashFile(Buffer.concat([topLevel, entry.path])));
  }

  return {
    head,
    symbolicHead,
    refsDigest: sha256(refs),
    statusDigest: sha256(status.stdout),
    entries,
  };
}

/** What changed between two snapshots, as paths a person can read. Empty when the source held. */
export function compareSnapshots(before: SourceSnapshot, after: SourceSnapshot): string[] {
  const changed: string[] = [];
  if (before.head !== after.head) changed.push("(HEAD commit)");
  if (before.symbolicHead !== after.symbolicHead) changed.push("(checked-out branch)");
  if (before.refsDigest !== after.refsDigest) changed.push("(refs)");
  for (const key of before.entries.differences(after.entries)) changed.push(displayPath(Buffer.from(key, "latin1")));
  if (changed.length === 0 && before.statusDigest !== after.statusDigest) changed.push("(git status)");
  return changed;
}
