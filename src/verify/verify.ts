import { mkdirSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Containment, JailRole, ProcessJail } from "../containment/containment.js";
import { buildEnvironment } from "../process/env.js";
import { type GitTarget, git } from "../process/git.js";
import { type CommandRecord, type TestLog, commandPassed, runShellCommands } from "./shell-commands.js";
import { writeIndexCopy } from "../clone/private-git.js";
import type { BaseEnvironment } from "../environment/environment.js";
import { downloadCacheEnv } from "../environment/download-caches.js";
import { type WorkspaceMode, copyDownloads, copyHome, copyOutputs, mountView } from "../environment/view.js";
import { settleRacyEntries } from "../clone/racy-index.js";
import { stageWorkTree } from "../patch/staging.js";
import { type HoldStep, holdToBase } from "./hold-to-base.js";
import { type Holdout, applyHoldouts } from "./holdouts.js";
import { type JunitEvidence, readJunitEvidence } from "./junit.js";
import { takeJunitFiles } from "./junit-files.js";
import { type TreeChanges, compareListings } from "./tree-changes.js";

/**
 * Gate 4: verification owned by handoff. A fresh checkout of the base commit, the extracted patch applied with
 * `git apply --index` (no fuzz, never --unsafe-paths), the resulting index required to equal the extracted one,
 * then (for the run held to the base) the changed verification inputs put back, then the held-out patches, then
 * setup and verify commands, then the tree staged again: verification must not have changed what it tested.
 * Nothing the agent left in its workspace (ignored files, node_modules, build outputs) takes part.
 */
export type VerificationOutcome =
  | { readonly kind: "passed"; readonly commands: readonly CommandRecord[]; readonly tests: JunitEvidence | null }
  | {
      readonly kind: "command_failed";
      readonly commands: readonly CommandRecord[];
      readonly failed: CommandRecord;
      readonly tests: JunitEvidence | null;
    }
  | { readonly kind: "setup_failed"; readonly commands: readonly CommandRecord[]; readonly failed: CommandRecord }
  | { readonly kind: "apply_failed"; readonly message: string }
  | { readonly kind: "round_trip_mismatch"; readonly message: string }
  | {
      readonly kind: "patch_changed";
      readonly commands: readonly CommandRecord[];
      /** What changed; null when git's answer was too big to read. */
      readonly changes: TreeChanges | null;
    }
  | { readonly kind: "holdout_failed"; readonly source: string; readonly message: string }
  | { readonly kind: "cancelled"; readonly commands: readonly CommandRecord[] };

export interface VerificationRequest {
  readonly privateGitDir: string;
  readonly baseCommit: string;
  /** The extracted patch, given to git on stdin: never read back from the run directory, which an agent without the sandbox can reach. */
  readonly patch: Buffer;
  readonly expectedListing: Buffer;
  readonly setup: readonly string[];
  readonly verify: readonly string[];
  /** "verify" runs the tree as patched; "held" the same tree with the changed verification inputs put back. */
  readonly label: "verify" | "held";
  /** The changed verification inputs to put back (the held run); empty for the run as patched. */
  readonly hold: readonly HoldStep[];
  readonly holdouts: readonly Holdout[];
  /** JUnit files the verify commands write, relative to the checkout (`--junit`). */
  readonly junit: readonly string[];
  /** Each verify command's limit, and each setup command's (`--setup-timeout`, else the verify timeout). */
  readonly timeoutMs: number;
  readonly setupTimeoutMs: number;
  readonly scratchParent: string;
  readonly log: TestLog;
  readonly signal?: AbortSignal;
  readonly onCommand?: (phase: string, command: string) => void;
  /** The run's containment: every setup and verify command runs in its own jail (no network for verify). */
  readonly containment?: Containment;
  /** The base environment the checkout is made from (a view, or a checkout plus its outputs); null: a plain checkout. */
  readonly environment?: { readonly environment: BaseEnvironment; readonly mode: WorkspaceMode } | null;
  /** The persistent download caches: a setup here gets a throw-away copy of them (null: none). */
  readonly downloads?: string | null;
  /**
   * Runs each step of handoff's own git that writes objects (never a setup or verify command): the pipeline's
   * afterOwnWrites, so that git re-dating the pristine store's objects is not taken for tampering. Default: just runs.
   */
  readonly ownWrites?: OwnWrites;
}

