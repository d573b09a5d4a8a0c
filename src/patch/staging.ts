import type { RawChange } from "./raw-change.js";
import { GitCommandError } from "../lib/errors.js";
import { type GitTarget, git, gitEnvironment, hardenedArgs, resolveGitExecutable, splitNul } from "../process/git.js";
import { type ParsedPatch, countsFromPatch, parsePatch } from "./patch.js";
import { captureProcess } from "../process/process.js";
import type { IndexTable } from "../clone/index-entries.js";
import { stagedListing } from "./staged-listing.js";

/**
 * Stages a work tree into an index handoff owns, against a git dir handoff owns, and reads what changed relative
 * to the recorded base commit (never HEAD). Machine-readable forms only (`--raw -z`, `--numstat -z`); the patch
 * stays bytes from git to disk.
 */
export interface StageRequest {
  readonly gitDir: string;
  readonly workTree: string;
  readonly indexFile: string;
  readonly baseCommit: string;
  /** Paths (bytes) to leave out of staging: unreadable or dangerous entries already reported as violations. */
  readonly exclude?: readonly Buffer[];
  /**
   * Stage only these paths (bytes, literal pathspecs, each matching something in the work tree or the index): git
   * then lstat's nothing else. Absent: the whole work tree. Empty: nothing is staged (the diff is the index's).
   */
  readonly paths?: readonly Buffer[];
  /**
   * Paths (bytes, literal) the base tracks as files, staged with `add -A -f` after the rest: git stages a tracked
   * file whatever ignores it, but fails a pathspec leading into an ignored directory (pathsToStage).
   */
  readonly force?: readonly Buffer[];
  /** Where git runs: outside the work tree. */
  readonly cwd: string;
  /** Most bytes of patch to take from git (default 256 MiB): a bigger patch is not read (`overflow: "patch"`). */
  readonly maxPatchBytes?: number;
  /** Kills whichever git call is running when aborted (staging that started early and is no longer wanted). */
  readonly signal?: AbortSignal;
  /**
   * The base checkout's index (a checkout of `baseCommit`, read into `table`): the staged listing is written from it
   * and the changes (staged-listing.ts) instead of git listing the whole index again. Absent, or any doubt: git lists it.
   */
  readonly base?: { readonly bytes: Buffer; readonly table: IndexTable; readonly hashBytes: number };
  /**
   * The index holds only the entries of these paths (partial-index.ts): the diff is restricted to them (literal
   * pathspecs, UTF-8), and the listing must come from `base`.
   */
  readonly partial?: readonly Buffer[];
}

export interface StagedTree {
  readonly changes: readonly RawChange[];
  /** The patch git wrote, read once (src/patch/patch.ts): its bytes, hash, files, counts and hunks. */
  readonly patch: ParsedPatch;
  /** `ls-files -s -z` of the staged index: what the round trip must reproduce. */
  readonly listing: Buffer;
  /**
   * git's answer was too big to hold: "changes" when the list of changed paths (or the index listing) is over
   * 256 MiB (changes, patch and listing are then empty), "patch" when the patch is over `maxPatchBytes` (patch empty).
   */
  readonly overflow: "changes" | "patch" | null;
}

/** The most bytes handoff takes from one git answer about the changes. */
export const GIT_OUTPUT_CAP = 256 * 1024 * 1024;

/** Pathspec magic: the path as it is, no glob (the agent chose the name). */
export const LITERAL = Buffer.from(":(literal)");
const NUL = Buffer.from([0]);

const DIFF_FLAGS = ["--no-renames", "--no-ext-diff", "--no-textconv", "--ignore-submodules=none", "--no-color"];

