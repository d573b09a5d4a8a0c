import { z } from "zod";
import { lazySchema } from "../lib/lazy-schema.js";
import { TERMINAL_REASONS } from "../vocabulary/terminal-reasons.js";
import { TEST_EDIT_POLICIES } from "../verify/test-edits.js";
import { TestEvidence } from "../verify/test-evidence.js";
import { SummaryEvidence } from "../verify/summary-evidence.js";
import type { VerdictDetail } from "./detail.js";

/** result.json, schema version 1 (docs/run-directory.md#resultjson). The schema reads it back for `show` and `apply`. */
const Finding = lazySchema(() => z.looseObject({ path: z.string(), rule: z.string(), message: z.string() }));
const Command = lazySchema(() =>
  z.looseObject({
    command: z.string(),
    phase: z.string().optional(),
    exitCode: z.number().nullable(),
    timedOut: z.boolean(),
    durationMs: z.number(),
    limitHit: z.enum(["processes", "memory"]).nullable().optional(),
    spawnError: z.string().nullable().optional(),
    /** Exit 126/127 because the command's own program could not start: the environment's failure, not the patch's. */
    startFailure: z.looseObject({ program: z.string(), said: z.string() }).nullable().optional(),
  }),
);

const CommandState = lazySchema(() => z.enum(["green", "red", "not_run"]));

const ContainmentEvent = lazySchema(() => z.looseObject({ kind: z.string(), role: z.string(), label: z.string() }));

const NetworkAccessValue = lazySchema(() => z.union([z.enum(["none", "host", "filtered"]), z.boolean()]));

const HostTally = lazySchema(() =>
  z.looseObject({
    host: z.string(),
    port: z.number(),
    roles: z.array(z.string()),
    labels: z.array(z.string()),
    rule: z.string().nullable(),
    reason: z.string().nullable(),
    attempts: z.number(),
    bytesUp: z.number(),
    bytesDown: z.number(),
    /** Absent in a result.json written before it was recorded. */
    beforeModelAnswer: z.boolean().optional(),
    /** `connect`, `http`, `tunnel`, `model`, or around the proxy `tcp`, `udp`, `dns`; absent in older results. */
    via: z.string().optional(),
  }),
);

/** result.json `network` (src/egress/egress-record.ts `NetworkRecord`): how the agent and setup reached out, and what they tried. */
const Network = lazySchema(() =>
  z.looseObject({
    mode: z.enum(["filtered", "open"]),
    enforced: z.boolean(),
    reason: z.string().nullable(),
    rules: z.array(z.string()),
    allowed: z.array(HostTally),
    blocked: z.array(HostTally),
    attempts: z.array(
      z.looseObject({
        at: z.string(),
        role: z.string(),
        label: z.string(),
        host: z.string(),
        port: z.number(),
        via: z.string(),
        allowed: z.boolean(),
        rule: z.string().nullable(),
        reason: z.string().nullable(),
        bytesUp: z.number(),
        bytesDown: z.number(),
      }),
    ),
    attemptsLeftOut: z.number(),
    /** Each model key the agent was given: `forwarded` (a placeholder inside, the key added outside) or `with_agent`. */
    keys: z
      .array(z.looseObject({ backend: z.string(), variable: z.string(), held: z.enum(["forwarded", "with_agent"]), detail: z.string() }))
      .optional(),
    /** Each login file of the CLI's home the agent could read and write (an OAuth login that refreshes). */
    logins: z.array(z.looseObject({ backend: z.string(), file: z.string(), held: z.literal("with_agent"), detail: z.string() })).optional(),
    /** Whether the attempts around the proxy (raw TCP, UDP, DNS) were recorded; absent in older results. */
    aroundProxy: z.looseObject({ recorded: z.boolean(), detail: z.string() }).optional(),
  }),
);

/** A process the crash sweep dealt with (src/containment/survivors.ts `Survivor`, without its start time). */
const SweptProcess = lazySchema(() => z.looseObject({ pid: z.number(), command: z.string(), reason: z.string() }));

const Usage = lazySchema(() => z.looseObject({ inputTokens: z.number(), outputTokens: z.number(), costUsd: z.number().nullable() }));

/** One attempt of a run (`--attempts`): its own verdict, patch and usage (docs/attempts.md). */
const AttemptEntry = lazySchema(() =>
  z.looseObject({
    attempt: z.number(),
    terminalReason: z.enum(TERMINAL_REASONS),
    detail: z.string().nullable(),
    summary: z.string(),
    sessionId: z.string().nullable(),
    patchSha256: z.string().nullable(),
    usage: Usage.nullable(),
    durationMs: z.number(),
    /** The feedback handoff sent after this attempt (a path in the run directory), or null when none was sent. */
    feedback: z.string().nullable(),
  }),
);