export type OwnWrites = <T>(write: () => Promise<T>) => Promise<T>;
const justRun: OwnWrites = (write) => write();

interface Checkout {
  readonly dir: string;
  readonly indexFile: string;
  readonly env: Record<string, string>;
  /** The checkout's tree and its private HOME and TMPDIR: all a command there may write. */
  readonly writable: readonly string[];
  /** Variables for the setup commands only: the throw-away download caches, when there are any. */
  readonly setupEnv: Readonly<Record<string, string>>;
}

function jailFor(containment: Containment | undefined, checkout: Checkout, role: JailRole): ((command: string) => ProcessJail) | undefined {
  if (!containment) return undefined;
  return (command) => containment.jail({ role, label: command, cwd: checkout.dir, writable: checkout.writable });
}

/**
 * A fresh checkout of the base commit in a new directory, with its own index in the private git dir. From a base
 * environment: an overlay view of it (its index copied, its stat data match), or a checkout plus a copy of what
 * setup made; either way with a copy of setup's HOME. A cancel kills it.
 */
async function checkoutBase(
  request: Pick<VerificationRequest, "privateGitDir" | "baseCommit" | "scratchParent" | "signal" | "environment" | "downloads" | "setup">,
  label: string,
): Promise<Checkout> {
  const { privateGitDir, baseCommit, signal } = request;
  const root = mkdtempSync(join(request.scratchParent, `${label}-`));
  const dir = join(root, "tree");
  const home = join(root, "home");
  const tmp = join(root, "tmp");
  for (const path of [dir, home, tmp]) mkdirSync(path, { mode: 0o700 });
  const indexFile = join(privateGitDir, `${label}.index`);
  const target = { gitDir: privateGitDir, workTree: dir, indexFile, cwd: dir };
  const from = request.environment ?? null;
  // setup's HOME is copied beside the checkout: neither reads the other.
  const homeCopied = from ? copyHome(from.environment, home, signal) : null;
  try {
    if (from?.mode === "overlay") {
      await mountView(from.environment, dir, join(root, "overlay"));
      writeIndexCopy(indexFile, from.environment.index.bytes, from.environment.index.mtimeMs);
    } else {
      await git(target, ["read-tree", baseCommit], { signal });
      await git(target, ["-c", "checkout.workers=2", "checkout-index", "-a", "-f"], { signal });
      await git(target, ["update-index", "-q", "--refresh"], { okExitCodes: [1], signal });
      if (from) await copyOutputs(from.environment, dir, signal);
    }
  } finally {
    // Never left running past a failure of the checkout: its error is the one thrown.
    await homeCopied?.catch(() => {});
  }
  await homeCopied;
  const writable = [dir, home, tmp];
  let setupEnv = {};
  if (request.downloads && request.setup.length > 0) {
    const downloads = join(root, "downloads");
    await copyDownloads(request.downloads, downloads, signal);
    setupEnv = downloadCacheEnv(downloads, request.setup);
    writable.push(downloads);
  }
  return { dir, indexFile, env: buildEnvironment({ home, tmp, set: { CI: "true" } }), writable, setupEnv };
}

const PHASES = {
  verify: { setup: "setup", verify: "verify" },
  held: { setup: "held-setup", verify: "held" },
} as const;

