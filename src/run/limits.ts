import { z } from "zod";
import { UsageError } from "../lib/errors.js";
import { DEFAULT_POLICY, type PatchPolicy } from "../patch/rules/policy.js";

/**
 * The patch and workspace limits as a user sets them: a `handoff run` option, a `.handoff.json` key, or the library's
 * `limits` (bytes). The command line and the library win over the file, the file over the defaults. Sizes are MiB on
 * the command line and in the file, bytes in `PatchPolicy`. handoff holds a changed file and the patch in memory, so
 * both stay under 1 GiB.
 */
export type PatchLimits = Omit<PatchPolicy, "allow" | "deny">;

const MIB = 1024 * 1024;
const MAX_SIZE_MIB = 1024;

/** One limit: its `PatchPolicy` field, its option, its `.handoff.json` key and the unit both of those take. */
const LIMITS = [
  { field: "maxFiles", option: "--max-files", key: "maxFiles", unit: 1, most: Number.MAX_SAFE_INTEGER },
  { field: "maxFileBytes", option: "--max-file-size", key: "maxFileSize", unit: MIB, most: MAX_SIZE_MIB * MIB },
  { field: "maxPatchBytes", option: "--max-patch-size", key: "maxPatchSize", unit: MIB, most: MAX_SIZE_MIB * MIB },
  { field: "maxWorkspaceEntries", option: "--max-workspace-entries", key: "maxWorkspaceEntries", unit: 1, most: Number.MAX_SAFE_INTEGER },
  { field: "maxDepth", option: "--max-depth", key: "maxDepth", unit: 1, most: Number.MAX_SAFE_INTEGER },
] as const;

/** The `.handoff.json` keys, for the config schema: positive whole numbers (MiB for the sizes). */
export const LIMIT_CONFIG_KEYS = {
  maxFiles: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
  maxFileSize: z.number().int().positive().max(MAX_SIZE_MIB).optional(),
  maxPatchSize: z.number().int().positive().max(MAX_SIZE_MIB).optional(),
  maxWorkspaceEntries: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
  maxDepth: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
};

export type LimitConfig = { readonly [K in keyof typeof LIMIT_CONFIG_KEYS]?: number };

/** The limits of one run, each a positive whole number within its bound; a bad one is a usage error. */
export function resolveLimits(given: Partial<PatchLimits> | undefined, config: LimitConfig): PatchLimits {
  const limits: Partial<Record<keyof PatchLimits, number>> = {};
  for (const limit of LIMITS) {
    const fromConfig = config[limit.key];
    const value = given?.[limit.field] ?? (fromConfig === undefined ? undefined : fromConfig * limit.unit) ?? DEFAULT_POLICY[limit.field];
    if (!Number.isInteger(value) || value <= 0) throw new UsageError("bad_number", `${limit.option} must be a positive whole number`);
    if (value > limit.most) {
      const most = limit.unit === MIB ? `${MAX_SIZE_MIB} MiB: handoff holds a changed file and the patch in memory` : String(limit.most);
      throw new UsageError("bad_number", `${limit.option} must be at most ${most}`);
    }
    limits[limit.field] = value;
  }
  return limits as PatchLimits;
}
