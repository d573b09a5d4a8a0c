import { createHash } from "node:crypto";
import { type Stats, chmodSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { hashLstatTree, removeTreeNoFollow } from "../lib/fs-walk.js";
import { git, gitText } from "../process/git.js";
import { readFileSafely } from "../lib/safe-read.js";
import type { BaseEnvironment } from "../environment/environment.js";
import { unmountAllUnder } from "../environment/overlay.js";
import { type OverlayView, type WorkspaceMode, copyHome, copyOutputs, mountView } from "../environment/view.js";
import { writeIndexCopy } from "./private-git.js";
import type { SourceRepo } from "./source-repo.js";

/**
 * Gate 2's disposable clone. Layout under one private temp root:
 *   ws/          the agent's working tree (its `.git` is a gitfile pointing at agent.git)
 *   agent.git/   the clone's git metadata: the agent may do anything to it, handoff never reads it again
 *   home/ tmp/   the agent's private HOME and TMPDIR
 * agent.git has its own copy of the objects of handoff's pristine store, origin is removed, and the fresh index is
 * kept in handoff's memory before the agent starts,
 * so extraction re-hashes only what the agent touched and never trusts the agent's own index.
 */
export interface Workspace {
  readonly root: string;
  readonly workTree: string;
  readonly agentGitDir: string;
  readonly home: string;
  readonly tmp: string;
  /** The index git wrote right after checkout, and its mtime (kept for git's racy-clean check). */
  readonly baseIndex: { readonly bytes: Buffer; readonly mtimeMs: number; readonly sha256: string };
  /** What `ws/.git` was when the agent started: any change is tampering. */
  readonly gitfile: { readonly content: string; readonly ino: number };
  /** The overlay the work tree is (its upper dir tells what the agent changed), or null for a plain checkout. */
  readonly overlay: OverlayView | null;
}

/** A workspace made from a base environment: a view of it (overlay) or a checkout plus a copy of what setup made. */
export interface WorkspaceFrom {
  readonly environment: BaseEnvironment;
  readonly mode: WorkspaceMode;
}

export const AGENT_BRANCH = "handoff";

/**
 * handoff's own copy of the source's objects, made once per run before the agent starts: objects copied, never
 * hard-linked (`--local --no-hardlinks`: the intent of `--no-local`, far cheaper; docs/performance.md). Every later git
 * dir borrows from it, so nothing handoff does afterwards can touch the source's object files (git "freshens" the
 * mtime of an existing object it is asked to write again, even through alternates).
 * The agent can reach it (same user, no sandbox yet) and could swap an object so verification runs other tests:
 * its lstat fingerprint (ctime and inode, which user space cannot put back) is checked before it is used again.
 */
export interface PristineStore {
  readonly path: string;
  /** Re-taken after each of handoff's own writes through alternates (afterOwnWrites), never otherwise. */
  fingerprint: string;
}

/** `signal` (a cancelled run) kills the git call under way; the call then throws. */
export async function createPristineStore(source: SourceRepo, parent: string, signal?: AbortSignal): Promise<PristineStore> {
  const path = join(parent, "base.git");
  await copyRepository(source.topLevel, path, parent, signal);
  return { path, fingerprint: fingerprintStore(path) };
}

/**
 * A bare clone whose object files are copied, never hard-linked, with no hooks and no origin left behind; `config`
 * (`name=value`) written into its config by the clone itself, which saves a git process per setting.
 */
async function copyRepository(from: string, to: string, cwd: string, signal?: AbortSignal, config: readonly string[] = []): Promise<void> {
  const settings = config.flatMap((setting) => ["--config", setting]);
  await git(
    { cwd },
    [
      "-c",
      "protocol.file.allow=always",
      "clone",
      "--bare",
      "--local",
      "--no-hardlinks",
      "--template=",
      "--quiet",
      ...settings,
      "--",
      from,
      to,
    ],
    { signal },
  );
  await git({ gitDir: to, cwd }, ["remote", "remove", "origin"], { signal });
}

/**
 * The source's own branches named `handoff` or `handoff/…`, dropped from the agent's copy (never the source): a branch
 * `handoff/x` (the default of `apply --commit`) would stop git from making the agent's branch `handoff`, as a ref name
 * cannot be both a file and a directory.
 */
async function clearAgentBranchName(target: { gitDir: string; cwd: string }, signal?: AbortSignal): Promise<void> {
  const listed = await gitText(target, ["for-each-ref", "--format=%(refname)", `refs/heads/${AGENT_BRANCH}`], { signal });
  const names = listed.split("\n").filter((name) => name !== "");
  if (names.length === 0) return;
  await git(target, ["update-ref", "--stdin"], { input: names.map((name) => `delete ${name}\n`).join(""), signal });
}

/** The lstat fingerprint of a pristine store as it is now (the bench re-takes it between repeated extractions). */
export function fingerprintStore(path: string): string {
  const hash = createHash("sha256");
  hashLstatTree(hash, path);
  return hash.digest("hex");
}

/** Whether anything wrote to the pristine store since it was made (only handoff should, and only after this check). */
export function pristineTampered(store: PristineStore): string | null {
  return fingerprintStore(store.path) === store.fingerprint
    ? null
    : "handoff's own copy of the repository's objects was modified during the run";
}

/**
 * `write`, a step of handoff's own whose git reads the store through alternates: git "freshens" (re-dates) an object
 * there that it is asked to write again (a file the agent rewrote unchanged, a holdout or a patch whose result is in
 * the history), which is not tampering. So the fingerprint is re-taken after it, and only when the store was
 * untouched before it: what anyone else changed still shows at the next check. Nothing of the agent's or of the
 * patch's may run during `write`.
 */
export async function afterOwnWrites<T>(store: PristineStore, write: () => Promise<T>): Promise<T> {
  const untouched = pristineTampered(store) === null;
  try {
    return await write();
  } finally {
    if (untouched) store.fingerprint = fingerprintStore(store.path);
  }
}

/**
 * The clone at `root`, a path the run recorded before this makes it (exclusively: an existing entry is an error).
 * `signal` (a cancelled run) kills the git call under way; the half-made workspace is removed and the call throws.
 */
export async function createWorkspace(
  source: SourceRepo,
  pristine: PristineStore,
  root: string,
  signal?: AbortSignal,
  from: WorkspaceFrom | null = null,
): Promise<Workspace> {
  mkdirSync(dirname(root), { recursive: true, mode: 0o700 });
  mkdirSync(root, { mode: 0o700 });
  try {
    return await fillWorkspace(source, pristine, root, signal, from);
  } catch (error) {
    removeTree(root); // the run removes only a workspace this returned
    throw error;
  }
}

/** The agent's work tree inside a workspace root: where it worked, also once the workspace is gone (`handoff resume`). */
export function workTreeIn(root: string): string {
  return join(root, "ws");
}

async function fillWorkspace(
  source: SourceRepo,
  pristine: PristineStore,
  root: string,
  signal: AbortSignal | undefined,
  from: WorkspaceFrom | null,
): Promise<Workspace> {
  chmodSync(root, 0o700);
  const workTree = workTreeIn(root);
  const agentGitDir = join(root, "agent.git");
  const home = join(root, "home");
  const tmp = join(root, "tmp");
  for (const dir of [workTree, home, tmp]) mkdirSync(dir, { mode: 0o700 });
  const agentTarget = { gitDir: agentGitDir, cwd: root };
  // A copy, not alternates: through alternates the agent's own git re-dates the pristine store's objects, and any
  // change there must mean tampering (pristineTampered). Beside the copy of what setup left in HOME: neither reads the other.
  const agentGit = copyRepository(pristine.path, agentGitDir, root, signal, [
    "user.name=handoff agent",
    "user.email=agent@handoff.invalid",
  ]);
  let overlay: OverlayView | null = null;
  if (from?.mode === "overlay") {
    // The environment's tree is the work tree already: the branch and the index are set without a checkout. The view
    // is mounted beside the git dir's making, which never reads it, and the config is written beside the refs (its own
    // file and lock). The branch and HEAD stay one after the other: an update of the branch HEAD names locks HEAD too.
    const [mounted] = await allDone([
      mountView(from.environment, workTree, join(root, "overlay")),
      copyHome(from.environment, home, signal),
      agentGit.then(() =>
        allDone([
          (async () => {
            await clearAgentBranchName(agentTarget, signal);
            await git(agentTarget, ["update-ref", `refs/heads/${AGENT_BRANCH}`, source.baseCommit], { signal });
            await git(agentTarget, ["symbolic-ref", "HEAD", `refs/heads/${AGENT_BRANCH}`], { signal });
          })(),
          git(agentTarget, ["config", "core.bare", "false"], { signal }),
        ]),
      ),
    ]);
    overlay = mounted;
    writeIndexCopy(join(agentGitDir, "index"), from.environment.index.bytes, from.environment.index.mtimeMs);
  } else {
    await allDone([from ? copyHome(from.environment, home, signal) : null, agentGit]);
    await clearAgentBranchName(agentTarget, signal);
    await git(agentTarget, ["config", "core.bare", "false"], { signal });
    await git(
      { gitDir: agentGitDir, workTree, cwd: root },
      ["-c", "checkout.workers=2", "checkout", "--quiet", "-f", "-B", AGENT_BRANCH, source.baseCommit],
      { signal },
    );
    if (from) await copyOutputs(from.environment, workTree, signal);
  }

  const content = `gitdir: ${agentGitDir}\n`;
  writeFileSync(join(workTree, ".git"), content, { mode: 0o644 });
  const indexPath = join(agentGitDir, "index");
  const bytes = readFileSync(indexPath);
  const mtimeMs = statSync(indexPath).mtimeMs;
  return {
    root,
    workTree,
    agentGitDir,
    home,
    tmp,
    baseIndex: { bytes, mtimeMs, sha256: createHash("sha256").update(bytes).digest("hex") },
    gitfile: { content, ino: lstatSync(join(workTree, ".git")).ino },
    overlay,
  };
}

/**
 * Every step's result once all of them are done, or the first one's error, thrown only then: a failed step must not
 * let the half-made workspace be removed while another still writes into it.
 */
async function allDone<T extends readonly unknown[]>(steps: T): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const settled = await Promise.allSettled(steps);
  const failed = settled.find((step) => step.status === "rejected");
  if (failed) throw failed.reason;
  return settled.map((step) => (step as PromiseFulfilledResult<unknown>).value) as { -readonly [K in keyof T]: Awaited<T[K]> };
}

