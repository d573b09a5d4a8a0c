import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Containment, JailRole, ProcessJail } from "./containment.js";
import { buildEnvironment } from "./env.js";
import { type GitTarget, git } from "./git.js";
import { type CommandRecord, TestLog, commandPassed, runShellCommands } from "./shell-commands.js";
import { writeIndexCopy } from "./private-git.js";
import { settleRacyEntries } from "./racy-index.js";
import { stageWorkTree } from "./staging.js";

/**
 * Gate 4: verification owned by handoff. A fresh checkout of the base commit, the extracted patch applied with
 * `git apply --index` (no fuzz, never --unsafe-paths), the resulting index required to equal the extracted one,
 * then setup and verify commands, then the patch extracted again: verification must not have changed it.
 * Nothing the agent left in its workspace (ignored files, node_modules, build outputs) takes part.
 */
export type VerificationOutcome =
  | { readonly kind: "passed"; readonly commands: readonly CommandRecord[] }
  | { readonly kind: "command_failed"; readonly commands: readonly CommandRecord[]; readonly failed: CommandRecord }
  | { readonly kind: "setup_failed"; readonly commands: readonly CommandRecord[]; readonly failed: CommandRecord }
  | { readonly kind: "apply_failed"; readonly message: string }
  | { readonly kind: "round_trip_mismatch"; readonly message: string }
  | { readonly kind: "patch_changed"; readonly commands: readonly CommandRecord[] }
  | { readonly kind: "cancelled"; readonly commands: readonly CommandRecord[] };

export interface VerificationRequest {
  readonly privateGitDir: string;
  readonly baseCommit: string;
  /** The extracted patch, given to git on stdin: never read back from the run directory, which an agent without the sandbox can reach. */
  readonly patch: Buffer;
  readonly patchSha256: string;
  readonly expectedListing: Buffer;
  readonly setup: readonly string[];
  readonly verify: readonly string[];
  readonly timeoutMs: number;
  readonly scratchParent: string;
  readonly log: TestLog;
  readonly signal?: AbortSignal;
  readonly onCommand?: (phase: string, command: string) => void;
  /** The run's containment: every setup and verify command runs in its own jail (no network for verify). */
  readonly containment?: Containment;
}

interface Checkout {
  readonly dir: string;
  readonly indexFile: string;
  readonly env: Record<string, string>;
  /** The checkout's tree and its private HOME and TMPDIR: all a command there may write. */
  readonly writable: readonly string[];
}

function jailFor(containment: Containment | undefined, checkout: Checkout, role: JailRole): ((command: string) => ProcessJail) | undefined {
  if (!containment) return undefined;
  return (command) => containment.jail({ role, label: command, cwd: checkout.dir, writable: checkout.writable });
}

/** A fresh checkout of the base commit in a new directory, with its own index in the private git dir. A cancel kills it. */
async function checkoutBase(privateGitDir: string, baseCommit: string, scratchParent: string, label: string, signal?: AbortSignal): Promise<Checkout> {
  const root = mkdtempSync(join(scratchParent, `${label}-`));
  const dir = join(root, "tree");
  const home = join(root, "home");
  const tmp = join(root, "tmp");
  for (const path of [dir, home, tmp]) mkdirSync(path, { mode: 0o700 });
  const indexFile = join(privateGitDir, `${label}.index`);
  const target = { gitDir: privateGitDir, workTree: dir, indexFile, cwd: dir };
  await git(target, ["read-tree", baseCommit], { signal });
  await git(target, ["-c", "checkout.workers=2", "checkout-index", "-a", "-f"], { signal });
  await git(target, ["update-index", "-q", "--refresh"], { okExitCodes: [1], signal });
  return { dir, indexFile, env: buildEnvironment({ home, tmp, set: { CI: "true" } }), writable: [dir, home, tmp] };
}

