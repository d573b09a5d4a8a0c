import { z } from "zod";
import type { Written } from "./written.js";
import { TEST_EDIT_POLICIES } from "../../verify/test-edits.js";

/**
 * request.json: the effective request, written once when the run starts (src/run/runner.ts) and read back by the
 * crash sweep for the run's repository and backend (src/run-dir/crash-sweep.ts). docs/run-directory.md describes
 * each field. The run's identity (id, task, repository, backend name) is in every request.json handoff has
 * written; the rest is optional so that a request.json of an older handoff still reads.
 */
export const RequestJson = z.looseObject({
  runId: z.string(),
  /** Absent in a request.json of a handoff from before nonces. */
  nonce: z.string().optional(),
  task: z.string(),
  repo: z.looseObject({ path: z.string(), baseCommit: z.string() }),
  backend: z.looseObject({
    name: z.string(),
    model: z.string().nullable().optional(),
    bin: z.string().nullable().optional(),
    agentCmd: z.string().nullable().optional(),
  }),
  commands: z
    .looseObject({
      setup: z.array(z.string()),
      verify: z.array(z.string()),
      baseline: z.boolean(),
      setupInputs: z.array(z.string()).optional(),
    })
    .optional(),
  workspaceMode: z.enum(["auto", "overlay", "copy"]).optional(),
  cacheDir: z.string().optional(),
  noVerify: z.boolean().optional(),
  testEdits: z.enum(TEST_EDIT_POLICIES).optional(),
  junit: z.array(z.string()).optional(),
  /** Each `--holdout-patch` by real path, hash, size and the files it touches: never its content. */
  holdouts: z.array(z.looseObject({ source: z.string(), sha256: z.string(), bytes: z.number(), files: z.array(z.string()) })).optional(),
  limits: z
    .looseObject({
      timeoutMs: z.number(),
      idleTimeoutMs: z.number(),
      verifyTimeoutMs: z.number(),
      /** `--setup-timeout`, else the verify timeout; absent before it existed (then setup had the verify timeout). */
      setupTimeoutMs: z.number().optional(),
    })
    .optional(),
  policy: z
    .looseObject({
      allow: z.array(z.string()),
      deny: z.array(z.string()),
      maxFiles: z.number(),
      maxFileBytes: z.number(),
      maxPatchBytes: z.number(),
      maxWorkspaceEntries: z.number(),
      maxDepth: z.number(),
    })
    .optional(),
  verificationInputs: z
    .looseObject({
      count: z.number(),
      files: z.array(z.looseObject({ path: z.string(), reason: z.string(), why: z.string() })),
      omitted: z.number(),
      scripts: z.array(z.string()),
      protect: z.array(z.string()),
      allowConfig: z.array(z.string()).optional(),
    })
    .optional(),
  containment: z
    .looseObject({
      sandbox: z.enum(["auto", "bwrap", "none"]),
      verifyNetwork: z.boolean(),
      caps: z.looseObject({ processes: z.number(), memoryBytes: z.number() }),
      /** `--expose`, by real path; absent before issue 27. */
      expose: z.array(z.string()).optional(),
    })
    .optional(),
  /** The names passed with `--env`; their values are never written. */
  env: z.array(z.string()).optional(),
  allowDirty: z.boolean().optional(),
  keepWorkspace: z.boolean().optional(),
  workspacesDir: z.string().optional(),
  cliHomesDir: z.string().optional(),
  /** `--attempts`, `--total-timeout` (null: none) and `--keep-session`; absent in a request.json from before them. */
  attempts: z.number().optional(),
  totalTimeoutMs: z.number().nullable().optional(),
  keepSession: z.boolean().optional(),
  /** The candidate of a candidates run this run is (docs/many-tasks.md); 1 for a run on its own. */
  candidate: z.number().int().optional(),
});
export type RequestJson = Written<z.infer<typeof RequestJson>>;
