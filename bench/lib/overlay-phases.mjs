import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { applyAgentEdit, planAgentEdit } from "./agent-edit.mjs";
import { GIT_ENV, git, run } from "./git.mjs";
import { interleave } from "./harness.mjs";

/**
 * Issue 15's copy-on-write workspaces, where overlay mounts work (root, a kernel that allows it): a view of a read-only
 * checkout of the base (the environment's tree/ and its index) against the cheapest isolation a peer uses
 * (`git worktree add`) and a bare stat walk of the tree; then extraction of a 20-file edit in such a view, from
 * the overlay's upper dir against today's walk of the whole view. Their target (issue 15) is on the large
 * repository alone: 0.1× of the anchor.
 */
const TARGET_RATIO = 0.1;
const EDITED_FILES = 20;

export async function benchOverlay({ name, root, source, workDir, rounds, log, record }) {
  const lib = async (name) => import(pathToFileURL(join(root, "dist", "src", `${name}.js`)).href);
  const { mountOverlay, unmountOverlay, overlayUnavailable } = await lib("environment/overlay");
  const { createPristineStore, fingerprintStore, removeTree } = await lib("clone/workspace");
  const { extractPatch } = await lib("patch/extract");
  const { readUpperChanges } = await lib("patch/upper-changes");
  const { compilePolicy, DEFAULT_POLICY } = await lib("patch/rules/policy");

  const target = name === "large" ? TARGET_RATIO : null;
  const unavailable = await overlayUnavailable(workDir);
  if (unavailable !== null) {
    log(`  overlay rows skipped: ${unavailable}`);
    return;
  }
  const base = source.baseCommit;
  const scratch = join(workDir, "overlay-scratch");
  mkdirSync(scratch, { recursive: true });
  const pristine = await createPristineStore(source, scratch);

  // The environment: a checkout of the base with its own index, written a second after its files so that none of
  // its entries is racily clean (an environment is built long before any run uses it).
  const lower = join(workDir, "overlay-lower");
  const indexPath = join(workDir, "overlay-lower.index");
  mkdirSync(lower);
  const env = { ...GIT_ENV, GIT_DIR: pristine.path, GIT_WORK_TREE: lower, GIT_INDEX_FILE: indexPath };
  await git(lower, ["read-tree", base], { env });
  await git(lower, ["-c", "checkout.workers=2", "checkout-index", "-a", "-f"], { env });
  await new Promise((resolve) => setTimeout(resolve, 1100));
  await git(lower, ["update-index", "-q", "--refresh", "--force-write-index"], { env });

  let views = 0;
  const mountedViews = [];
  /** A new overlay view of the checkout: upper, work and merged in a fresh root, and handoff's gitfile in it. */
  const mountView = async () => {
    const viewRoot = join(workDir, "overlay-views", `view-${views++}`);
    const merged = join(viewRoot, "ws");
    const paths = { lower, upper: join(viewRoot, "overlay", "upper"), work: join(viewRoot, "overlay", "work"), merged };
    await mountOverlay(paths);
    mountedViews.push(merged);
    const gitfile = `gitdir: ${join(viewRoot, "agent.git")}\n`;
    writeFileSync(join(merged, ".git"), gitfile, { mode: 0o644 });
    return { viewRoot, gitfile, ...paths };
  };
  const dropViews = async () => {
    for (const merged of mountedViews.splice(0)) await unmountOverlay(merged);
    removeTree(join(workDir, "overlay-views"));
  };

  try {
    // 1. A workspace: an overlay view against `git worktree add` and against a stat walk of the same tree.
    const worktree = join(workDir, "overlay-anchor-worktree");
    const workspace = await interleave(
      [
        { name: "handoff", prep: dropViews, run: mountView },
        {
          name: "worktree",
          prep: async () => {
            removeTree(worktree);
            await git(scratch, [`--git-dir=${pristine.path}`, "worktree", "prune"]);
          },
          run: () => git(scratch, [`--git-dir=${pristine.path}`, "worktree", "add", "--detach", "--quiet", worktree, base]),
        },
        { name: "walk", run: () => run("find", [lower, "-printf", "%s %T@ %C@ %i %p\\0"]) },
      ],
      rounds,
    );
    record("workspace (overlay)", workspace, "handoff", "worktree", "overlay view + gitfile vs git worktree add", target);
    record("workspace (overlay) vs stat walk", workspace, "handoff", "walk", "vs find -printf of the tree", null);
    removeTree(worktree);
    await git(scratch, [`--git-dir=${pristine.path}`, "worktree", "prune"]);
    await dropViews();

    // 1b. Four workspaces from one environment (best-of-N's candidates, a baseline and a verification): four views
    // against four `git worktree add`.
    const worktrees = [0, 1, 2, 3].map((i) => join(workDir, `overlay-anchor-worktree-${i}`));
    const four = await interleave(
      [
        {
          name: "handoff",
          prep: dropViews,
          run: async () => {
            for (let i = 0; i < 4; i++) await mountView();
          },
        },
        {
          name: "worktree",
          prep: async () => {
            for (const path of worktrees) removeTree(path);
            await git(scratch, [`--git-dir=${pristine.path}`, "worktree", "prune"]);
          },
          run: async () => {
            for (const path of worktrees)
              await git(scratch, [`--git-dir=${pristine.path}`, "worktree", "add", "--detach", "--quiet", path, base]);
          },
        },
      ],
      rounds,
    );
    record("4 workspaces from one environment", four, "handoff", "worktree", "4 overlay views vs 4 × git worktree add", target);
    for (const path of worktrees) removeTree(path);
    await git(scratch, [`--git-dir=${pristine.path}`, "worktree", "prune"]);
    await dropViews();

    // 2. Extraction of a 20-file edit in a view: from the upper dir against the walk of the whole view (today's).
    const view = await mountView();
    const plan = await planAgentEdit(source.topLevel);
    const edited = plan.modified.slice(0, EDITED_FILES); // fewer on the small repository
    applyAgentEdit(view.merged, { modified: edited, added: [] });
    const bytes = readFileSync(indexPath);
    const workspaceRecord = {
      root: view.viewRoot,
      workTree: view.merged,
      agentGitDir: join(view.viewRoot, "agent.git"),
      home: join(view.viewRoot, "home"),
      tmp: join(view.viewRoot, "tmp"),
      baseIndex: { bytes, mtimeMs: statSync(indexPath).mtimeMs, sha256: createHash("sha256").update(bytes).digest("hex") },
      gitfile: { content: view.gitfile, ino: lstatSync(join(view.merged, ".git")).ino },
    };
    const policy = compilePolicy(DEFAULT_POLICY);
    const extractRequest = () => {
      for (const name of readdirSync(scratch)) if (name.startsWith("extract-")) removeTree(join(scratch, name));
      // git re-dates a pack it reads an object from: each extraction starts from the store as it is now.
      return {
        source,
        workspace: workspaceRecord,
        policy,
        privateParent: scratch,
        pristine: { path: pristine.path, fingerprint: fingerprintStore(pristine.path) },
      };
    };
    let request = null;
    const results = {};
    const extraction = await interleave(
      [
        {
          name: "handoff",
          prep: () => {
            request = extractRequest();
          },
          run: async () => {
            const changed = readUpperChanges(view.upper, view.merged, view.lower, policy.maxWorkspaceEntries);
            if (changed === null) throw new Error("the overlay's upper dir could not be read");
            results.upper = await extractPatch({ ...request, changed: changed.paths });
          },
        },
        {
          name: "today",
          prep: () => {
            request = extractRequest();
          },
          run: async () => {
            results.whole = await extractPatch({ ...request, changed: null });
          },
        },
      ],
      rounds,
    );
    if (results.upper.sha256 !== results.whole.sha256 || results.upper.files.length !== edited.length)
      throw new Error("the extraction from the upper dir differs from the walk of the whole view");
    record(
      `extraction, ${edited.length} changed files (overlay)`,
      extraction,
      "handoff",
      "today",
      "from the upper dir vs today's walk of the view",
      target,
    );
  } finally {
    await dropViews();
    removeTree(lower);
    removeTree(scratch);
  }
}