export async function runVerification(request: VerificationRequest): Promise<VerificationOutcome> {
  if (request.setup.length === 0 && request.verify.length === 0) return roundTripInIndex(request);
  const phases = PHASES[request.label];
  const own = request.ownWrites ?? justRun;
  const checkout = await checkoutBase(request, request.label);
  const target = { gitDir: request.privateGitDir, workTree: checkout.dir, indexFile: checkout.indexFile, cwd: checkout.dir };
  const ready = await own(async () => {
    const applied = await applyAndCompare(
      target,
      "--index",
      request,
      "the patch applied to a fresh checkout does not give the index handoff extracted",
    );
    if (applied) return applied;
    if (request.hold.length > 0) await holdToBase(target, request.baseCommit, request.hold, request.signal);
    const heldOut = await applyHoldouts(target, request.holdouts, request.signal);
    if (heldOut.kind === "conflict") return { kind: "holdout_failed", source: heldOut.source, message: heldOut.message } as const;
    // What the commands are given: the patch, inputs held, holdouts applied. Afterwards the tree must still be this.
    // With nothing held or applied after the patch, that is the listing the round trip just found equal to this one.
    if (request.hold.length === 0 && request.holdouts.length === 0) return { kind: "ready", prepared: request.expectedListing } as const;
    return { kind: "ready", prepared: (await git(target, ["ls-files", "-s", "-z"], { signal: request.signal })).stdout } as const;
  });
  if (ready.kind !== "ready") return ready;
  const prepared = ready.prepared;
  // Keep the post-apply index in memory (the commands cannot reach it): re-extraction stages against it, so only
  // what the commands touched is re-hashed.
  const appliedIndex = { bytes: readFileSync(checkout.indexFile), mtimeMs: statSync(checkout.indexFile).mtimeMs };

  const shell = { cwd: checkout.dir, env: checkout.env, timeoutMs: request.timeoutMs, signal: request.signal, log: request.log };
  const setup = await runShellCommands(request.setup, {
    ...shell,
    env: { ...checkout.env, ...checkout.setupEnv },
    timeoutMs: request.setupTimeoutMs,
    phase: phases.setup,
    onCommand: (c) => request.onCommand?.(phases.setup, c),
    jail: jailFor(request.containment, checkout, "setup"),
  });
  if (request.signal?.aborted) return { kind: "cancelled", commands: setup };
  const failedSetup = setup.find((record) => !commandPassed(record));
  if (failedSetup) return { kind: "setup_failed", commands: setup, failed: failedSetup };
  const verify = await runShellCommands(request.verify, {
    ...shell,
    phase: phases.verify,
    onCommand: (c) => request.onCommand?.(phases.verify, c),
    jail: jailFor(request.containment, checkout, "verify"),
  });
  const commands = [...setup, ...verify];
  if (request.signal?.aborted) return { kind: "cancelled", commands };
  const tests = takeJunitFiles(checkout.dir, request.junit, prepared);
  const failed = verify.find((record) => !commandPassed(record));
  if (failed) return { kind: "command_failed", commands, failed, tests };

  const settled = settleRacyEntries(appliedIndex, checkout.dir, request.baseCommit.length === 64 ? "sha256" : "sha1");
  const againIndex = join(request.privateGitDir, `${request.label}-again.index`);
  writeIndexCopy(againIndex, settled.bytes, settled.mtimeMs);
  // The commands have ended (their jails with them): what stages their tree now is handoff's git alone.
  const again = await own(() =>
    stageWorkTree({
      gitDir: request.privateGitDir,
      workTree: checkout.dir,
      indexFile: againIndex,
      baseCommit: request.baseCommit,
      cwd: checkout.dir,
      signal: request.signal,
    }),
  );
  if (again.overflow === "changes") return { kind: "patch_changed", commands, changes: null };
  if (!again.listing.equals(prepared)) return { kind: "patch_changed", commands, changes: compareListings(prepared, again.listing) };
  if (again.overflow !== null) return { kind: "patch_changed", commands, changes: null };
  return { kind: "passed", commands, tests };
}

/**
 * With no command to run there is nothing to check out: the round trip (apply at the base, same index) is done in
 * a temporary index alone, which costs milliseconds instead of a full checkout.
 */
