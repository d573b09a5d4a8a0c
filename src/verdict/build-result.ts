import { readTestClaim } from "./agent-claim.js";
import type { ExternalAgentResult } from "../agent/backend.js";
import type { ContainmentSummary } from "../containment/containment.js";
import type { HostTally, NetworkRecord } from "../egress/egress-record.js";
import type { Extraction } from "../patch/extract.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import type { RunResult, WrittenRunResult } from "./result.js";
import type { CommandRecord } from "../verify/shell-commands.js";
import type { SourceRepo } from "../clone/source-repo.js";
import type { Verdict } from "./decide.js";
import type { Survivor } from "../containment/survivors.js";
import type { BaselineOutcome, VerificationOutcome } from "../verify/verify.js";
import { commandTransitions } from "../verify/command-transitions.js";
import type { HoldoutRecord } from "../verify/holdouts.js";
import type { TestEvidence } from "../verify/test-evidence.js";
import { summaryEvidenceRecord } from "../verify/summary-evidence.js";
import { type TestEditFacts, judgementOf } from "../verify/test-edits.js";

/**
 * Everything result.json says, gathered by the run (src/run/runner.ts) or, for a run whose handoff died, by the crash
 * sweep (src/run-dir/crash-result.ts): both go through `buildRunResult`, the one builder of result.json.
 */
export interface ResultInputs {
  readonly runId: string;
  readonly runDir: string;
  readonly verdict: Verdict;
  readonly source: Pick<SourceRepo, "topLevel" | "baseCommit">;
  readonly backendName: string;
  /** The agent's record; a crashed run's, read back from backend-result.json, has no usage. */
  readonly agent:
    | (Pick<ExternalAgentResult, "executable" | "version" | "sessionId" | "exitCode" | "signal" | "finalMessage"> &
        Partial<Pick<ExternalAgentResult, "usage">>)
    | null;
  readonly extraction: Pick<Extraction, "patch" | "sha256" | "files" | "violations" | "warnings"> | null;
  readonly extraWarnings: readonly PolicyFinding[];
  readonly setupRecords: readonly CommandRecord[];
  readonly verification: VerificationOutcome | null;
  readonly held: VerificationOutcome | null;
  readonly baseline: BaselineOutcome | null;
  readonly verify: readonly string[];
  readonly testEdits: TestEditFacts | null;
  readonly inputViolations: readonly PolicyFinding[];
  readonly holdouts: readonly HoldoutRecord[];
  readonly tests: TestEvidence | null;
  /** `--no-verify`: no verification command was asked for, so none ran. */
  readonly verificationSkipped: "no_verify" | null;
  /** What changed in the source (empty when it held); a crashed run's one line says it was never checked. */
  readonly sourceChanged: readonly string[];
  readonly startedAt: Date;
  /** When the run was last seen (a crashed run: its last write); now when absent. */
  readonly endedAt?: Date;
  readonly phases: Readonly<Record<string, number>>;
  readonly workspace: string | null;
  readonly containment: ContainmentSummary | null;
  /** How the agent and setup reached the network; null for a run that never got as far as containment. */
  readonly network?: NetworkRecord | null;
  /** Each attempt (a run without repair attempts has one); the agent's usage is their sum. */
  readonly attempts?: readonly AttemptSummary[];
  readonly attemptsStopped?: string | null;
  readonly session?: { readonly kept: boolean; readonly home: string | null; readonly keptUntil: string | null };
  readonly resumedFrom?: { readonly runId: string; readonly runDir: string; readonly sessionId: string | null } | null;
  readonly environment?: RunResult["environment"];
  /** A crashed run: the processes the sweep killed or could not kill, and the paths it removed. */
  readonly sweep?: { readonly killed: readonly Survivor[]; readonly stillAlive: readonly Survivor[]; readonly removed: readonly string[] };
}

