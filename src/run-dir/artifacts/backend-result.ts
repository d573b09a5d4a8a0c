import { z } from "zod";
import { lazySchema } from "../../lib/lazy-schema.js";
import type { Written } from "./written.js";

/**
 * backend-result.json: what the backend returned (ExternalAgentResult in src/agent/backend.ts) with the backend's
 * name, or `{ backend, ran: false }` when the agent never ran. Written by the run (src/run/runner.ts) and by the crash
 * sweep, read back by the sweep for the agent's part of a crashed run's result.json.
 */
const NotRun = lazySchema(() => z.looseObject({ backend: z.string(), ran: z.literal(false) }));

const Ran = lazySchema(() =>
  z.looseObject({
    backend: z.string(),
    outcome: z.looseObject({ kind: z.enum(["finished", "failed", "timed_out", "cancelled"]) }),
    executable: z.string().nullable(),
    version: z.string().nullable(),
    sessionId: z.string().nullable(),
    exitCode: z.number().nullable(),
    signal: z.string().nullable(),
    finalMessage: z.string().nullable(),
    usage: z.looseObject({ inputTokens: z.number(), outputTokens: z.number(), costUsd: z.number().nullable() }).nullable(),
    warnings: z.array(z.looseObject({ rule: z.string(), path: z.string(), message: z.string() })).optional(),
    stdoutLines: z.number().optional(),
    stderrTail: z.string(),
    durationMs: z.number(),
  }),
);

export const BackendResultJson = lazySchema(() => z.union([NotRun, Ran]));
export type BackendResultJson = Written<z.infer<typeof BackendResultJson>>;
