import { type Dirent, lstatSync, readdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { removeTree } from "../clone/workspace.js";
import { ownedName } from "../environment/owner-pid.js";
import { lexists } from "../lib/paths.js";
import { parseArtifactJson, readArtifactWithStats } from "../run-dir/artifact-file.js";
import { SettledRuns } from "../run-dir/settled-runs.js";
import { isSafeRunId } from "../run-dir/run-dir.js";
import { readRequest } from "../run-dir/run-lookup.js";
import { keptHomeOf } from "./kept-home.js";

/** One kept session as `handoff gc` reports it. */
export interface KeptSessionEntry {
  readonly runId: string;
  readonly runDir: string;
  readonly home: string;
  readonly keptUntil: string | null;
}

/** What a collection did: the homes it removed, those it kept (not expired yet), and those it left alone, with why. */
export interface SessionCollection {
  readonly removed: readonly KeptSessionEntry[];
  readonly kept: readonly KeptSessionEntry[];
  readonly leftAlone: readonly (KeptSessionEntry & { readonly why: string })[];
}

/** The part of result.json a collection reads: the run id and its `session`, nothing else (a full parse per run would cost every start). */
const SessionFacts = z.looseObject({
  runId: z.string(),
  session: z.looseObject({ kept: z.boolean(), home: z.string().nullable(), keptUntil: z.string().nullable() }).optional(),
});

const MAX_RESULT_BYTES = 16 * 1024 * 1024;

/**
 * Removes the kept sessions (`--keep-session`) of the runs under `runsDir` whose `keptUntil` has passed, or all of
 * them with `all`. Only a home that keptHomeOf() finds exactly as handoff made it for that run is removed; a
 * result.json is never rewritten (a removed home reads as gone). Never throws: a run it cannot read is skipped.
 */
export function collectKeptSessions(
  runsDir: string,
  { all = false, now = Date.now() }: { all?: boolean; now?: number } = {},
): SessionCollection {
  return collectIn(runsDir, { all, now }, null);
}

/** A collection of one runs directory; `settled` (the start-up sweep's, top level only) skips runs with no kept session. */
function collectIn(runsDir: string, { all, now }: { all: boolean; now: number }, settled: SettledRuns | null): SessionCollection {
  const collection = {
    removed: [] as KeptSessionEntry[],
    kept: [] as KeptSessionEntry[],
    leftAlone: [] as (KeptSessionEntry & { why: string })[],
  };
  let entries: Dirent[];
  try {
    entries = readdirSync(runsDir, { withFileTypes: true });
  } catch {
    return collection;
  }
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (!entry.isDirectory() || !isSafeRunId(entry.name)) continue;
    const runDir = join(runsDir, entry.name);
    // A candidates run keeps its sessions in its candidates' runs, a batch in its tasks' runs (docs/many-tasks.md).
    const nested = ["candidates", "runs"]
      .map((name) => join(runDir, name))
      .find((dir) => lstatSync(dir, { throwIfNoEntry: false })?.isDirectory());
    if (nested) {
      const inner = collectIn(nested, { all, now }, null);
      collection.removed.push(...inner.removed);
      collection.kept.push(...inner.kept);
      collection.leftAlone.push(...inner.leftAlone);
      continue;
    }
    const resultFile = join(runDir, "result.json");
    if (settled?.unchanged(entry.name, resultFile)) continue;
    const { read, stats } = readArtifactWithStats(resultFile, MAX_RESULT_BYTES);
    const facts = parseArtifactJson(read, SessionFacts);
    if (facts === null || facts.runId !== entry.name) continue;
    if (!facts.session?.kept) {
      // No session was kept: nothing to collect while this result.json stays as it is.
      if (stats) settled?.settle(entry.name, stats);
      continue;
    }
    const found = keptHomeOf(entry.name, facts.session, readRequest(runDir), now);
    switch (found.kind) {
      case "not_kept":
      case "gone":
        break;
      case "not_ours":
        collection.leftAlone.push({ runId: entry.name, runDir, home: found.home, keptUntil: facts.session.keptUntil, why: found.why });
        break;
      case "kept": {
        const record = { runId: entry.name, runDir, home: found.home, keptUntil: found.keptUntil };
        if (!found.expired && !all) collection.kept.push(record);
        else {
          const removed = remove(found.home);
          if (removed === "removed") collection.removed.push(record);
          else if (removed === "taken") collection.leftAlone.push({ ...record, why: "handoff resume took it first" });
          else collection.leftAlone.push({ ...record, why: "it could not be removed" });
        }
        break;
      }
    }
  }
  return collection;
}

/** The age limit at every `handoff run` and `handoff resume` start, next to the crash sweep: expired kept sessions go. */
export function sweepExpiredSessions(runsDir: string): readonly KeptSessionEntry[] {
  const settled = SettledRuns.open(runsDir, "sessions");
  try {
    return collectIn(runsDir, { all: false, now: Date.now() }, settled).removed;
  } catch {
    return [];
  } finally {
    settled.save();
  }
}

/**
 * Claimed first, by a rename to a name no run uses (`<home>.gc-<pid>-<r>`), then removed: `handoff resume` moves a
 * kept home into its run with a rename too, so whichever renames it first has it, and the other says so. rm never
 * follows a link: a link the agent left inside the home is removed, not its target.
 */
function remove(home: string): "removed" | "taken" | "failed" {
  const claimed = `${home}.gc-${ownedName()}`;
  try {
    renameSync(home, claimed);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? "taken" : "failed";
  }
  try {
    removeTree(claimed);
  } catch {
    // reported by what is still there
  }
  return lexists(claimed) ? "failed" : "removed";
}
