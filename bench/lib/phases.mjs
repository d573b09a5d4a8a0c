import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { applyAgentEdit, planAgentEdit } from "./agent-edit.mjs";
import { git, run } from "./git.mjs";
import { interleave } from "./harness.mjs";
import { benchOverlay } from "./overlay-phases.mjs";

/**
 * Each gate of handoff against the git primitive it cannot avoid, on one repository. handoff's side calls the same
 * modules the runner calls (from dist/), in this process; the anchors are the stock commands a user would type.
 */
export async function benchRepo({ name, root, repo, workDir, rounds, log }) {
  const lib = async (name) => import(pathToFileURL(join(root, "dist", "src", `${name}.js`)).href);
  const { inspectSource } = await lib("clone/source-repo");
  const { takeSourceSnapshot } = await lib("clone/source-snapshot");
  const { createPristineStore, createWorkspace, fingerprintStore, removeTree } = await lib("clone/workspace");
  const { extractPatch } = await lib("patch/extract");
  const { compilePolicy, DEFAULT_POLICY } = await lib("patch/rules/policy");
  const { runVerification } = await lib("verify/verify");
  const { TestLog } = await lib("verify/shell-commands");

  // handoff's removal, not rmSync: an overlay view left mounted by an earlier bench that was killed is detached first.
  removeTree(workDir);
  mkdirSync(workDir, { recursive: true });
  const source = await inspectSource(repo.path);
  const base = source.baseCommit;
  const rows = [];
  // `targetRatio`: the row's own target (report.mjs), when not the default for its repository's size.
  const record = (phase, result, handoffName, anchorName, note, targetRatio) => {
    rows.push({
      phase,
      handoff: result[handoffName],
      anchor: result[anchorName],
      ratio: ratio(result[handoffName], result[anchorName]),
      note,
      ...(targetRatio === undefined ? {} : { targetRatio }),
    });
    log(`  ${phase}: handoff ${result[handoffName].median} ms, anchor ${result[anchorName].median} ms`);
  };
  const emptyDir = (path) => {
    removeTree(path);
    mkdirSync(path, { recursive: true });
  };

  // 1. Source snapshot vs the same observation with stock tools.
  const snapshot = await interleave(
    [
      { name: "handoff", run: () => takeSourceSnapshot(source) },
      {
        name: "anchor",
        run: async () => {
          await git(repo.path, ["--no-optional-locks", "status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignored"]);
          await run("find", [repo.path, "-printf", "%s %T@ %C@ %i %p\\0"]);
        },
      },
    ],
    rounds,
  );
  record("source snapshot", snapshot, "handoff", "anchor", "status + stat walk (find -printf)");

  // 2. Disposable clone vs `git clone --no-local`.
  const handoffClone = join(workDir, "handoff-clone");
  const anchorClone = join(workDir, "anchor-clone");
  let workspace = null;
  let pristine = null;
  let scratch = null;
  let sample = 0;
  const clone = await interleave(
    [
      {
        name: "handoff",
        prep: () => emptyDir(handoffClone),
        run: async () => {
          scratch = join(handoffClone, "scratch");
          mkdirSync(scratch);
          pristine = await createPristineStore(source, scratch);
          workspace = await createWorkspace(source, pristine, join(handoffClone, "ws", `bench-${sample++}`));
        },
      },
      {
        name: "anchor",
        prep: () => removeTree(anchorClone),
        run: () => git(workDir, ["clone", "--no-local", "--quiet", repo.path, anchorClone]),
      },
    ],
    rounds,
  );
  record("disposable clone", clone, "handoff", "anchor", "vs git clone --no-local");

  // 3. Patch extraction (1% of files changed, 20 added) vs `git add -A && git diff --cached --binary`.
  const plan = await planAgentEdit(repo.path);
  applyAgentEdit(workspace.workTree, plan);
  applyAgentEdit(anchorClone, plan);
  const anchorIndex = join(anchorClone, ".git", "index");
  const savedIndex = join(workDir, "anchor-index.saved");
  copyFileSync(anchorIndex, savedIndex);
  // Dated a second past every file, as git's index is once any later command rewrote it: git then trusts its stat
  // data and re-hashes only what the edit touched, whichever second the clone happened to end in (handoff settles
  // its own racily clean entries, racy-index.ts). Otherwise the anchor's cost would depend on that second.
  const indexTime = new Date(Math.ceil(Date.now() / 1000) * 1000 + 1000);
  const policy = compilePolicy(DEFAULT_POLICY);
  let extractRequest = null;
  const clearPrivateDirs = () => {
    for (const name of readdirSync(scratch)) if (name.startsWith("extract-") || name.startsWith("verify-")) removeTree(join(scratch, name));
    // git re-dates a pack it finds an object in (even through alternates), and handoff takes that for tampering:
    // each repeated extraction starts from the store's current fingerprint, as a run's only extraction does.
    extractRequest = {
      source,
      workspace,
      policy,
      privateParent: scratch,
      pristine: { path: pristine.path, fingerprint: fingerprintStore(pristine.path) },
    };
  };
  let extraction = null;
  const extract = await interleave(
    [
      {
        name: "handoff",
        prep: clearPrivateDirs,
        run: async () => {
          extraction = await extractPatch(extractRequest);
        },
      },
      {
        name: "anchor",
        // Every sample starts where the clone is: its index and no loose object yet, so each `add` writes its
        // blobs as the first one after a clone does.
        prep: () => {
          copyFileSync(savedIndex, anchorIndex);
          utimesSync(anchorIndex, indexTime, indexTime);
          removeLooseObjects(join(anchorClone, ".git", "objects"));
        },
        run: async () => {
          await git(anchorClone, ["add", "-A"]);
          await git(anchorClone, ["diff", "--cached", "--binary", base]);
        },
      },
    ],
    rounds,
  );
  record("patch extraction", extract, "handoff", "anchor", `${plan.modified.length} changed + ${plan.added.length} added files`);
  // handoff's patch is git's, byte for byte, with full object ids on every `index` line (git abbreviates text ones).
  const anchorPatch = await git(anchorClone, ["diff", "--cached", "--binary", "--full-index", base], { keep: true });
  const samePatch = sha256(anchorPatch) === extraction.sha256;
  if (extraction.violations.length > 0)
    throw new Error(`the bench patch was rejected: ${JSON.stringify(extraction.violations.slice(0, 3))}`);

  // 4. Verification checkout + apply (the whole gate, with `true` as the one verify command) vs clone + apply.
  const patchPath = join(workDir, "changes.patch");
  writeFileSync(patchPath, extraction.patch);
  const anchorVerify = join(workDir, "anchor-verify");
  const verify = await interleave(
    [
      {
        name: "handoff",
        prep: () => {
          for (const name of readdirSync(scratch)) if (name.startsWith("verify-")) removeTree(join(scratch, name));
        },
        run: async () => {
          const outcome = await runVerification({
            privateGitDir: extraction.privateGitDir,
            baseCommit: base,
            patch: extraction.patch,
            expectedListing: extraction.listing,
            setup: [],
            verify: ["true"],
            // The run as patched: no input held to the base, no holdout, no JUnit report.
            label: "verify",
            hold: [],
            holdouts: [],
            junit: [],
            timeoutMs: 600_000,
            scratchParent: scratch,
            log: new TestLog(() => {}),
          });
          if (outcome.kind !== "passed") throw new Error(`verification did not pass: ${JSON.stringify(outcome).slice(0, 300)}`);
        },
      },
      {
        name: "anchor",
        prep: () => removeTree(anchorVerify),
        run: async () => {
          await git(workDir, ["clone", "--no-local", "--quiet", repo.path, anchorVerify]);
          await git(anchorVerify, ["apply", "--index", patchPath]);
          await run("true", []);
        },
      },
    ],
    rounds,
  );
  record("verification checkout + apply", verify, "handoff", "anchor", "vs git clone --no-local + git apply");
  removeTree(handoffClone);
  removeTree(anchorClone);
  removeTree(anchorVerify);

  // Issue 15: an overlay view of a checkout as the workspace, and extraction from its upper dir (overlay-phases.mjs).
  await benchOverlay({ name, root, source, workDir, rounds, log, record });

  // 5. The whole run, end to end through the CLI: a no-op agent, no verify command. A first run on the commit (an
  // empty cache of base environments each round), and a run again on the same commit (the cache kept, warmed once).
  const runsDir = join(workDir, "runs");
  const again = join(workDir, "run-again");
  emptyDir(again);
  await wholeRun(root, repo.path, runsDir, again);
  const whole = await interleave(
    [
      {
        name: "handoff",
        prep: () => emptyDir(join(workDir, "run-scratch")),
        run: () => wholeRun(root, repo.path, runsDir, join(workDir, "run-scratch")),
      },
      { name: "again", run: () => wholeRun(root, repo.path, runsDir, again) },
    ],
    rounds,
  );
  const anchorSum = 2 * snapshot.anchor.median + clone.anchor.median + extract.anchor.median;
  const sum = { median: Math.round(anchorSum * 10) / 10, min: null, max: null, n: null };
  rows.push({
    phase: "whole run (no-op agent)",
    handoff: whole.handoff,
    anchor: sum,
    ratio: ratio(whole.handoff, sum),
    note: "vs 2 × snapshot + clone + extraction anchors",
  });
  rows.push({
    phase: "whole run again (same commit)",
    handoff: whole.again,
    anchor: sum,
    ratio: ratio(whole.again, sum),
    note: "the base environment cached by an earlier run",
  });
  log(`  whole run: handoff ${whole.handoff.median} ms, again ${whole.again.median} ms, sum of anchors ${sum.median} ms`);
  removeTree(workDir);
  return { rows, samePatch, patchBytes: extraction.patch.length };
}

