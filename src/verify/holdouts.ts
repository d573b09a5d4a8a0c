import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import { assertNever } from "../lib/assert-never.js";
import { UsageError } from "../lib/errors.js";
import { type GitTarget, git } from "../process/git.js";
import { numstatPaths, patchSha256 } from "../patch/patch.js";
import { PATH_MAX } from "../vocabulary/input-limits.js";
import { escapeControls } from "../vocabulary/display.js";
import { isInside } from "../lib/paths.js";
import { readFileSafely } from "../lib/safe-read.js";
import { whyUnreadable } from "../lib/unreadable.js";

/** The largest `--holdout-patch` file handoff reads: as large as the largest patch it extracts. */
export const MAX_HOLDOUT_BYTES = 64 * 1024 * 1024;

/**
 * A held-out check (`--holdout-patch FILE`): a patch the agent never sees, applied by handoff in every verification
 * checkout after the agent's patch. Its bytes are read once, before the run starts, and kept in memory: the file is
 * hidden from every sandboxed process, never copied into the run directory, and never part of changes.patch.
 */
export interface Holdout {
  /** The file's real path, as the user gave it. */
  readonly source: string;
  readonly bytes: Buffer;
  readonly sha256: string;
}

/**
 * A `--holdout-patch` file, read now, before anything is created: a regular file (a link is followed once, here)
 * of at most 64 MiB, not empty, and outside every tree the agent or its runs can reach (the source, the runs,
 * workspace and CLI-home directories).
 */
export function readHoldoutFile(path: string, forbidden: ReadonlyArray<readonly [string, string]>): Holdout {
  const bad = (why: string) =>
    new UsageError(
      "bad_holdout",
      ({ name }) => `${name("holdoutPatches")} ${escapeControls(path.slice(0, 200))}${path.length > 200 ? "…" : ""} ${why}`,
    );
  if (path.includes("\0")) throw bad("holds a NUL byte");
  if (Buffer.byteLength(path) >= PATH_MAX) throw bad(`is ${Buffer.byteLength(path)} bytes; a path is under ${PATH_MAX}`);
  let real: string;
  try {
    real = realpathSync(resolve(path));
  } catch (error) {
    throw bad(`cannot be read: ${whyUnreadable(error)}`);
  }
  for (const [what, dir] of forbidden) {
    if (isInside(real, dir)) throw bad(`is inside ${what} (${dir}), where the agent could read it; keep held-out patches outside`);
  }
  const read = readFileSafely(real, MAX_HOLDOUT_BYTES);
  switch (read.kind) {
    case "not_regular":
      throw bad("is not a regular file");
    case "too_large":
      throw bad(`is ${read.size} bytes; the most handoff reads is ${MAX_HOLDOUT_BYTES} (64 MiB)`);
    case "unreadable":
      throw bad(`cannot be read: ${whyUnreadable(read.message)}`);
    case "bytes":
      if (read.bytes.length === 0) throw bad("is empty");
      return { source: real, bytes: read.bytes, sha256: patchSha256(read.bytes) };
    default:
      return assertNever(read);
  }
}

/** What result.json says of a holdout: never its content (an unsandboxed agent can read the run directory). */
export interface HoldoutRecord {
  readonly source: string;
  readonly sha256: string;
  readonly files: readonly string[];
}

export type HoldoutsApplied =
  | { readonly kind: "applied" }
  | { readonly kind: "conflict"; readonly source: string; readonly message: string };

/** The paths a holdout touches, as git reads them (`apply --numstat -z`): no work tree is needed. */
export async function holdoutRecord(target: GitTarget, holdout: Holdout): Promise<HoldoutRecord> {
  const numstat = await git(target, ["apply", "--numstat", "-z", "-"], { input: holdout.bytes, okExitCodes: [1, 128] });
  const files = numstat.exitCode === 0 ? numstatPaths(numstat.stdout) : [];
  return { source: holdout.source, sha256: holdout.sha256, files };
}

/**
 * Applies each holdout to a checkout's work tree and index, in order, exactly (no fuzz, never --unsafe-paths). The
 * first that does not apply on top of what is there stops it: a holdout that conflicts with the agent's patch is a
 * verdict, not an error.
 */
export async function applyHoldouts(target: GitTarget, holdouts: readonly Holdout[], signal?: AbortSignal): Promise<HoldoutsApplied> {
  for (const holdout of holdouts) {
    const applied = await git(target, ["apply", "--index", "--whitespace=nowarn", "-"], {
      input: holdout.bytes,
      okExitCodes: [1, 128],
      signal,
    });
    if (applied.exitCode !== 0) {
      const message = applied.stderr.trim().split("\n").slice(0, 3).join("; ") || `git apply exit ${applied.exitCode}`;
      return { kind: "conflict", source: holdout.source, message };
    }
  }
  return { kind: "applied" };
}