export async function stageWorkTree(request: StageRequest): Promise<StagedTree> {
  const target = { gitDir: request.gitDir, workTree: request.workTree, indexFile: request.indexFile, cwd: request.cwd };
  const exclude = request.exclude ?? [];
  // The blobs `add` writes live only as long as the run's private git dir: not compressing them saves a quarter
  // of `add` at 800 changed files.
  const add = ["-c", "core.looseCompression=0", "add", "-A"];
  const include = request.paths?.map((path) => Buffer.concat([LITERAL, path])) ?? [Buffer.from(".")];
  if (include.length === 0) {
    // Nothing to stage (and `add -A` with no pathspec at all would stage the whole tree).
  } else if (exclude.length === 0 && request.paths === undefined) {
    // No stdin to feed: git can run while this process is busy (extraction scans the workspace meanwhile).
    await git(target, [...add, "--", "."], { signal: request.signal });
  } else {
    const pathspecs = [...include, ...exclude.map((path) => Buffer.concat([Buffer.from(":(exclude,literal)"), path]))];
    await git(target, [...add, "--pathspec-from-file=-", "--pathspec-file-nul"], {
      input: Buffer.concat(pathspecs.flatMap((spec) => [spec, NUL])),
      signal: request.signal,
    });
  }
  const force = request.force ?? [];
  if (force.length > 0) {
    await git(target, [...add, "-f", "--pathspec-from-file=-", "--pathspec-file-nul"], {
      input: Buffer.concat(force.flatMap((path) => [LITERAL, path, NUL])),
      signal: request.signal,
    });
  }
  if (request.partial?.length === 0 && request.base) {
    // No path to look at: the staged index is the base's.
    const listing = stagedListing(request.base.bytes, request.base.table, request.base.hashBytes, []);
    if (listing === null) throw new PartialListingError();
    return { changes: [], patch: parsePatch(Buffer.alloc(0)), listing, overflow: null };
  }
  const pathspecs = request.partial?.map((path) => `:(literal)${path.toString("utf8")}`) ?? [];
  const changesArgs = ["diff", "--cached", "--raw", "-z", "--no-abbrev", ...DIFF_FLAGS, request.baseCommit, "--", ...pathspecs];
  const patchArgs = [
    "diff",
    "--cached",
    "--binary",
    "--full-index",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    ...DIFF_FLAGS,
    request.baseCommit,
    "--",
    ...pathspecs,
  ];
  const maxPatchBytes = request.maxPatchBytes ?? GIT_OUTPUT_CAP;
  const listingFromGit = () => gitUpTo(target, ["ls-files", "-s", "-z"], GIT_OUTPUT_CAP, request.signal);
  // With the base index at hand git is asked once: the change list and the patch in one answer, and no listing.
  const [both, listedByGit] = await Promise.all([
    gitUpTo(target, [...changesArgs.slice(0, 5), "-p", ...patchArgs.slice(2)], maxPatchBytes, request.signal),
    request.base ? null : listingFromGit(),
  ]);
  const split = both === null ? null : splitRawAndPatch(both);
  const [raw, patch] = split
    ? [split.raw, split.patch]
    : await Promise.all([
        gitUpTo(target, changesArgs, GIT_OUTPUT_CAP, request.signal),
        gitUpTo(target, patchArgs, maxPatchBytes, request.signal),
      ]);
  const overflowed: StagedTree = { changes: [], patch: parsePatch(Buffer.alloc(0)), listing: Buffer.alloc(0), overflow: "changes" };
  if (raw === null) return overflowed;
  const listed = parseRawWithNumstat(raw);
  let listing = listedByGit;
  if (request.base) {
    listing = stagedListing(request.base.bytes, request.base.table, request.base.hashBytes, listed);
    // A partial index cannot be listed by git: the caller extracts the whole tree instead.
    if (listing === null && request.partial) throw new PartialListingError();
    listing ??= await listingFromGit();
  }
  if (listing === null) return overflowed;
  const parsed = parsePatch(patch ?? Buffer.alloc(0));
  const counts = patch === null ? null : countsFromPatch(listed, parsed);
  let changes: RawChange[];
  if (counts) {
    changes = listed.map((change, index) => ({ ...change, ...counts[index]! }));
  } else {
    // The patch was too big to keep, or did not read as expected: git counts the lines itself.
    const withNumstat = await gitUpTo(
      target,
      [...changesArgs.slice(0, 3), "--numstat", ...changesArgs.slice(3)],
      GIT_OUTPUT_CAP,
      request.signal,
    );
    if (withNumstat === null) return overflowed;
    changes = parseRawWithNumstat(withNumstat);
  }
  return { changes, patch: parsed, listing, overflow: patch === null ? "patch" : null };
}

/** The base index does not hold a change's old side: a partial index cannot be listed (extract.ts starts over). */
export class PartialListingError extends Error {
  constructor() {
    super("the staged listing could not be written from the base index");
  }
}

const COLON = 0x3a;
const DIFF_HEADER = Buffer.from("diff --git ");