/** One attempt as result.json lists it. */
export interface AttemptSummary {
  readonly attempt: number;
  readonly verdict: Verdict;
  readonly sessionId: string | null;
  readonly patchSha256: string | null;
  readonly usage: ExternalAgentResult["usage"];
  readonly durationMs: number;
  readonly feedback: string | null;
}

type Usage = NonNullable<ExternalAgentResult["usage"]>;

/** Tokens and cost over all attempts: null when no attempt reported usage; a cost only when every one that did had one. */
export function sumUsage(usages: readonly (Usage | null)[]): Usage | null {
  const known = usages.filter((usage): usage is Usage => usage !== null);
  if (known.length === 0) return null;
  const costs = known.map((usage) => usage.costUsd);
  return {
    inputTokens: known.reduce((sum, usage) => sum + usage.inputTokens, 0),
    outputTokens: known.reduce((sum, usage) => sum + usage.outputTokens, 0),
    costUsd: costs.every((cost) => cost !== null) ? costs.reduce((sum: number, cost) => sum + cost!, 0) : null,
  };
}

const sweptProcess = ({ pid, command, reason }: Survivor) => ({ pid, command, reason });

function commandEntry(record: CommandRecord) {
  return {
    command: record.command,
    phase: record.phase,
    exitCode: record.exitCode,
    timedOut: record.timedOut,
    durationMs: record.durationMs,
    limitHit: record.limitHit ?? null,
    spawnError: record.spawnError ?? null,
    startFailure: record.startFailure ?? null,
  };
}

function findingEntry(finding: PolicyFinding) {
  return { path: finding.path, rule: finding.rule, message: finding.message };
}

function verificationCommands(outcome: VerificationOutcome | null): readonly CommandRecord[] {
  if (!outcome || !("commands" in outcome)) return [];
  return outcome.commands;
}

/**
 * Whether verification passed: null when it did not run, or when `--no-verify` left nothing to check; otherwise the
 * verdict's (only `verified` means both runs passed, as patched and held to the base, and no test vanished).
 */
function verificationPassed(inputs: ResultInputs): boolean | null {
  if (inputs.verification === null) return null;
  if (inputs.verdict.terminalReason !== "verified") return false;
  return inputs.verificationSkipped ? null : true;
}

