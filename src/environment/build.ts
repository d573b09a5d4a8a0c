import { lutimesSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ProcessJail } from "../containment/containment.js";
import { createPrivateGitDir } from "../clone/private-git.js";
import type { SourceRepo } from "../clone/source-repo.js";
import type { PristineStore } from "../clone/workspace.js";
import { git, splitNul } from "../process/git.js";
import { captureProcess } from "../process/process.js";
import { buildEnvironment } from "../process/env.js";
import { type CommandRecord, type TestLog, commandPassed, runShellCommands } from "../verify/shell-commands.js";
import type { EnvironmentCache } from "./cache-store.js";
import { downloadCacheEnv } from "./download-caches.js";
import { npmLockfiles, seedNpmCache } from "./user-npm-cache.js";
import {
  type BaseEnvironment,
  ENVIRONMENT_FILES,
  fingerprintEnvironment,
  fingerprintEnvironmentInBackground,
  loadEnvironment,
} from "./environment.js";
import type { EnvironmentIdentity } from "./environment-key.js";
import { ENVIRONMENT_RECORD_VERSION, type EnvironmentRecord } from "./record.js";

/**
 * Builds a base environment: a checkout of the base commit in a new build directory, the setup commands run there
 * once (in their jail, with the persistent download caches), then what setup did to tracked files put back and
 * named, and the whole renamed into the cache. Nothing the agent could influence takes part: the agent has not
 * started, and the checkout comes from handoff's pristine store.
 */
export interface BuildRequest {
  readonly cache: EnvironmentCache;
  readonly identity: EnvironmentIdentity;
  readonly source: SourceRepo;
  readonly pristine: PristineStore;
  /** Where handoff may make the private git dir the checkout uses. */
  readonly scratch: string;
  readonly runId: string;
  readonly timeoutMs: number;
  readonly log: TestLog;
  readonly signal?: AbortSignal;
  readonly onCommand?: (command: string) => void;
  /** The setup command's jail, writable only where it may write. */
  readonly jail?: (command: string, writable: readonly string[]) => ProcessJail;
  /** The user's own npm cache, read (never written) for the tarballs the lockfile pins (src/environment/user-npm-cache.ts). */
  readonly userNpmCache?: string | null;
}

export type BuildOutcome =
  | { readonly kind: "built"; readonly environment: BaseEnvironment; readonly commands: readonly CommandRecord[] }
  | { readonly kind: "setup_failed"; readonly commands: readonly CommandRecord[]; readonly failed: CommandRecord }
  | { readonly kind: "cancelled"; readonly commands: readonly CommandRecord[] };

export async function buildBaseEnvironment(request: BuildRequest): Promise<BuildOutcome> {
  const buildDir = request.cache.startBuild();
  try {
    const outcome = await buildIn(buildDir, request);
    if (outcome.kind !== "built") request.cache.discard(buildDir);
    return outcome;
  } catch (error) {
    request.cache.discard(buildDir);
    throw error;
  }
}