/** Whether `ws/.git` is still the gitfile handoff wrote (not repointed, replaced by a directory or a link). */
export function gitfileTampered(workspace: Workspace): string | null {
  const path = join(workspace.workTree, ".git");
  let stats: Stats;
  try {
    stats = lstatSync(path);
  } catch {
    return "ws/.git was removed";
  }
  if (stats.isSymbolicLink()) return "ws/.git was replaced by a symbolic link";
  if (stats.isDirectory()) return "ws/.git was replaced by a directory";
  if (!stats.isFile()) return "ws/.git is no longer a regular file";
  const read = readFileSafely(path, 4096);
  const content = read.kind === "bytes" ? read.bytes.toString("utf8") : `(${read.kind})`;
  if (content !== workspace.gitfile.content) return `ws/.git was rewritten to point elsewhere (${content.trim().slice(0, 200)})`;
  return null;
}

/**
 * Removes a temp tree the agent may have made hostile (read-only dirs, depth in the thousands, paths past
 * PATH_MAX): any view mounted in it is detached first; rm never follows links; where Node's recursive rm gives up,
 * an iterative removal takes over.
 */
export function removeTree(path: string): void {
  unmountAllUnder(path);
  try {
    rmSync(path, { recursive: true, force: true, maxRetries: 2 });
  } catch {
    removeTreeNoFollow(path);
  }
}