/** result.json as the contract spells it (schema version 1). */
export function buildRunResult(inputs: ResultInputs): WrittenRunResult {
  const { verdict, agent, extraction, verification, held, baseline, testEdits } = inputs;
  const commands = [...inputs.setupRecords, ...verificationCommands(verification)];
  return {
    schemaVersion: 1,
    runId: inputs.runId,
    runDir: inputs.runDir,
    status: verdict.status,
    terminalReason: verdict.terminalReason,
    detail: verdict.detail,
    summary: verdict.summary,
    hint: verdict.hint,
    repo: { path: inputs.source.topLevel, baseCommit: inputs.source.baseCommit },
    backend: {
      name: inputs.backendName,
      executable: agent?.executable ?? null,
      version: agent?.version ?? null,
      sessionId: agent?.sessionId ?? null,
      exitCode: agent?.exitCode ?? null,
      signal: agent?.signal ?? null,
    },
    patch: extraction
      ? {
          sha256: extraction.sha256,
          bytes: extraction.patch.length,
          files: extraction.files.map((f) => ({ path: f.path, change: f.change, additions: f.additions, deletions: f.deletions })),
        }
      : null,
    policy: {
      violations: [...(extraction?.violations ?? []), ...inputs.inputViolations].map(findingEntry),
      warnings: [...inputs.extraWarnings, ...(extraction?.warnings ?? [])].map(findingEntry),
    },
    verification: {
      ran: inputs.verificationSkipped === null && verification !== null && "commands" in verification,
      // Nothing checked the patch under --no-verify: not a pass. A setup command that failed then is still a failure.
      passed: verificationPassed(inputs),
      ...(inputs.verificationSkipped ? { skipped: inputs.verificationSkipped } : {}),
      commands: commands.map(commandEntry),
      baseline: baseline
        ? {
            passed: baseline.passed,
            commands: baseline.commands.map(commandEntry),
            setupFailed: baseline.setupFailed,
            holdoutsApplied: baseline.holdoutsApplied,
            transitions: commandTransitions(inputs.verify, baseline, verificationCommands(verification)).map((transition) => ({
              ...transition,
            })),
          }
        : null,
      testEdits: testEdits
        ? {
            policy: testEdits.policy,
            changed: testEdits.changed.map((input) => ({
              ...input,
              entries: input.entries ? [...input.entries] : undefined,
              judged: judgementOf(testEdits.policy),
            })),
            notHeld: (testEdits.notHeld ?? []).map((entry) => ({ ...entry })),
          }
        : null,
      heldToBase: held ? { passed: held.kind === "passed", commands: verificationCommands(held).map(commandEntry) } : null,
      holdouts: inputs.holdouts.map((holdout) => ({ ...holdout, files: [...holdout.files] })),
      tests: inputs.tests,
      summaries: summaryEvidenceRecord(
        {
          verifyCommands: inputs.verify,
          patched: verificationCommands(verification),
          held: held ? verificationCommands(held) : null,
          base: baseline?.commands ?? null,
        },
        inputs.tests !== null,
      ),
    },
    agent: {
      finalMessage: agent?.finalMessage ?? null,
      usage: inputs.attempts && inputs.attempts.length > 1 ? sumUsage(inputs.attempts.map((a) => a.usage)) : (agent?.usage ?? null),
      claim: readTestClaim(agent?.finalMessage ?? null),
    },
    sourceInvariant: { matched: inputs.sourceChanged.length === 0, changed: [...inputs.sourceChanged] },
    timings: {
      startedAt: inputs.startedAt.toISOString(),
      durationMs: Math.max(0, (inputs.endedAt ?? new Date()).getTime() - inputs.startedAt.getTime()),
      phases: { ...inputs.phases },
    },
    workspace: inputs.workspace,
    containment: inputs.containment
      ? {
          ...inputs.containment,
          events: [...inputs.containment.events],
          fromHome: inputs.containment.fromHome.map((entry) => ({ ...entry })),
          masked: [...inputs.containment.masked],
          uncontained: [...inputs.containment.uncontained],
        }
      : null,
    ...(inputs.network ? { network: writtenNetwork(inputs.network) } : {}),
    ...(inputs.attempts
      ? {
          attempts: inputs.attempts.map((entry) => ({
            attempt: entry.attempt,
            terminalReason: entry.verdict.terminalReason,
            detail: entry.verdict.detail,
            summary: entry.verdict.summary,
            sessionId: entry.sessionId,
            patchSha256: entry.patchSha256,
            usage: entry.usage,
            durationMs: entry.durationMs,
            feedback: entry.feedback,
          })),
          attemptsStopped: inputs.attemptsStopped ?? null,
        }
      : {}),
    ...(inputs.session ? { session: { ...inputs.session } } : {}),
    ...(inputs.resumedFrom !== undefined ? { resumedFrom: inputs.resumedFrom } : {}),
    ...(inputs.environment !== undefined ? { environment: inputs.environment } : {}),
    ...(inputs.sweep
      ? {
          sweep: {
            killed: inputs.sweep.killed.map(sweptProcess),
            stillAlive: inputs.sweep.stillAlive.map(sweptProcess),
            removed: [...inputs.sweep.removed],
          },
        }
      : {}),
  };
}

/** The network record as result.json holds it (its own arrays). */
function writtenNetwork(n: NetworkRecord) {
  const tally = (t: HostTally) => ({ ...t, roles: [...t.roles], labels: [...t.labels] });
  return {
    ...n,
    rules: [...n.rules],
    allowed: n.allowed.map(tally),
    blocked: n.blocked.map(tally),
    attempts: n.attempts.map((attempt) => ({ ...attempt })),
    keys: n.keys.map((key) => ({ ...key })),
    logins: n.logins.map((login) => ({ ...login })),
  };
}