async function roundTripInIndex(request: VerificationRequest): Promise<VerificationOutcome> {
  const indexFile = join(request.privateGitDir, "roundtrip.index");
  const target = { gitDir: request.privateGitDir, indexFile, cwd: request.scratchParent };
  await git(target, ["read-tree", request.baseCommit]);
  const own = request.ownWrites ?? justRun;
  return (
    (await own(() =>
      applyAndCompare(target, "--cached", request, "the patch applied at the base commit does not give the index handoff extracted"),
    )) ?? {
      kind: "passed",
      commands: [],
      tests: null,
    }
  );
}

/** The round trip: `git apply` the patch (no fuzz), then the index must be the one extraction produced. Null when it is. */
async function applyAndCompare(
  target: GitTarget,
  where: "--index" | "--cached",
  request: Pick<VerificationRequest, "patch" | "expectedListing">,
  mismatch: string,
): Promise<Extract<VerificationOutcome, { kind: "apply_failed" | "round_trip_mismatch" }> | null> {
  try {
    await git(target, ["apply", where, "--whitespace=nowarn", "-"], { input: request.patch });
  } catch (error) {
    return { kind: "apply_failed", message: (error as Error).message };
  }
  const listing = (await git(target, ["ls-files", "-s", "-z"])).stdout;
  return listing.equals(request.expectedListing) ? null : { kind: "round_trip_mismatch", message: mismatch };
}

export interface BaselineOutcome {
  /** Every verify command passed on the base (setup first). */
  readonly passed: boolean;
  readonly commands: readonly CommandRecord[];
  /** A setup command failed on the untouched base: no verify command ran there. */
  readonly setupFailed: boolean;
  /** The holdouts applied to the base as they do after the patch; false when one did not (the base then ran without them). */
  readonly holdoutsApplied: boolean | null;
  readonly tests: JunitEvidence | null;
}

/**
 * `--baseline`: the same commands on the untouched base (with the holdouts, when they apply there), so a red
 * environment is never blamed on the patch. Every verify command runs, even after one fails: the verdict compares
 * each command's result on the base with its result after the patch.
 */
export async function runBaseline(
  request: Omit<VerificationRequest, "patch" | "expectedListing" | "label" | "hold">,
): Promise<BaselineOutcome> {
  let checkout = await checkoutBase(request, "baseline");
  let holdoutsApplied: boolean | null = null;
  if (request.holdouts.length > 0) {
    const target = { gitDir: request.privateGitDir, workTree: checkout.dir, indexFile: checkout.indexFile, cwd: checkout.dir };
    const own = request.ownWrites ?? justRun;
    holdoutsApplied = (await own(() => applyHoldouts(target, request.holdouts, request.signal))).kind === "applied";
    // A holdout made on top of the fix may not apply to the base alone: the base then runs as it is, in a new checkout.
    if (!holdoutsApplied) checkout = await checkoutBase(request, "baseline-plain");
  }
  const shell = { cwd: checkout.dir, env: checkout.env, timeoutMs: request.timeoutMs, signal: request.signal, log: request.log };
  const setup = await runShellCommands(request.setup, {
    ...shell,
    env: { ...checkout.env, ...checkout.setupEnv },
    timeoutMs: request.setupTimeoutMs,
    phase: "baseline-setup",
    onCommand: (c) => request.onCommand?.("baseline-setup", c),
    jail: jailFor(request.containment, checkout, "setup"),
  });
  if (setup.some((record) => !commandPassed(record)))
    return { passed: false, commands: setup, setupFailed: true, holdoutsApplied, tests: null };
  const verify = await runShellCommands(request.verify, {
    ...shell,
    phase: "baseline",
    keepGoing: true,
    onCommand: (c) => request.onCommand?.("baseline", c),
    jail: jailFor(request.containment, checkout, "verify"),
  });
  const passed = verify.every(commandPassed) && verify.length === request.verify.length;
  // The baseline's checkout is not staged again: its reports are only read.
  const tests = request.junit.length > 0 ? readJunitEvidence(checkout.dir, request.junit) : null;
  return { passed, commands: [...setup, ...verify], setupFailed: false, holdoutsApplied, tests };
}
