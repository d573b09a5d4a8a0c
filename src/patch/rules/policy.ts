import { globToRegExp } from "./glob.js";

/** What a patch may contain. Defaults are generous for real tasks and small enough to keep handoff bounded. */
export interface PatchPolicy {
  /** Every changed path must match one of these (empty: everything allowed). */
  readonly allow: readonly string[];
  /** No changed path may match any of these. */
  readonly deny: readonly string[];
  /** Most changed files in one patch. */
  readonly maxFiles: number;
  /** Largest new content of one changed file, in bytes. */
  readonly maxFileBytes: number;
  /** Largest patch, in bytes. */
  readonly maxPatchBytes: number;
  /** Most entries the workspace walk visits before giving up (ignored trees included). */
  readonly maxWorkspaceEntries: number;
  /** Deepest directory nesting the workspace walk enters. */
  readonly maxDepth: number;
}

/**
 * The patch and workspace limits as the library takes them (`RunOptions.limits`, in bytes); each is a setting of its
 * own (`--max-files`, … in MiB on the command line and in `.handoff.json`: src/settings/settings.ts).
 */
export type PatchLimits = Omit<PatchPolicy, "allow" | "deny">;

export const DEFAULT_POLICY: PatchPolicy = {
  allow: [],
  deny: [],
  maxFiles: 1000,
  maxFileBytes: 8 * 1024 * 1024,
  maxPatchBytes: 64 * 1024 * 1024,
  maxWorkspaceEntries: 2_000_000,
  maxDepth: 256,
};

export interface CompiledPolicy extends PatchPolicy {
  readonly allowPatterns: readonly RegExp[];
  readonly denyPatterns: readonly RegExp[];
}

export function compilePolicy(policy: PatchPolicy): CompiledPolicy {
  return { ...policy, allowPatterns: policy.allow.map(globToRegExp), denyPatterns: policy.deny.map(globToRegExp) };
}
