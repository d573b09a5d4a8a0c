import { createHash } from "node:crypto";
import { copyFileSync, createReadStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { git } from "../process/git.js";
import { captureProcess } from "../process/process.js";
import { EnvironmentCache } from "./cache-store.js";
import { ENVIRONMENT_FILES, checkEnvironment, fingerprintEnvironment } from "./environment.js";
import { EnvironmentRecord } from "./record.js";

/**
 * A base environment carried between machines as one tar file (a CI runner starts with an empty cache: the
 * GitHub Action keeps the file in the Actions cache, docs/github.md). Nothing crosses unproven:
 * - export takes only an environment that passes checkEnvironment now, and names the archive by its sha256;
 * - import refuses an archive whose sha256 is not the one it was exported with, an environment.json of another key,
 *   base or setup, and a tree whose tracked files are not the base commit's byte for byte; then it commits the
 *   environment into the cache as a build is committed (a new fingerprint, the commit's ctime after every entry), so
 *   from then on it is proven as any other (environment.ts, checkEnvironment).
 * What import cannot prove is that what setup made (node_modules/) is what setup would make: that rests on who could
 * write the archive under its name (docs/github.md, "The base environment across workflow runs").
 */

export type EnvironmentExport =
  | { readonly kind: "exported"; readonly archive: string; readonly sha256: string; readonly sizeBytes: number }
  | { readonly kind: "refused"; readonly why: string };

export type EnvironmentImport = { readonly kind: "imported"; readonly key: string } | { readonly kind: "refused"; readonly why: string };

const MEMBERS = [ENVIRONMENT_FILES.tree, ENVIRONMENT_FILES.home, ENVIRONMENT_FILES.index, ENVIRONMENT_FILES.record];

async function tar(args: readonly string[]): Promise<void> {
  const ended = await captureProcess({ file: "tar", args, cwd: "/", env: { PATH: "/usr/bin:/bin", LC_ALL: "C" } });
  if (ended.exitCode !== 0) throw new Error(`tar ${args[0]} failed (exit ${ended.exitCode}): ${ended.stderr.trim().split("\n")[0]}`);
}

export async function fileSha256(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** The cached environment `key`, proven sound now, as `<into>/environment.tar`. */
export async function exportEnvironment(cacheDir: string, key: string, archive: string): Promise<EnvironmentExport> {
  const cache = new EnvironmentCache(cacheDir);
  const found = cache.find(key);
  if (found === null) return { kind: "refused", why: `no base environment ${key.slice(0, 12)} in ${cache.root}` };
  const checked = checkEnvironment(found.dir, found.record, { trustedAfter: cache.trustedAfter() });
  if (checked.kind === "unsound") return { kind: "refused", why: checked.why };
  await tar(["-cf", archive, "--numeric-owner", "--sort=name", "-C", found.dir, "--", ...MEMBERS]);
  return { kind: "exported", archive, sha256: await fileSha256(archive), sizeBytes: found.record.sizeBytes };
}

export interface ImportRequest {
  readonly cacheDir: string;
  readonly key: string;
  readonly archive: string;
  /** The sha256 the archive was exported with, from where it was kept (the Actions cache key). */
  readonly sha256: string;
  /** A git dir holding the base commit (the job's checkout) and the commit and setup the key was computed from. */
  readonly gitDir: string;
  readonly baseCommit: string;
  readonly setup: readonly string[];
}

/** The archive into the cache as environment `key`, or why not (then nothing of it is left in the cache). */
export async function importEnvironment(request: ImportRequest): Promise<EnvironmentImport> {
  const actual = await fileSha256(request.archive);
  if (actual !== request.sha256)
    return {
      kind: "refused",
      why: `the archive's sha256 is ${actual.slice(0, 12)}, not the ${request.sha256.slice(0, 12)} it was saved with`,
    };
  const cache = new EnvironmentCache(request.cacheDir);
  if (cache.find(request.key) !== null) return { kind: "refused", why: `the cache holds ${request.key.slice(0, 12)} already` };
  // Read before the commit, as a run's lookup does: what is committed next is newer than the last run without the sandbox.
  if (cache.trustedAfter() === null)
    return { kind: "refused", why: "a run without the sandbox is in progress (its agent can write the cache)" };
  const build = cache.startBuild();
  try {
    // GNU tar keeps members inside the directory (no absolute names, no `..`); -p keeps the modes the build made.
    await tar(["-xpf", request.archive, "--no-same-owner", "-C", build, "--", ...MEMBERS]);
    const why = await refusal(build, request);
    if (why !== null) {
      cache.discard(build);
      return { kind: "refused", why };
    }
    cache.commit(build, request.key);
    return { kind: "imported", key: request.key };
  } catch (error) {
    cache.discard(build);
    return { kind: "refused", why: (error as Error).message.split("\n")[0]! };
  }
}

/** Why the extracted environment is not the one of this key, or null; when it is, its record gets its new fingerprint. */
async function refusal(build: string, request: ImportRequest): Promise<string | null> {
  const recordPath = join(build, ENVIRONMENT_FILES.record);
  const parsed = EnvironmentRecord.safeParse(JSON.parse(readFileSync(recordPath, "utf8")));
  if (!parsed.success) return `its environment.json is not a valid record: ${parsed.error.issues[0]?.message}`;
  const record = parsed.data;
  if (record.key !== request.key) return `its environment.json names the key ${record.key.slice(0, 12)}`;
  if (record.baseCommit !== request.baseCommit || JSON.stringify(record.setup) !== JSON.stringify(request.setup))
    return "its environment.json names another base commit or other setup commands";
  if (record.pathBound.length === 0) {
    const changed = await reindexTrackedFiles(build, request);
    if (changed.length > 0) return `its tracked files are not the base's: ${changed.slice(0, 5).join(", ")}`;
  }
  // The archive's stamps say nothing of this machine's files: read again here, none kept (undefined is left out).
  const stamps = { findDigest: undefined, newestCtimeNs: undefined, ...fingerprintEnvironment(build) };
  writeFileSync(recordPath, `${JSON.stringify({ ...record, ...stamps }, null, 2)}\n`, { mode: 0o600 });
  return null;
}

/**
 * The tracked paths of the base that tree/ does not hold as the base has them (content, mode, type), read through a
 * fresh index of the base refreshed against tree/, which hashes every file (none has the stat data git recorded).
 * With none, that index becomes the environment's `index`, its stat data this machine's, as the build makes it.
 */
async function reindexTrackedFiles(build: string, request: ImportRequest): Promise<string[]> {
  const scratch = mkdtempSync(join(tmpdir(), "handoff-import-"));
  const tree = join(build, ENVIRONMENT_FILES.tree);
  try {
    const target = { gitDir: request.gitDir, workTree: tree, indexFile: join(scratch, "index"), cwd: tree };
    await git(target, ["read-tree", request.baseCommit]);
    await git(target, ["update-index", "-q", "--refresh"], { okExitCodes: [1] });
    const listed = await git(target, ["diff-files", "--name-only", "-z"]);
    const changed = listed.stdout
      .toString("utf8")
      .split("\0")
      .filter((path) => path !== "");
    if (changed.length === 0) copyFileSync(join(scratch, "index"), join(build, ENVIRONMENT_FILES.index));
    return changed;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