/** One candidate of a best-of-N run (`--candidates`, repeated `-b`; docs/many-tasks.md): its own verdict, in short. */
export const CandidateEntry = lazySchema(() =>
  z.looseObject({
    k: z.number().int(),
    backend: z.string(),
    runId: z.string(),
    runDir: z.string(),
    terminalReason: z.enum(TERMINAL_REASONS),
    exitCode: z.number().int(),
    warnings: z.number().int(),
    /** The size of its changes.patch; 0 without a patch. */
    patchBytes: z.number(),
    patchSha256: z.string().nullable(),
    durationMs: z.number(),
    finishedAt: z.string(),
    costUsd: z.number().nullable(),
    /** The other candidates whose (non-empty) patch is byte for byte the same. */
    agreesWith: z.array(z.number().int()),
  }),
);
export type CandidateEntry = z.infer<typeof CandidateEntry>;

export const RunResult = lazySchema(() =>
  z.looseObject({
    schemaVersion: z.literal(1),
    runId: z.string(),
    runDir: z.string(),
    status: z.enum(["completed", "failed", "cancelled"]),
    terminalReason: z.enum(TERMINAL_REASONS),
    detail: z.string().nullable(),
    summary: z.string(),
    hint: z.string().nullable(),
    repo: z.looseObject({ path: z.string(), baseCommit: z.string() }),
    backend: z.looseObject({
      name: z.string(),
      executable: z.string().nullable(),
      version: z.string().nullable(),
      sessionId: z.string().nullable(),
      exitCode: z.number().nullable(),
      signal: z.string().nullable(),
    }),
    patch: z
      .looseObject({
        sha256: z.string(),
        /** The size of changes.patch in bytes; absent in results written before best-of-N. */
        bytes: z.number().optional(),
        files: z.array(
          z.looseObject({
            path: z.string(),
            change: z.enum(["added", "modified", "deleted"]),
            additions: z.number(),
            deletions: z.number(),
          }),
        ),
      })
      .nullable(),
    policy: z.looseObject({ violations: z.array(Finding), warnings: z.array(Finding) }),
    verification: z.looseObject({
      ran: z.boolean(),
      passed: z.boolean().nullable(),
      /** Why no verification command ran: `no_verify` (`--no-verify`). Absent when verification was asked for. */
      skipped: z.enum(["no_verify"]).optional(),
      commands: z.array(Command),
      baseline: z
        .looseObject({
          passed: z.boolean(),
          commands: z.array(Command),
          setupFailed: z.boolean().optional(),
          holdoutsApplied: z.boolean().nullable().optional(),
          /** Each verify command on the base and after the patch (docs/verification.md). */
          transitions: z.array(z.looseObject({ command: z.string(), base: CommandState, patched: CommandState })).optional(),
        })
        .nullable()
        .optional(),
      /** `--test-edits` and the verification inputs the patch changed, each with how it was judged. */
      testEdits: z
        .looseObject({
          policy: z.enum(TEST_EDIT_POLICIES),
          changed: z.array(
            z.looseObject({
              path: z.string(),
              reason: z.string(),
              why: z.string(),
              change: z.enum(["added", "modified", "deleted"]),
              entries: z.array(z.string()).optional(),
              did: z.string().optional(),
              judged: z.enum(["held_to_base", "rejected", "allowed"]),
            }),
          ),
          /** Changed files the commands name, or --allow-config names, that are not held, and why. */
          notHeld: z.array(z.looseObject({ path: z.string(), why: z.string() })).optional(),
        })
        .nullable()
        .optional(),
      /** The run held to the base: the same commands with the changed inputs put back; null when it did not run. */
      heldToBase: z
        .looseObject({ passed: z.boolean(), commands: z.array(Command) })
        .nullable()
        .optional(),
      /** `--holdout-patch`: each held-out patch by hash and the files it touches, never its content. */
      holdouts: z.array(z.looseObject({ source: z.string(), sha256: z.string(), files: z.array(z.string()) })).optional(),
      /** Test-level evidence from `--junit` files (verify/test-evidence.ts); absent when none was asked for. */
      tests: TestEvidence.nullable().optional(),
      /** The test runners' summaries per verify command and side, and what they show (verify/summary-evidence.ts). */
      summaries: SummaryEvidence.nullable().optional(),
    }),
    agent: z.looseObject({
      finalMessage: z.string().nullable(),
      /** Summed over every attempt. */
      usage: Usage.nullable(),
      /** What the final message claims about tests: a claim, never evidence. */
      claim: z
        .looseObject({ tests: z.enum(["pass", "fail", "not_run"]), quote: z.string() })
        .nullable()
        .optional(),
    }),
    sourceInvariant: z.looseObject({ matched: z.boolean(), changed: z.array(z.string()) }),
    timings: z.looseObject({ startedAt: z.string(), durationMs: z.number(), phases: z.record(z.string(), z.number()) }),
    workspace: z.string().nullable().optional(),
    /** How the run's processes were contained (containment.ts); absent in results written before the sandbox. */
    containment: z
      .looseObject({
        sandbox: z.enum(["bwrap", "none"]),
        requested: z.enum(["auto", "bwrap", "none"]),
        reason: z.string().nullable(),
        bwrapVersion: z.string().nullable(),
        /** How each role reached the network: `none`, `host` or `filtered`; a boolean in results written before issue 29. */
        network: z.looseObject({ agent: NetworkAccessValue, setup: NetworkAccessValue, verify: NetworkAccessValue }),
        caps: z.looseObject({
          processes: z.number(),
          memoryBytes: z.number(),
          enforcedBy: z.enum(["cgroup_v1", "cgroup_v2"]).nullable(),
          reason: z.string().nullable(),
        }),
        events: z.array(ContainmentEvent),
        /** What the sandbox showed of the hidden home, read-only, and why (toolchains, `--expose`); absent before issue 27. */
        fromHome: z.array(z.looseObject({ path: z.string(), why: z.string() })).optional(),
        /** Credential files and places inside those, shown empty. */
        masked: z.array(z.string()).optional(),
        uncontained: z.array(z.string()),
      })
      .nullable()
      .optional(),
    /** How the agent and setup reached the network (docs/containment.md); absent in results written before issue 29. */
    network: Network.nullable().optional(),
    /** Every attempt, in order; the last one decided the verdict. Absent in results written before `--attempts`. */
    attempts: z.array(AttemptEntry).optional(),
    /** Why the run stopped before `--attempts` ran out although the last attempt could have been repaired; else null. */
    attemptsStopped: z.string().nullable().optional(),
    /** The agent CLI's private home kept for `handoff resume` (`--keep-session`), and until when. */
    session: z.looseObject({ kept: z.boolean(), home: z.string().nullable(), keptUntil: z.string().nullable() }).optional(),
    /** The base environment the workspaces were made from (docs/environment.md); null when setup ran in each checkout. */
    environment: z
      .looseObject({
        key: z.string().nullable(),
        /** How the workspaces were made: overlay views or copies; why not overlays when `auto` fell back. */
        workspaceMode: z.enum(["overlay", "copy"]),
        workspaceModeReason: z.string().nullable(),
        /** Taken from the cache (no setup ran for it), built by this run, or none (setup in each checkout, as before). */
        source: z.enum(["reused", "built", "none"]),
        /** Why there is none: no setup and copies, or a setup whose outputs name their own path. */
        noneReason: z.string().nullable(),
        builtBy: z.string().nullable(),
        /** What the setup took when the environment was built (what a reuse saved). */
        setupMs: z.number().nullable(),
        cacheDir: z.string(),
        /** Tracked files setup changed: put back to the base, never part of the patch. */
        setupChanges: z.array(z.string()),
        /** Whether verification ran setup again, and why. */
        verificationSetup: z.looseObject({ ran: z.boolean(), reason: z.string() }).nullable(),
      })
      .nullable()
      .optional(),
    /** `handoff resume`: the run whose session this run continued. */
    resumedFrom: z.looseObject({ runId: z.string(), runDir: z.string(), sessionId: z.string().nullable() }).nullable().optional(),
    /** A best-of-N run: every candidate (in `candidates/<k>/`), the one whose verdict this is, and the groups of k that agree. */
    candidates: z.array(CandidateEntry).optional(),
    /** Null when no candidate can be taken (the source repository changed). */
    winner: z.number().int().nullable().optional(),
    agreement: z.array(z.array(z.number().int())).optional(),
    /** Only in the result of a run whose handoff died, written by the sweep of a later start (docs/crash-safety.md). */
    sweep: z.looseObject({ killed: z.array(SweptProcess), stillAlive: z.array(SweptProcess), removed: z.array(z.string()) }).optional(),
  }),
);
export type RunResult = z.infer<typeof RunResult>;
/** result.json as this version writes it: `detail` is one of VerdictDetail (the schema reads any string, for older runs). */
export type WrittenRunResult = RunResult & { readonly detail: VerdictDetail | null };