/**
 * `git diff --raw -p -z`: the raw records (`:old new oldId newId S\0path\0`), a NUL, then the patch, byte for byte
 * what `git diff -p` alone writes. null for anything else (the caller then asks for each on its own).
 */
export function splitRawAndPatch(output: Buffer): { raw: Buffer; patch: Buffer } | null {
  let at = 0;
  while (at < output.length && output[at] === COLON) {
    const headerEnd = output.indexOf(0, at);
    if (headerEnd === -1) return null;
    const status = output.toString("latin1", output.lastIndexOf(0x20, headerEnd) + 1, headerEnd);
    const paths = status.startsWith("R") || status.startsWith("C") ? 2 : 1;
    at = headerEnd + 1;
    for (let p = 0; p < paths; p++) {
      const pathEnd = output.indexOf(0, at);
      if (pathEnd === -1) return null;
      at = pathEnd + 1;
    }
  }
  if (at === 0 && output.length === 0) return { raw: output, patch: output };
  if (at === 0 || at >= output.length || output[at] !== 0) return null;
  const patch = output.subarray(at + 1);
  if (!patch.subarray(0, DIFF_HEADER.length).equals(DIFF_HEADER)) return null;
  return { raw: output.subarray(0, at), patch };
}

/**
 * A git call whose output the agent decides (a million changed files, a gigabyte of patch): past `maxBytes` git is
 * stopped and the answer is null, a verdict for the caller, not an error. Same hardening as every git call.
 */
async function gitUpTo(target: GitTarget, args: readonly string[], maxBytes: number, signal?: AbortSignal): Promise<Buffer | null> {
  const result = await captureProcess({
    file: resolveGitExecutable(),
    args: hardenedArgs(args),
    cwd: target.cwd,
    env: gitEnvironment(target),
    maxBuffer: maxBytes,
    signal,
  });
  if (result.truncated) return null;
  if (result.timedOut || result.exitCode !== 0) throw new GitCommandError(args, result.exitCode, result.stderr);
  return result.stdout;
}

/**
 * `git diff --raw -z`, with or without `--numstat` (line counts are null without): `:old new oldId newId S\0path\0`
 * records first, then `adds\tdels\tpath\0` records for the same paths. A raw header always starts with `:` and its
 * path is the next record; a numstat record starts with a digit or `-`.
 */
export function parseRawWithNumstat(output: Buffer): RawChange[] {
  const records = splitNul(output);
  const raw: Omit<RawChange, "additions" | "deletions">[] = [];
  const counts = new Map<string, { additions: number | null; deletions: number | null }>();
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!;
    if (record[0] === 0x3a) {
      const [oldMode, newMode, oldId, newId, status] = record.toString("latin1").slice(1).split(" ");
      const path = records[++i] ?? Buffer.alloc(0);
      if (status?.startsWith("R") || status?.startsWith("C")) i++; // a second path follows
      raw.push({ path, oldMode: oldMode!, newMode: newMode!, oldId: oldId!, newId: newId!, status: status ?? "?" });
      continue;
    }
    const firstTab = record.indexOf(0x09);
    const secondTab = record.indexOf(0x09, firstTab + 1);
    if (firstTab === -1 || secondTab === -1) continue;
    const adds = record.subarray(0, firstTab).toString("latin1");
    const dels = record.subarray(firstTab + 1, secondTab).toString("latin1");
    counts.set(record.subarray(secondTab + 1).toString("latin1"), {
      additions: adds === "-" ? null : Number(adds),
      deletions: dels === "-" ? null : Number(dels),
    });
  }
  return raw.map((change) => ({ ...change, ...(counts.get(change.path.toString("latin1")) ?? { additions: null, deletions: null }) }));
}

/** The paths of an `ls-files -s -z` listing as UTF-8 text, read as they are asked for (no array of 80,000 buffers first). */
export function* listingPathTexts(listing: Buffer): Generator<string> {
  let at = 0;
  while (at < listing.length) {
    const end = listing.indexOf(0, at);
    const stop = end === -1 ? listing.length : end;
    const tab = listing.indexOf(0x09, at);
    yield listing.toString("utf8", tab === -1 || tab > stop ? at : tab + 1, stop);
    at = stop + 1;
  }
}

/** The paths of an `ls-files -s -z` listing (`mode oid stage\tpath` records). */
export function listingPaths(listing: Buffer): Buffer[] {
  return splitNul(listing).map((record) => record.subarray(record.indexOf(0x09) + 1));
}
