import { z } from "zod";
import { lazySchema } from "../../lib/lazy-schema.js";
import type { Written } from "./written.js";
import { TERMINAL_REASONS } from "../../vocabulary/terminal-reasons.js";
import { isRunNonce } from "../../vocabulary/run-names.js";

/**
 * Who runs a run (checkpoint.json `owner`), and who holds a sweep's `.sweep.lock`: a later start judges it dead when
 * the pid is gone or names a process with another start time (src/run-dir/crash-sweep.ts).
 */
export const OwnerJson = lazySchema(() =>
  z.looseObject({
    pid: z.number().int().positive(),
    /** Field 22 of /proc/<pid>/stat; null where there is no /proc. */
    startTime: z.number().nullable(),
    host: z.string().optional(),
    pidNamespace: z.string().nullable().optional(),
  }),
);
export type OwnerJson = Written<z.infer<typeof OwnerJson>>;

/**
 * checkpoint.json: where the run is, who owns it and what it made outside the run directory. Written by
 * RunDirectory (src/run-dir/run-dir.ts) at every phase and by the crash sweep when it ends a run; read back by the
 * sweep. Every field is optional: a checkpoint of an older handoff (no nonce, no owner, no cleanup) still reads.
 */
export const CheckpointJson = lazySchema(() =>
  z.looseObject({
    runId: z.string().optional(),
    /** Absent in checkpoints of a handoff from before nonces: then nothing is matched by marker. */
    nonce: z.string().refine(isRunNonce).optional(),
    phase: z.string().nullable().optional(),
    /** With `--attempts`: the attempt the run is in (the sweep of a crashed run names it). */
    attempt: z.number().int().positive().optional(),
    pid: z.number().int().positive().optional(),
    owner: OwnerJson.optional(),
    resources: z
      .looseObject({
        workspaceRoot: z.string().optional(),
        scratch: z.string().optional(),
        cliHome: z.string().optional(),
        cgroups: z.array(z.string()).max(64).optional(),
      })
      .optional(),
    /** What the run wrote to files the sweep reads back (changes.patch): a file that does not match is not the run's. */
    artifacts: z.record(z.string(), z.looseObject({ bytes: z.number(), sha256: z.string() })).optional(),
    updatedAt: z.string().optional(),
    done: z.boolean().optional(),
    terminalReason: z.enum(TERMINAL_REASONS).optional(),
    detail: z.string().nullable().optional(),
    /** `pending` from result.json until the run's directories are gone; `done` after. */
    cleanup: z.enum(["pending", "done"]).optional(),
    /** Set by the crash sweep that ended or cleaned up the run: when, and its pid. */
    sweptAt: z.string().optional(),
    sweptBy: z.number().optional(),
  }),
);
export type CheckpointJson = Written<z.infer<typeof CheckpointJson>>;

/** What a run adds to its checkpoint at the end: done, its verdict, and whether its clean-up is done. */
export type CheckpointEnding = Pick<CheckpointJson, "done" | "terminalReason" | "detail" | "cleanup">;
