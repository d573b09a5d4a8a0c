import { type BigIntStats, rmSync } from "node:fs";
import { join } from "node:path";
import { readBaseTree } from "../clone/base-tree.js";
import type { PolicyFinding } from "./rules/findings.js";
import { git, splitNul } from "../process/git.js";
import { printablePath } from "./rules/path-names.js";
import type { CompiledPolicy } from "./rules/policy.js";
import { addedLinesPerFile, parsePatch } from "./patch.js";
import { changeKind, judgeEntries } from "./rules/rule-book.js";
import { createPrivateGitDir, writeIndexCopy } from "../clone/private-git.js";
import { RacyEntryFiles, datedPastRacyEntries } from "../clone/racy-index.js";
import { readFileSafely } from "../lib/safe-read.js";
import type { SourceRepo } from "../clone/source-repo.js";
import type { RawChange } from "./raw-change.js";
import { GIT_OUTPUT_CAP, PartialListingError, listingPathTexts, stageWorkTree } from "./staging.js";
import { readIndexTable } from "../clone/index-entries.js";
import { writePartialIndex } from "./partial-index.js";
import { listIgnoredAmong, restrictable, pathsToStage } from "./changed-paths.js";
import { type StagingPreflight, preflightStaging } from "./staging-preflight.js";
import { isUnderIgnored, scanWorkspace } from "./workspace-scan.js";
import { isToolCache } from "./tool-caches.js";
import { type PristineStore, type Workspace, gitfileTampered, pristineTampered } from "../clone/workspace.js";

/**
 * Gate 3: handoff extracts the patch itself and judges it. The agent's git metadata is never read: a private git
 * dir made now, a copy of the index handoff kept in memory before the agent started, then `add -A` and a diff
 * against the recorded base commit.
 */
export interface PatchFile {
  readonly path: string;
  readonly change: "added" | "modified" | "deleted";
  readonly additions: number;
  readonly deletions: number;
}

export interface Extraction {
  readonly patch: Buffer;
  readonly sha256: string;
  readonly files: readonly PatchFile[];
  readonly violations: readonly PolicyFinding[];
  readonly warnings: readonly PolicyFinding[];
  /** `ls-files -s -z` of the staged index, for the round trip in a fresh checkout. */
  readonly listing: Buffer;
  /** The private git dir, reused by verification. */
  readonly privateGitDir: string;
}

export interface ExtractRequest {
  readonly source: SourceRepo;
  readonly workspace: Workspace;
  readonly policy: CompiledPolicy;
  /** Where handoff may make its private git dir (outside the workspace). */
  readonly privateParent: string;
  /** handoff's pristine object store (base.git), made before the agent ran. */
  readonly pristine: PristineStore;
  /** A cancelled run: every git call under way is killed, the scan stops at its next pause, and extraction throws. */
  readonly signal?: AbortSignal;
  /** What setup left that .gitignore does not cover: ignored here too, never part of the patch. */
  readonly setupOutputs?: readonly string[];
  /**
   * An overlay workspace: the paths the agent changed, read from the upper dir (readUpperChanges). The scan walks,
   * and git stages and lists, only these and what lies below them; empty means nothing changed. Absent or null:
   * the whole work tree.
   */
  readonly changed?: readonly Buffer[] | null;
}

/** With the changed paths known there is little to scan: git stages after the scan, not beside it. */
const NO_EARLY_STAGING: StagingPreflight = { mayStageEarly: false, listings: null };

/** A patch over the limit is still read and kept for review up to this size (or the limit, if that is larger). */
const KEPT_PATCH_BYTES = 64 * 1024 * 1024;

