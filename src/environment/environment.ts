import { type BigIntStats, lstatSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { EnvironmentRecord } from "./record.js";
import { type TreeStamps, stampTrees, stampTreesInBackground } from "./tree-stamps.js";

/**
 * A base environment: the base commit checked out and set up once, never written again. `tree/` (tracked files
 * plus what setup made), `home/` (the HOME setup ran with), `index` (handoff's index of tree/, stat data included),
 * `environment.json`. Workspaces are views of it (view.ts); only handoff reads it directly.
 */
export interface BaseEnvironment {
  readonly key: string;
  readonly dir: string;
  readonly tree: string;
  readonly home: string;
  /** The index of tree/ and its mtime (git's racy check compares file mtimes with it). */
  readonly index: { readonly bytes: Buffer; readonly mtimeMs: number };
  readonly record: EnvironmentRecord;
  /** Taken from the cache: this run ran no setup for it. */
  readonly reused: boolean;
}

export const ENVIRONMENT_FILES = { tree: "tree", home: "home", index: "index", record: "environment.json" } as const;

/** The environment in `dir` as a run uses it (its record already read and checked by the cache). */
export function loadEnvironment(dir: string, record: EnvironmentRecord, how: "built" | "reused"): BaseEnvironment {
  const reused = how === "reused";
  const indexPath = join(dir, ENVIRONMENT_FILES.index);
  return {
    key: record.key,
    dir,
    tree: join(dir, ENVIRONMENT_FILES.tree),
    home: join(dir, ENVIRONMENT_FILES.home),
    index: { bytes: readFileSync(indexPath), mtimeMs: statSync(indexPath).mtimeMs },
    record,
    reused,
  };
}

/**
 * The lstat fingerprint of an environment's tree/ and home/: type, mode, size, mtime, ctime and inode of every
 * entry (tree-stamps.ts, one `find` process). ctime cannot be put back from user space, so any write since the build shows.
 */
export function fingerprintEnvironment(dir: string): EnvironmentFingerprint {
  return fingerprintOf(stampTrees(dir, [ENVIRONMENT_FILES.tree, ENVIRONMENT_FILES.home]));
}

/** `fingerprintEnvironment`, its walk in a child the event loop does not wait on. */
export async function fingerprintEnvironmentInBackground(dir: string): Promise<EnvironmentFingerprint> {
  return fingerprintOf(await stampTreesInBackground(dir, [ENVIRONMENT_FILES.tree, ENVIRONMENT_FILES.home]));
}

/** What the record keeps of an environment's stamps. */
export type EnvironmentFingerprint = Pick<EnvironmentRecord, "fingerprint" | "sizeBytes" | "entries" | "findDigest" | "newestCtimeNs">;

function fingerprintOf(stamps: TreeStamps): EnvironmentFingerprint {
  return {
    fingerprint: stamps.digest,
    sizeBytes: stamps.sizeBytes,
    entries: stamps.entries,
    ...(stamps.findDigest !== null ? { findDigest: stamps.findDigest, newestCtimeNs: String(stamps.newestCtimeNs) } : {}),
  };
}

/** The stamps a record keeps, to compare a check's find with (null for a record from before they were kept). */
function recordedStamps(record: EnvironmentRecord): TreeStamps | null {
  if (record.findDigest === undefined || record.newestCtimeNs === undefined) return null;
  return {
    digest: record.fingerprint,
    newestCtimeNs: BigInt(record.newestCtimeNs),
    entries: record.entries,
    sizeBytes: record.sizeBytes,
    readBy: "find",
    findDigest: record.findDigest,
  };
}

/**
 * What a run knows of its environment from the moment it took it, held in memory where no agent can write: the
 * environment directory's inode and ctime (set by the commit's rename, and by nothing else a build does after it).
 */
export interface EnvironmentSeal {
  readonly inode: bigint;
  readonly sealedNs: bigint;
}

/** The check of an environment: the seal it was found with, or why it cannot be used. */
export type EnvironmentCheck =
  /** `stamps`: what the check read, for the run's next check of the same environment. */
  | { readonly kind: "sound"; readonly seal: EnvironmentSeal; readonly stamps: TreeStamps }
  | { readonly kind: "unsound"; readonly why: string };

/**
 * Whether an environment is the one that was built. Its directory's ctime is the moment its build was committed (the
 * rename into the cache sets it; nothing after it adds or removes an entry there). Every entry of tree/ and home/,
 * the index and environment.json must be older than that: a write, a chmod, a rename or a link sets an inode's ctime
 * to now, and no process can set it back. So an environment found with a newer entry was written after its commit.
 * An environment re-made whole (copied, edited, its fingerprint recomputed, renamed into place) has a newer commit
 * time instead, so it must also be newer than `trustedAfter`, the end of the last run without the sandbox (whose agent
 * could write the cache: cache-store.ts, trustedAfter), and, when the run took it already, match the seal the run
 * holds in memory. One lstat walk, the one the fingerprint needs, in one `find` process (tree-stamps.ts; docs/environment.md).
 */
export function checkEnvironment(
  dir: string,
  record: EnvironmentRecord,
  against: { readonly trustedAfter: bigint | null } | { readonly seal: EnvironmentSeal },
): EnvironmentCheck {
  const sealed = sealOf(dir, record, against);
  if (sealed.kind === "unsound") return sealed;
  return judgeStamps(dir, record, sealed.seal, () =>
    stampTrees(dir, [ENVIRONMENT_FILES.tree, ENVIRONMENT_FILES.home], "find", recordedStamps(record)),
  );
}

/**
 * `checkEnvironment` with its walk in a child the event loop does not wait on (tree-stamps.ts): the same check.
 * `known`: the stamps an earlier check of this run read (held in its memory), else the record's.
 */
export async function checkEnvironmentInBackground(
  dir: string,
  record: EnvironmentRecord,
  against: { readonly trustedAfter: bigint | null } | { readonly seal: EnvironmentSeal },
  known: TreeStamps | null = null,
): Promise<EnvironmentCheck> {
  const sealed = sealOf(dir, record, against);
  if (sealed.kind === "unsound") return sealed;
  let stamps: TreeStamps | Error;
  try {
    stamps = await stampTreesInBackground(dir, [ENVIRONMENT_FILES.tree, ENVIRONMENT_FILES.home], known ?? recordedStamps(record));
  } catch (error) {
    stamps = error as Error;
  }
  return judgeStamps(dir, record, sealed.seal, () => {
    if (stamps instanceof Error) throw stamps;
    return stamps;
  });
}

/** The directory's inode and ctime, read before its entries are: compared with the run's seal or `trustedAfter`. */
function sealOf(
  dir: string,
  record: EnvironmentRecord,
  against: { readonly trustedAfter: bigint | null } | { readonly seal: EnvironmentSeal },
): { readonly kind: "sealed"; readonly seal: EnvironmentSeal } | Extract<EnvironmentCheck, { kind: "unsound" }> {
  const named = nameOf(record);
  let root: BigIntStats;
  try {
    root = lstatSync(dir, { bigint: true });
  } catch {
    return { kind: "unsound", why: `${named} is gone from the cache` };
  }
  const seal = { inode: root.ino, sealedNs: root.ctimeNs };
  if ("seal" in against && (seal.inode !== against.seal.inode || seal.sealedNs !== against.seal.sealedNs))
    return { kind: "unsound", why: `${named} was replaced or written after this run took it` };
  if ("trustedAfter" in against) {
    if (against.trustedAfter === null)
      return {
        kind: "unsound",
        why: `${named} cannot be trusted while a run without the sandbox is in progress (its agent can write the cache)`,
      };
    if (seal.sealedNs <= against.trustedAfter)
      return { kind: "unsound", why: `${named} was committed before a run without the sandbox ended (its agent could write the cache)` };
  }
  return { kind: "sealed", seal };
}

/** Every entry strictly older than the seal, and the fingerprint the record's: the stamps read after the seal. */
function judgeStamps(dir: string, record: EnvironmentRecord, seal: EnvironmentSeal, read: () => TreeStamps): EnvironmentCheck {
  const named = nameOf(record);
  let newest = 0n;
  let fingerprint: string;
  let stamps: TreeStamps;
  try {
    stamps = read();
    newest = stamps.newestCtimeNs;
    fingerprint = stamps.digest;
    for (const file of [ENVIRONMENT_FILES.tree, ENVIRONMENT_FILES.home, ENVIRONMENT_FILES.index, ENVIRONMENT_FILES.record]) {
      const stats = lstatSync(join(dir, file), { bigint: true });
      if (stats.ctimeNs > newest) newest = stats.ctimeNs;
    }
  } catch (error) {
    return { kind: "unsound", why: `${named} cannot be read whole (${(error as NodeJS.ErrnoException).code ?? "error"})` };
  }
  // Strictly older: the commit waits for the clock to pass its last write (cache-store.ts), so a write in the commit's own tick shows.
  if (newest >= seal.sealedNs) return { kind: "unsound", why: `${named} was modified after it was built` };
  if (fingerprint !== record.fingerprint) return { kind: "unsound", why: `${named} was modified after it was built` };
  return { kind: "sound", seal, stamps };
}

function nameOf(record: EnvironmentRecord): string {
  return `the base environment ${record.key.slice(0, 12)}`;
}
