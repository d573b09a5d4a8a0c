import type { SourceRepo } from "../clone/source-repo.js";
import { type VerificationInputs, inputsRecord } from "../verify/inputs.js";
import type { HoldoutRecord } from "../verify/holdouts.js";
import type { ResolvedOptions } from "./options.js";
import type { RequestJson } from "../run-dir/artifacts/request.js";

/** request.json: what was asked of this run, as resolved (never a holdout's content, never an --env value). */
export function requestRecord(run: {
  readonly runId: string;
  readonly nonce: string;
  readonly source: SourceRepo;
  readonly backendName: string;
  readonly options: ResolvedOptions;
  readonly holdouts: readonly HoldoutRecord[];
  readonly inputs: VerificationInputs;
}): RequestJson {
  const o = run.options;
  return {
    runId: run.runId,
    nonce: run.nonce,
    task: o.task,
    repo: { path: run.source.topLevel, baseCommit: run.source.baseCommit },
    backend: { name: run.backendName, model: o.model, bin: o.bin, agentCmd: o.agentCmd },
    commands: { setup: o.setup, verify: o.verify, baseline: o.baseline, setupInputs: o.setupInputs },
    workspaceMode: o.workspaceMode,
    cacheDir: o.cacheDir,
    noVerify: o.noVerify,
    testEdits: o.testEdits,
    junit: o.junit,
    // Never the content: the run directory is reachable by an agent without the sandbox.
    holdouts: o.holdouts.map((holdout, index) => ({
      source: holdout.source,
      sha256: holdout.sha256,
      bytes: holdout.bytes.length,
      files: run.holdouts[index]?.files ?? [],
    })),
    limits: { timeoutMs: o.timeoutMs, idleTimeoutMs: o.idleTimeoutMs, verifyTimeoutMs: o.verifyTimeoutMs },
    policy: o.policy,
    verificationInputs: inputsRecord(run.inputs),
    containment: { sandbox: o.sandbox, verifyNetwork: o.verifyNetwork, caps: o.caps, expose: o.expose },
    env: o.envNames,
    allowDirty: o.allowDirty,
    keepWorkspace: o.keepWorkspace,
    workspacesDir: o.workspacesDir,
    cliHomesDir: o.cliHomesDir,
    attempts: o.attempts,
    totalTimeoutMs: o.totalTimeoutMs,
    keepSession: o.keepSession,
    candidate: o.candidate,
  };
}
