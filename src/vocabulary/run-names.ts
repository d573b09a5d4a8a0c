import { randomBytes } from "node:crypto";

/**
 * The names a run gives what outlives its run directory: its workspace, scratch and CLI-home directories, its
 * cgroup and the marker in its processes' environment. A run id is unique only inside one runs directory (two CI
 * jobs may both pass `--run-id pr-123`), so each name also carries the run's nonce: 16 hex characters of crypto
 * randomness, recorded in checkpoint.json and request.json. The crash sweep acts only on names built from the
 * nonce its run recorded. See docs/crash-safety.md.
 */

/** The variable whose exact `HANDOFF_RUN_NONCE=<nonce>` entry marks every process a run starts. */
export const RUN_MARKER_VARIABLE = "HANDOFF_RUN_NONCE";

export function generateRunNonce(): string {
  return randomBytes(8).toString("hex");
}

export function isRunNonce(value: string): boolean {
  return /^[0-9a-f]{16}$/.test(value);
}

export interface RunNames {
  /** `<workspaces-dir>/<name>`: the disposable clone. */
  readonly workspace: string;
  /** `<workspaces-dir>/<name>`: handoff's scratch space (pristine store, private git dir, verification checkout). */
  readonly scratch: string;
  /** `<cli-homes-dir>/<name>`: the agent CLI's private home. */
  readonly cliHome: string;
  /** The run's cgroup, in each hierarchy. */
  readonly cgroup: string;
}

/** Distinct even when the workspace and CLI-home directories are one directory. */
export function runNames(runId: string, nonce: string): RunNames {
  const base = `${runId}-${nonce}`;
  return { workspace: base, scratch: `${base}-handoff`, cliHome: `${base}-home`, cgroup: `handoff-${base}` };
}