async function buildIn(buildDir: string, request: BuildRequest): Promise<BuildOutcome> {
  const { cache, identity, source, signal } = request;
  const tree = join(buildDir, ENVIRONMENT_FILES.tree);
  const home = join(buildDir, ENVIRONMENT_FILES.home);
  const tmp = join(buildDir, "tmp");
  for (const dir of [tree, home, tmp]) mkdirSync(dir, { mode: 0o700 });
  const privateGit = await createPrivateGitDir(source, request.pristine.path, request.scratch, "environment");
  const indexFile = join(buildDir, ENVIRONMENT_FILES.index);
  const target = { gitDir: privateGit.path, workTree: tree, indexFile, cwd: tree };
  await git(target, ["read-tree", identity.baseCommit], { signal });
  await git(target, ["-c", "checkout.workers=2", "checkout-index", "-a", "-f"], { signal });
  backdate(tree, splitNul((await git(target, ["ls-files", "-z"], { signal })).stdout));
  await git(target, ["update-index", "-q", "--refresh"], { okExitCodes: [1], signal });
  // Without setup commands the environment is the checkout alone: nothing ran in it to put back or look for.
  if (identity.setup.length === 0) {
    rmSync(tmp, { recursive: true, force: true });
    return commitBuild(buildDir, request, { setupChanges: [], setupMs: 0, pathBound: [], outputs: [], unignoredOutputs: [] }, []);
  }

  const downloads = cache.downloadsDir();
  const downloadEnv = downloadCacheEnv(downloads, identity.setup);
  const started = Date.now();
  seedFromUser(request, downloadEnv.npm_config_cache!, tree);
  const commands = await runShellCommands(identity.setup, {
    phase: "setup",
    cwd: tree,
    env: { ...buildEnvironment({ home, tmp, set: { CI: "true" } }), ...downloadEnv },
    timeoutMs: request.timeoutMs,
    signal,
    log: request.log,
    onCommand: request.onCommand,
    jail: request.jail ? (command) => request.jail!(command, [tree, home, tmp, downloads]) : undefined,
  });
  const setupMs = Date.now() - started;
  if (signal?.aborted) return { kind: "cancelled", commands };
  const failed = commands.find((record) => !commandPassed(record));
  if (failed) return { kind: "setup_failed", commands, failed };

  const setupChanges = await putTrackedFilesBack(target, signal);
  // tree/ and home/ are final now (setup's jail ended, its changes to tracked files are put back; what follows only
  // reads them): their fingerprint, the listings and the path search read them side by side, and the fingerprint is
  // kept unless that search empties them.
  const stamping = fingerprintEnvironmentInBackground(buildDir).catch(() => null);
  // Held as a value, not a rejection, until it is judged below (nothing may reject unhandled meanwhile).
  const searching = filesNaming(buildDir, [tree, home], signal).catch((error: unknown) => ({ failed: error }));
  let listed: [Buffer, Buffer];
  try {
    listed = await Promise.all([
      git(target, ["ls-files", "-z", "--others", "--directory"], { signal }).then((ran) => ran.stdout),
      git(target, ["ls-files", "-z", "--others", "--exclude-standard", "--directory"], { signal }).then((ran) => ran.stdout),
    ]);
    rmSync(tmp, { recursive: true, force: true });
  } finally {
    await Promise.all([searching, stamping]);
  }
  const searched = await searching;
  if ("failed" in searched) throw searched.failed;
  const pathBound = searched;
  const [untracked, notIgnored] = listed;
  // Kept as a record only: later runs with this key then set up in each checkout at once, without building again.
  if (pathBound.length > 0) {
    for (const dir of [tree, home]) {
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { mode: 0o700 });
    }
  }
  const outputs = {
    outputs: splitNul(untracked).map((path) => path.toString("utf8")),
    unignoredOutputs: splitNul(notIgnored).map((path) => path.toString("utf8")),
  };
  const stamps = pathBound.length > 0 ? null : await stamping;
  return commitBuild(buildDir, request, { setupChanges, setupMs, pathBound, ...outputs }, commands, stamps);
}

/**
 * The tarballs the base's npm lockfiles pin that the user's npm cache already holds, copied (verified) into handoff's
 * own before setup runs: a user who installed the project once does not download it again. Best effort: a copy
 * that fails only leaves npm to download.
 */
function seedFromUser(request: BuildRequest, npmCache: string, tree: string): void {
  if (!request.userNpmCache) return;
  const lockfiles = npmLockfiles(request.identity.setup, request.identity.inputs);
  if (lockfiles.length === 0) return;
  try {
    const seeded = seedNpmCache(request.userNpmCache, npmCache, tree, lockfiles);
    const rejected = seeded.rejected > 0 ? `, ${seeded.rejected} left out (their bytes are not the lockfile's integrity)` : "";
    // The counts only: test.log can reach the agent (a repair's feedback), the path of your home need not.
    request.log.add(
      Buffer.from(
        `handoff: ${seeded.copied} tarballs (${Math.round(seeded.bytes / 1024)} KiB) copied from your npm cache, ${seeded.present} already in handoff's${rejected}\n`,
      ),
    );
  } catch {}
}