async function wholeRun(root, repoPath, runsDir, scratch) {
  // Never the user's own cache of base environments: the bench's, inside its scratch directory.
  const env = {
    ...process.env,
    HANDOFF_WORKSPACE_DIR: join(scratch, "ws"),
    HANDOFF_CLI_HOME_DIR: join(scratch, "homes"),
    HANDOFF_CACHE_DIR: join(scratch, "cache"),
  };
  const args = [
    join(root, "bin", "handoff.js"),
    "run",
    "--yes",
    "--allow-dirty",
    "--json",
    "--repo",
    repoPath,
    "--runs-dir",
    runsDir,
    "--backend",
    "command",
    "--agent-cmd",
    "true",
    "--no-verify",
    "bench: a no-op agent",
  ];
  let out;
  try {
    out = await run(process.execPath, args, { env, keep: true });
  } catch (error) {
    // Exit 3 is `no_changes`, the expected verdict for a no-op agent.
    if (!/exited 3:/.test(error.message)) throw error;
    return;
  }
  throw new Error(`a no-op agent should end no_changes (exit 3), not exit 0: ${out.toString().slice(0, 300)}`);
}

function removeLooseObjects(objects) {
  for (const name of readdirSync(objects)) if (/^[0-9a-f]{2}$/.test(name)) rmSync(join(objects, name), { recursive: true });
}

function ratio(handoff, anchor) {
  return Math.round((handoff.median / anchor.median) * 100) / 100;
}

function sha256(bytes) {
  return createHash("sha256").update(bytes).digest("hex");
}
