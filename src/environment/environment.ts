import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { hashLstatTree } from "../lib/fs-walk.js";
import type { EnvironmentRecord } from "./record.js";

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
export function loadEnvironment(dir: string, record: EnvironmentRecord, reused: boolean): BaseEnvironment {
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
 * entry. ctime cannot be put back from user space, so any write since the build shows.
 */
export function fingerprintEnvironment(dir: string): {
  readonly fingerprint: string;
  readonly sizeBytes: number;
  readonly entries: number;
} {
  const hash = createHash("sha256");
  let sizeBytes = 0;
  let entries = 0;
  for (const part of [ENVIRONMENT_FILES.tree, ENVIRONMENT_FILES.home]) {
    hash.update(`${part}\n`);
    hashLstatTree(hash, join(dir, part), (stats) => {
      entries++;
      sizeBytes += Number(stats.blocks) * 512;
    });
  }
  return { fingerprint: hash.digest("hex"), sizeBytes, entries };
}

/** Why the environment can no longer be trusted (something wrote to it after its build), or null. */
export function environmentTampered(environment: BaseEnvironment): string | null {
  return fingerprintEnvironment(environment.dir).fingerprint === environment.record.fingerprint
    ? null
    : `the base environment ${environment.key.slice(0, 12)} was modified after it was built`;
}
