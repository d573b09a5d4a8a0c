import { type Stats, lstatSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomically } from "../many/atomic-file.js";
import { readArtifactJson } from "./artifact-file.js";

/**
 * The runs a start-up sweep (the crash sweep, the kept-session sweep) read and found nothing to do for, each with the
 * stamp of the very file it read (device, inode, size, mtime, ctime, from that file's descriptor): at the next start a
 * run whose file has the same stamp is not read again, so a start costs a stat per past run, not a read and a parse.
 * Any write or replacement of the file changes its stamp (handoff writes by rename: another inode), and the run is
 * read again as before. Kept in `<runsDir>/.settled-<sweep>.json` (a dot name: never taken for a run), written by
 * rename; a lost update between two starts only means a run is read once more. Editing it can hide a run from the
 * sweep, as editing that run's checkpoint.json can: it is no more trusted than the checkpoints it stands for.
 */
export class SettledRuns {
  readonly #path: string;
  readonly #known: ReadonlyMap<string, string>;
  readonly #now = new Map<string, string>();

  private constructor(path: string, known: ReadonlyMap<string, string>) {
    this.#path = path;
    this.#known = known;
  }

  static open(runsDir: string, sweep: "crash" | "sessions"): SettledRuns {
    const path = join(runsDir, `.settled-${sweep}.json`);
    const read = readArtifactJson(path, SettledFile, MAX_SETTLED_BYTES);
    return new SettledRuns(path, new Map(read ? Object.entries(read.runs) : []));
  }

  /** The run's file has the stamp it had when the sweep found nothing to do: still nothing (kept for the next save). */
  unchanged(runId: string, file: string): boolean {
    const known = this.#known.get(runId);
    if (known === undefined) return false;
    let stats: Stats;
    try {
      stats = lstatSync(file);
    } catch {
      return false;
    }
    if (stampOf(stats) !== known) return false;
    this.#now.set(runId, known);
    return true;
  }

  /** The sweep read `stats`' file for this run and found nothing to do, now or later while the file stays as it is. */
  settle(runId: string, stats: Stats): void {
    this.#now.set(runId, stampOf(stats));
  }

  /** Writes the runs settled in this sweep (those gone from the runs directory drop out); never throws. */
  save(): void {
    if (sameEntries(this.#known, this.#now)) return;
    try {
      writeFileAtomically(this.#path, JSON.stringify({ version: 1, runs: Object.fromEntries(this.#now) }));
    } catch {
      // not kept: the next start reads these runs once more
    }
  }
}

const MAX_SETTLED_BYTES = 16 * 1024 * 1024;

const SettledFile = z.object({ version: z.literal(1), runs: z.record(z.string(), z.string()) });

function stampOf(stats: Stats): string {
  return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`;
}

function sameEntries(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, value] of a) if (b.get(key) !== value) return false;
  return true;
}
