import type { SourceRepo } from "../clone/source-repo.js";
import { type VerificationInputs, inputsRecord } from "../verify/inputs.js";
import type { HoldoutRecord } from "../verify/holdouts.js";
import type { ResolvedOptions } from "./options.js";
import type { RequestJson } from "../run-dir/artifacts/request.js";
import { recordedSettings } from "../settings/request-fields.js";

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
  const settings = recordedSettings(o) as Partial<RequestJson>;
  // The settings at their places (src/settings/settings.ts `request`), then what is the run's own.
  return {
    ...settings,
    runId: run.runId,
    nonce: run.nonce,
    task: o.task,
    repo: { path: run.source.topLevel, baseCommit: run.source.baseCommit },
    backend: { ...settings.backend, name: run.backendName },
    cacheDir: o.cacheDir,
    // Never the content: the run directory is reachable by an agent without the sandbox.
    holdouts: o.holdouts.map((holdout, index) => ({
      source: holdout.source,
      sha256: holdout.sha256,
      bytes: holdout.bytes.length,
      files: run.holdouts[index]?.files ?? [],
    })),
    verificationInputs: inputsRecord(run.inputs),
    candidate: o.candidate,
  };
}