export async function extractPatch(request: ExtractRequest): Promise<Extraction> {
  const { source, workspace, policy } = request;
  const violations: PolicyFinding[] = [];
  const warnings: PolicyFinding[] = [];

  const tampered = gitfileTampered(workspace);
  if (tampered) violations.push({ path: ".git", rule: "git_metadata_tampered", message: tampered });
  const storeTampered = pristineTampered(request.pristine);
  if (storeTampered) violations.push({ path: "", rule: "git_metadata_tampered", message: storeTampered });

  const privateGitMade = createPrivateGitDir(source, request.pristine.path, request.privateParent, "extract", request.setupOutputs);
  privateGitMade.catch(() => {}); // awaited below
  const hashBytes = source.objectFormat === "sha256" ? 32 : 20;
  // One reading of the index kept before the agent: settling, the base tree and the staged listing share it (the
  // settled copy has the base's layout: only sizes and the checksum differ).
  const table = readIndexTable(workspace.baseIndex.bytes, hashBytes);
  // The limits apply to what the agent changed: what the base checkout wrote is read from the index kept before it ran.
  const base = readBaseTree(workspace.baseIndex.bytes, source.objectFormat, table);
  // Telling a deletion git knows from one it never did takes a readable base index; too many paths, or one that
  // is not UTF-8, are not worth or fit for git's pathspecs. Then the whole tree is extracted, as without an overlay.
  const changed = request.changed && table && restrictable(request.changed) ? request.changed : null;
  // Settling lstat's every file the checkout wrote within its last second (often all of them), and no file is lstat'ed
  // twice: for the changed paths alone it goes first (the scan walks little) and the scan reuses its lstats; for the
  // whole tree it goes after the scan, from what the scan's lstats showed of each racy entry's file.
  const lstats = new Map<string, BigIntStats>();
  const racyFiles = new RacyEntryFiles(workspace.baseIndex, table);
  let settledCopy = changed ? racyFiles.settle(workspace.workTree, source.objectFormat, lstats) : null;
  const settled = () => {
    settledCopy ??= racyFiles.settle(workspace.workTree, source.objectFormat);
    return settledCopy;
  };
  const preflight = changed ? NO_EARLY_STAGING : preflightStaging(workspace.workTree, policy, base);
  const privateGit = await privateGitMade;
  const indexFile = join(privateGit.path, "handoff.index");
  const target = { gitDir: privateGit.path, workTree: workspace.workTree, indexFile, cwd: privateGit.path };
  // With the changed paths known, git gets an index of those paths alone (partial-index.ts).
  const writeSettledIndex = () => {
    const copy = settled();
    if (changed && table) writePartialIndex(indexFile, copy, table, hashBytes, changed);
    else writeIndexCopy(indexFile, copy.bytes, copy.mtimeMs);
  };
  const listIgnored = async (signal?: AbortSignal) =>
    changed
      ? listIgnoredAmong(target, changed, signal)
      : splitNul((await git(target, ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"], { signal })).stdout);
  const stage = (exclude: readonly Buffer[], signal?: AbortSignal, paths?: { paths: readonly Buffer[]; force: readonly Buffer[] }) =>
    stageWorkTree({
      gitDir: privateGit.path,
      workTree: workspace.workTree,
      indexFile,
      baseCommit: source.baseCommit,
      exclude,
      paths: paths?.paths,
      force: paths?.force,
      cwd: privateGit.path,
      maxPatchBytes: keptPatchBytes(policy),
      signal,
      // The listing reads modes, ids and paths: the same in the base index as in any copy of it.
      base: table ? { bytes: workspace.baseIndex.bytes, table, hashBytes } : undefined,
      partial: changed ?? undefined,
    });

  // A plainly ordinary workspace lets git stage it while the scan runs (staging-preflight.ts); the first finding
  // staging must leave out stops it, and it is done again below with that path left out. A fatal finding stops
  // both git calls (only a process that outlived the agent could have planted a hazard after the preflight).
  const stopStaging = new AbortController();
  const stopListing = new AbortController();
  const cancelled = request.signal;
  cancelled?.addEventListener(
    "abort",
    () => {
      stopStaging.abort();
      stopListing.abort();
    },
    { once: true },
  );
  // Staging early cannot wait for settling (it would lstat the files the scan is about to): git gets the base index
  // dated past its racily clean entries, and its result stands only if the scan's lstats then show that git missed no
  // change by trusting one of them (racy-index.ts); else it is done again from the settled index.
  if (preflight.mayStageEarly) {
    const trusted = datedPastRacyEntries(workspace.baseIndex, table);
    writeIndexCopy(indexFile, trusted.bytes, trusted.mtimeMs);
  }
  // Staging first: its process starts a few milliseconds sooner, and it, not the listing, is what extraction waits for.
  const early = preflight.mayStageEarly
    ? { staged: settle(stage([], stopStaging.signal)), ignored: settle(listIgnored(stopListing.signal)) }
    : null;
  // Once git's list of ignored files is in, the directories it names whole (`dir/`) are walked lightly: every finding
  // there would be dropped below (isUnderIgnored, with this same list), so the scan need not lstat their files.
  let ignoredDirectories: ReadonlySet<string> | null = null;
  void early?.ignored.then((listed) => {
    if (listed.ok) ignoredDirectories = new Set(listed.value.filter((path) => path.at(-1) === 0x2f).map((path) => path.toString("latin1")));
  });
  const scan = await scanWorkspace(
    workspace.workTree,
    policy,
    () => stopStaging.abort(),
    preflight.listings ?? undefined,
    base,
    cancelled,
    changed,
    changed ? lstats : undefined,
    changed ? undefined : (relPath, stats) => racyFiles.observe(relPath, stats),
    (relPath) => ignoredDirectories?.has(`${relPath.toString("latin1")}/`) ?? false,
  ).catch(async (error: unknown) => {
    stopStaging.abort();
    stopListing.abort();
    if (early) await Promise.all([early.ignored, early.staged]); // the stopped git calls are gone before the throw
    throw error;
  });
  if (scan.fatal) {
    stopStaging.abort();
    stopListing.abort();
  }
  const needsExclusions = scan.findings.some((finding) => finding.excludeFromStaging);
  // Checked while git is still at work: whether early staging may stand though it trusted the racy entries.
  const earlyTrustHeld = early !== null && !scan.fatal && !needsExclusions && !racyFiles.gitMayHaveMissedAChange(workspace.workTree);
  const [earlyIgnored, earlyStaged] = early ? await Promise.all([early.ignored, early.staged]) : [null, null];
  cancelled?.throwIfAborted();
  if (scan.fatal) {
    return {
      patch: Buffer.alloc(0),
      sha256: parsePatch(Buffer.alloc(0)).sha256,
      files: [],
      violations: [...violations, scan.fatal],
      warnings,
      listing: Buffer.alloc(0),
      privateGitDir: privateGit.path,
    };
  }

  // Staging needs the list of ignored files only to know which findings to leave out: with none to leave out (the
  // usual case) both run at once. The list is the same whether git reads the index before or after `add`. Staging
  // the changed paths alone needs it too: git refuses a pathspec that names an ignored file.
  const stageAfterListing = needsExclusions || changed !== null;
  const earlyStagingStands = earlyStaged !== null && earlyTrustHeld;
  if (earlyStaged && !earlyStagingStands) rmSync(`${indexFile}.lock`, { force: true }); // a stopped `git add` may have left its lock
  if (!earlyStagingStands) writeSettledIndex(); // (and its index, thrown away with what it staged)
  const [ignoredList, stagedEarly] = await Promise.all([
    earlyIgnored ? unwrap(earlyIgnored) : listIgnored(cancelled),
    stageAfterListing ? null : earlyStagingStands ? unwrap(earlyStaged!) : stage([], cancelled),
  ]);
  const ignored = new Set(ignoredList.map((path) => path.toString("latin1")));
  const exclude: Buffer[] = [];
  for (const finding of scan.findings) {
    if (isUnderIgnored(finding.rawPath, ignored)) continue; // not part of the patch; nothing handoff reads
    violations.push({ path: finding.path, rule: finding.rule, message: finding.message });
    if (finding.excludeFromStaging) exclude.push(finding.rawPath);
  }
  warnings.push(...leftOutWarnings(ignoredList));

  const paths = changed ? pathsToStage(changed, { ignored, exclude, base, workTree: workspace.workTree }) : undefined;
  let staged: Awaited<ReturnType<typeof stage>>;
  try {
    staged = stagedEarly ?? (await stage(exclude, cancelled, paths));
  } catch (error) {
    // The base index did not hold what the diff said it changed: git is asked about the whole tree instead.
    if (error instanceof PartialListingError) return extractPatch({ ...request, changed: null });
    throw error;
  }
  if (staged.overflow === "changes") {
    violations.push({
      path: "",
      rule: "too_many_files",
      message: `git's list of the changed files (or of the index) is over ${GIT_OUTPUT_CAP} bytes, more than handoff reads`,
    });
  } else {
    const listing = staged.listing;
    const allPaths = { [Symbol.iterator]: () => listingPathTexts(listing) };
    // The added lines of a patch over the limit would hold it again as strings: secrets are then looked for in the
    // files themselves (at most maxFileBytes each, one at a time).
    const addedLines = staged.patch.bytes.length > policy.maxPatchBytes ? null : addedLinesPerFile(staged.patch, staged.changes.length);
    const judged = judgeEntries(staged.changes, policy, {
      patchBytes: staged.patch.bytes.length,
      allPaths,
      objectFormat: source.objectFormat,
      addedLines,
      readContent: (entry) => readFileSafely(Buffer.concat([Buffer.from(`${workspace.workTree}/`), entry.path]), policy.maxFileBytes),
    });
    violations.push(...judged.violations);
    warnings.push(...judged.warnings);
    if (staged.overflow === "patch") {
      violations.push({
        path: "",
        rule: "patch_too_large",
        message: `the patch is over ${keptPatchBytes(policy)} bytes (the limit is ${policy.maxPatchBytes}); too large to keep, so changes.patch is empty`,
      });
    }
  }

  return {
    patch: staged.patch.bytes,
    sha256: staged.patch.sha256,
    // Over the file limit the patch is rejected whatever else it holds: only the first maxFiles files are judged
    // and listed, so result.json stays small when an agent changes a million files.
    files: staged.changes.slice(0, policy.maxFiles).map(toPatchFile),
    violations,
    warnings,
    listing: staged.listing,
    privateGitDir: privateGit.path,
  };
}

/**
 * What git's list of ignored files (`ls-files --others --ignored --directory`, sorted) leaves out of the patch, in
 * two warnings: the tool caches (tool-caches.ts) and the rest, up to 20 named in each. git also lists a directory
 * holding nothing but ignored files, then what it holds: such a directory is named by what is below it.
 */
function leftOutWarnings(ignoredList: readonly Buffer[]): PolicyFinding[] {
  const named = ignoredList.filter((path, index) => {
    const next = ignoredList[index + 1];
    return !(path.at(-1) === 0x2f && next !== undefined && next.length > path.length && next.subarray(0, path.length).equals(path));
  });
  const caches = named.filter((path) => isToolCache(path));
  const others = named.filter((path) => !isToolCache(path));
  const list = (paths: readonly Buffer[]) =>
    `${paths
      .slice(0, 20)
      .map((path) => printablePath(path))
      .join(", ")}${paths.length > 20 ? ", …" : ""}`;
  const warnings: PolicyFinding[] = [];
  if (others.length > 0)
    warnings.push({
      path: "",
      rule: "ignored_files_added",
      message: `ignored files are in the workspace and not in the patch: ${list(others)}`,
    });
  if (caches.length > 0)
    warnings.push({
      path: "",
      rule: "tool_caches_left_out",
      message: `bytecode and test-runner caches are in the workspace and not in the patch (never part of one): ${list(caches)}`,
    });
  return warnings;
}

type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/** A promise that never rejects (so one left unawaited cannot crash the process), and its value or error later. */
function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

function unwrap<T>(settled: Settled<T>): T {
  if (!settled.ok) throw settled.error;
  return settled.value;
}

/** The most patch bytes handoff reads from git: past the limit by one byte, or KEPT_PATCH_BYTES for review. */
function keptPatchBytes(policy: CompiledPolicy): number {
  return Math.max(policy.maxPatchBytes + 1, KEPT_PATCH_BYTES);
}

function toPatchFile(change: RawChange): PatchFile {
  return {
    path: printablePath(change.path),
    change: changeKind(change.status),
    additions: change.additions ?? 0,
    deletions: change.deletions ?? 0,
  };
}
