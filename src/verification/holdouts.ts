import { type GitTarget, git, splitNul } from "../git.js";

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

/** What result.json says of a holdout: never its content (an unsandboxed agent can read the run directory). */
export interface HoldoutRecord {
  readonly source: string;
  readonly sha256: string;
  readonly files: readonly string[];
}

export type HoldoutsApplied = { readonly kind: "applied" } | { readonly kind: "conflict"; readonly source: string; readonly message: string };

/** The paths a holdout touches, as git reads them (`apply --numstat -z`): no work tree is needed. */
export async function holdoutRecord(target: GitTarget, holdout: Holdout): Promise<HoldoutRecord> {
  const numstat = await git(target, ["apply", "--numstat", "-z", "-"], { input: holdout.bytes, okExitCodes: [1, 128] });
  const files =
    numstat.exitCode === 0
      ? splitNul(numstat.stdout)
          .map((record) => record.toString("utf8").split("\t")[2] ?? "")
          .filter((path) => path !== "")
      : [];
  return { source: holdout.source, sha256: holdout.sha256, files };
}

/**
 * Applies each holdout to a checkout's work tree and index, in order, exactly (no fuzz, never --unsafe-paths). The
 * first that does not apply on top of what is there stops it: a holdout that conflicts with the agent's patch is a
 * verdict, not an error.
 */
export async function applyHoldouts(target: GitTarget, holdouts: readonly Holdout[], signal?: AbortSignal): Promise<HoldoutsApplied> {
  for (const holdout of holdouts) {
    const applied = await git(target, ["apply", "--index", "--whitespace=nowarn", "-"], { input: holdout.bytes, okExitCodes: [1, 128], signal });
    if (applied.exitCode !== 0) {
      const message = applied.stderr.trim().split("\n").slice(0, 3).join("; ") || `git apply exit ${applied.exitCode}`;
      return { kind: "conflict", source: holdout.source, message };
    }
  }
  return { kind: "applied" };
}
