import { createHash } from "node:crypto";
import { arch, platform } from "node:os";
import { git, splitNul } from "../process/git.js";
import type { SetupInputs } from "./setup-inputs.js";

/**
 * What a base environment is made from, and its key: the base commit (the tracked files), the setup commands, the
 * setup inputs at the base (path and blob id, recorded so that a patch touching one is recognised), and the
 * platform the commands ran on. Two runs with the same key get the same environment.
 */
export interface EnvironmentIdentity {
  readonly key: string;
  readonly baseCommit: string;
  readonly setup: readonly string[];
  readonly inputs: readonly { readonly path: string; readonly oid: string }[];
}

/** Bumped when what an environment holds, or how it is built, changes: older ones are then never reused. */
const BUILD_FORMAT = 1;

export async function environmentIdentity(
  storeGitDir: string,
  baseCommit: string,
  setup: readonly string[],
  inputs: SetupInputs,
  signal?: AbortSignal,
): Promise<EnvironmentIdentity> {
  // Every blob of the base with its path: `ls-tree -r` costs tens of milliseconds at 80,000 files.
  const listed = await git({ gitDir: storeGitDir, cwd: storeGitDir }, ["ls-tree", "-r", "-z", "--full-tree", baseCommit], {
    signal,
    maxBuffer: 512 * 1024 * 1024,
  });
  const found: { path: string; oid: string }[] = [];
  for (const record of splitNul(listed.stdout)) {
    const tab = record.indexOf(0x09);
    const path = record.subarray(tab + 1).toString("utf8");
    if (!inputs.matches(path)) continue;
    const [, type, oid] = record.subarray(0, tab).toString("latin1").split(" ");
    if (type === "blob") found.push({ path, oid: oid! });
  }
  const key = createHash("sha256")
    .update(JSON.stringify({ format: BUILD_FORMAT, baseCommit, setup, inputs: found, platform: platform(), arch: arch() }))
    .digest("hex");
  return { key, baseCommit, setup, inputs: found };
}
