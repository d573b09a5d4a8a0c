import { z } from "zod";

/**
 * environment.json: what a base environment is and how it was built, written once by the build and read back by
 * every run that reuses it and by `handoff cache list`. One schema for the writer and the readers.
 */
export const ENVIRONMENT_RECORD_VERSION = 1;

export const EnvironmentRecord = z.looseObject({
  version: z.literal(ENVIRONMENT_RECORD_VERSION),
  /** sha256 of what the environment is made from (environment-key.ts): its directory name in the cache. */
  key: z.string().regex(/^[0-9a-f]{64}$/),
  /** The source repository the first build came from (informational: the key does not depend on it). */
  repo: z.string(),
  baseCommit: z.string(),
  setup: z.array(z.string()),
  /** The setup inputs at the base: each path and its blob id. */
  inputs: z.array(z.looseObject({ path: z.string(), oid: z.string() })),
  createdAt: z.string(),
  /** The run that built it. */
  builtBy: z.string(),
  /** Bytes and entries of tree/ (st_blocks × 512 summed: what the disk holds). */
  sizeBytes: z.number().int().nonnegative(),
  entries: z.number().int().nonnegative(),
  /** lstat fingerprint of tree/ (types, modes, sizes, mtimes, ctimes, inodes): any later write changes it. */
  fingerprint: z.string(),
  /**
   * sha256 of what `find` printed of tree/ and home/ when the fingerprint was read, and the newest ctime (ns) among
   * them: a check whose find prints the same has the same stamps without reading them again (tree-stamps.ts). Absent in
   * records written before they were kept.
   */
  findDigest: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  newestCtimeNs: z.string().regex(/^\d+$/).optional(),
  /** Untracked entries setup left (git ls-files --others --directory form: a directory ends with "/"). */
  outputs: z.array(z.string()),
  /** Tracked paths setup modified, added over or deleted: put back to the base, and named in every run's result. */
  setupChanges: z.array(z.string()),
  /** Setup's duration, which every reuse saves. */
  setupMs: z.number().nonnegative(),
  /** Untracked entries setup left that .gitignore does not cover: never part of a patch. */
  unignoredOutputs: z.array(z.string()).default([]),
  /**
   * Files setup wrote holding the build directory's own path (a venv, an editable install): such an environment
   * cannot be moved, so it keeps no tree, and runs set up in each checkout instead.
   */
  pathBound: z.array(z.string()).default([]),
});
export type EnvironmentRecord = z.infer<typeof EnvironmentRecord>;