/** environment.json written, and the build renamed into the cache. */
function commitBuild(
  buildDir: string,
  request: BuildRequest,
  made: Pick<EnvironmentRecord, "setupChanges" | "setupMs" | "pathBound" | "outputs" | "unignoredOutputs">,
  commands: readonly CommandRecord[],
  /** The fingerprint already read of the final tree/ and home/; read here when null. */
  stamps: ReturnType<typeof fingerprintEnvironment> | null = null,
): BuildOutcome {
  const { identity, source } = request;
  const fingerprint = stamps ?? fingerprintEnvironment(buildDir);
  const record: EnvironmentRecord = {
    version: ENVIRONMENT_RECORD_VERSION,
    key: identity.key,
    repo: source.topLevel,
    baseCommit: identity.baseCommit,
    setup: [...identity.setup],
    inputs: identity.inputs.map((input) => ({ ...input })),
    createdAt: new Date().toISOString(),
    builtBy: request.runId,
    ...fingerprint,
    ...made,
  };
  writeFileSync(join(buildDir, ENVIRONMENT_FILES.record), `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  const committed = request.cache.commit(buildDir, identity.key);
  return { kind: "built", environment: loadEnvironment(committed.dir, committed.record, "built"), commands };
}

/**
 * Tracked files setup modified, deleted or replaced are checked out again from the base: setup never writes the
 * patch. Returns their paths (named in the result as a warning).
 */
async function putTrackedFilesBack(
  target: { gitDir: string; workTree: string; indexFile: string; cwd: string },
  signal?: AbortSignal,
): Promise<string[]> {
  await git(target, ["update-index", "-q", "--refresh"], { okExitCodes: [1], signal });
  const changed = splitNul((await git(target, ["diff-files", "-z", "--name-only", "--no-renames"], { signal })).stdout);
  if (changed.length === 0) return [];
  for (const path of changed) {
    // A directory or link setup put where a tracked file was: out of the way first, never followed.
    rmSync(join(target.workTree, path.toString("utf8")), { recursive: true, force: true });
  }
  const nul = Buffer.from([0]);
  await git(target, ["checkout-index", "-f", "-z", "--stdin"], { input: Buffer.concat(changed.flatMap((path) => [path, nul])), signal });
  backdate(target.workTree, changed);
  await git(target, ["update-index", "-q", "--refresh"], { okExitCodes: [1], signal });
  return changed.map((path) => path.toString("utf8"));
}

/**
 * Dates tracked files two seconds back, before the index records them: git trusts an entry's stat data only when the
 * file is older than the index (whole seconds), so an index written in the same second as its files would make every
 * later extraction look at every file again. The index has no stat data yet (read-tree), so nothing is re-hashed
 * for this; links are dated themselves, never their targets.
 */
function backdate(tree: string, paths: readonly Buffer[]): void {
  const seconds = Date.now() / 1000 - 2;
  const root = Buffer.from(`${tree}/`);
  for (const path of paths) {
    try {
      lutimesSync(Buffer.concat([root, path]), seconds, seconds);
    } catch {
      // A submodule's path with nothing checked out: git stats nothing there either.
    }
  }
}

/**
 * Files that hold the build directory's own path (a Python venv's scripts, an editable install, a native build's
 * Makefile): in a view at another path they would point back at the environment, so verification could test the
 * base's code instead of the patch's. Such an environment is still used for the agent, but verification runs setup
 * in its own checkout (the view is not trusted for it). grep -F is used: it reads node_modules at disk speed.
 */
async function filesNaming(buildDir: string, roots: readonly string[], signal?: AbortSignal): Promise<string[]> {
  const result = await captureProcess({
    file: "grep",
    args: ["-rlFZ", "--no-messages", "--", buildDir, ...roots],
    cwd: buildDir,
    env: { PATH: "/usr/bin:/bin", LC_ALL: "C" },
    maxBuffer: 1024 * 1024,
    timeoutMs: 600_000,
    signal,
  });
  if (result.exitCode !== 0 && result.exitCode !== 1) return [`(grep failed: ${result.stderr.trim().slice(0, 200)})`];
  return splitNul(result.stdout)
    .slice(0, 20)
    .map((path) => path.toString("utf8").slice(buildDir.length + 1));
}
