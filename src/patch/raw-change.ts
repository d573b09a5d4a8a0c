/** One change of `git diff --raw` with its line counts: a path, its two modes and blob ids, and git's status letter. */
export interface RawChange {
  readonly path: Buffer;
  readonly oldMode: string;
  readonly newMode: string;
  readonly oldId: string;
  readonly newId: string;
  /** git's status letter: A, M, D, T (R and C cannot appear with --no-renames, but are checked anyway). */
  readonly status: string;
  /** null for a binary change. */
  readonly additions: number | null;
  readonly deletions: number | null;
}