export async function runVerification(request: VerificationRequest): Promise<VerificationOutcome> {
  if (request.setup.length === 0 && request.verify.length === 0) return roundTripInIndex(request);
  const checkout = await checkoutBase(request.privateGitDir, request.baseCommit, request.scratchParent, "verify", request.signal);
  const target = { gitDir: request.privateGitDir, workTree: checkout.dir, indexFile: checkout.indexFile, cwd: checkout.dir };
  const applied = await applyAndCompare(target, "--index", request, "the patch applied to a fresh checkout does not give the index handoff extracted");
  if (applied) return applied;
  // Keep the post-apply index in memory (the commands cannot reach it): re-extraction stages against it, so only
  // what the commands touched is re-hashed.
  const appliedIndex = { bytes: readFileSync(checkout.indexFile), mtimeMs: statSync(checkout.indexFile).mtimeMs };

  const shell = { cwd: checkout.dir, env: checkout.env, timeoutMs: request.timeoutMs, signal: request.signal, log: request.log };
  const setup = await runShellCommands(request.setup, {
    ...shell,
    phase: "setup",
    onCommand: (c) => request.onCommand?.("setup", c),
    jail: jailFor(request.containment, checkout, "setup"),
  });
  if (request.signal?.aborted) return { kind: "cancelled", commands: setup };
  const failedSetup = setup.find((record) => !commandPassed(record));
  if (failedSetup) return { kind: "setup_failed", commands: setup, failed: failedSetup };
  const verify = await runShellCommands(request.verify, {
    ...shell,
    phase: "verify",
    onCommand: (c) => request.onCommand?.("verify", c),
    jail: jailFor(request.containment, checkout, "verify"),
  });
  const commands = [...setup, ...verify];
  if (request.signal?.aborted) return { kind: "cancelled", commands };
  const failed = verify.find((record) => !commandPassed(record));
  if (failed) return { kind: "command_failed", commands, failed };

  const settled = settleRacyEntries(appliedIndex, checkout.dir, request.baseCommit.length === 64 ? "sha256" : "sha1");
  const againIndex = join(request.privateGitDir, "verify-again.index");
  writeIndexCopy(againIndex, settled.bytes, settled.mtimeMs);
  const again = await stageWorkTree({
    gitDir: request.privateGitDir,
    workTree: checkout.dir,
    indexFile: againIndex,
    baseCommit: request.baseCommit,
    cwd: checkout.dir,
    signal: request.signal,
  });
  if (createHash("sha256").update(again.patch).digest("hex") !== request.patchSha256) return { kind: "patch_changed", commands };
  return { kind: "passed", commands };
}

/**
 * With no command to run there is nothing to check out: the round trip (apply at the base, same index) is done in
 * a temporary index alone, which costs milliseconds instead of a full checkout.
 */
async function roundTripInIndex(request: VerificationRequest): Promise<VerificationOutcome> {
  const indexFile = join(request.privateGitDir, "roundtrip.index");
  const target = { gitDir: request.privateGitDir, indexFile, cwd: request.scratchParent };
  await git(target, ["read-tree", request.baseCommit]);
  return (
    (await applyAndCompare(target, "--cached", request, "the patch applied at the base commit does not give the index handoff extracted")) ?? {
      kind: "passed",
      commands: [],
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

export type BaselineOutcome = { readonly passed: boolean; readonly commands: readonly CommandRecord[] };

/** `--baseline`: the same commands on the untouched base, so a red environment is never blamed on the patch. */
export async function runBaseline(request: Omit<VerificationRequest, "patch" | "patchSha256" | "expectedListing">): Promise<BaselineOutcome> {
  const checkout = await checkoutBase(request.privateGitDir, request.baseCommit, request.scratchParent, "baseline", request.signal);
  const shell = { cwd: checkout.dir, env: checkout.env, timeoutMs: request.timeoutMs, signal: request.signal, log: request.log };
  const setup = await runShellCommands(request.setup, { ...shell, phase: "baseline-setup", jail: jailFor(request.containment, checkout, "setup") });
  if (setup.some((record) => !commandPassed(record))) return { passed: false, commands: setup };
  const verify = await runShellCommands(request.verify, { ...shell, phase: "baseline", jail: jailFor(request.containment, checkout, "verify") });
  return { passed: verify.every(commandPassed) && verify.length === request.verify.length, commands: [...setup, ...verify] };
}
