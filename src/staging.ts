import { git, splitNul } from "./git.js";

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
  /** Where git runs: outside the work tree. */
  readonly cwd: string;
}

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

export interface StagedTree {
  readonly changes: readonly RawChange[];
  readonly patch: Buffer;
  /** `ls-files -s -z` of the staged index: what the round trip must reproduce. */
  readonly listing: Buffer;
}

const DIFF_FLAGS = ["--no-renames", "--no-ext-diff", "--no-textconv", "--ignore-submodules=none", "--no-color"];

export async function stageWorkTree(request: StageRequest): Promise<StagedTree> {
  const target = { gitDir: request.gitDir, workTree: request.workTree, indexFile: request.indexFile, cwd: request.cwd };
  const pathspecs = [Buffer.from("."), ...(request.exclude ?? []).map((path) => Buffer.concat([Buffer.from(":(exclude,literal)"), path]))];
  const nul = Buffer.from([0]);
  await git(target, ["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"], {
    input: Buffer.concat(pathspecs.flatMap((spec) => [spec, nul])),
  });
  const [raw, numstat, patch, listing] = await Promise.all([
    git(target, ["diff", "--cached", "--raw", "-z", "--no-abbrev", ...DIFF_FLAGS, request.baseCommit, "--"]),
    git(target, ["diff", "--cached", "--numstat", "-z", ...DIFF_FLAGS, request.baseCommit, "--"]),
    git(target, [
      "diff",
      "--cached",
      "--binary",
      "--full-index",
      "--src-prefix=a/",
      "--dst-prefix=b/",
      ...DIFF_FLAGS,
      request.baseCommit,
      "--",
    ]),
    git(target, ["ls-files", "-s", "-z"]),
  ]);
  return { changes: parseRawWithNumstat(raw.stdout, numstat.stdout), patch: patch.stdout, listing: listing.stdout };
}

/** `:old new oldId newId S\0path\0` records, joined with `adds\tdels\tpath\0` records (same order, same paths). */
export function parseRawWithNumstat(raw: Buffer, numstat: Buffer): RawChange[] {
  const counts = new Map<string, { additions: number | null; deletions: number | null }>();
  for (const record of splitNul(numstat)) {
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
  const records = splitNul(raw);
  const changes: RawChange[] = [];
  for (let i = 0; i < records.length; i++) {
    const header = records[i]!.toString("latin1");
    if (!header.startsWith(":")) continue;
    const [oldMode, newMode, oldId, newId, status] = header.slice(1).split(" ");
    const path = records[++i] ?? Buffer.alloc(0);
    if (status?.startsWith("R") || status?.startsWith("C")) i++; // a second path follows
    const count = counts.get(path.toString("latin1")) ?? { additions: null, deletions: null };
    changes.push({ path, oldMode: oldMode!, newMode: newMode!, oldId: oldId!, newId: newId!, status: status ?? "?", ...count });
  }
  return changes;
}
