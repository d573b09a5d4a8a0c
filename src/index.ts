import { CLI_BACKENDS } from "../backends/index.js";
export { ExternalCodingRunner } from "./run/runner.js";
export { applyRun } from "./review/apply.js";
export { loadRun } from "./run-dir/run-lookup.js";
export { renderReport } from "./review/report.js";
export { runAgentCommand } from "./agent/agent-process.js";
export { decideOutcome } from "./verdict/decide.js";
export { EXIT_CODES, TERMINAL_REASONS } from "./vocabulary/terminal-reasons.js";
export { RunResult } from "./verdict/result.js";
export {
  ApplyRefusedError,
  ApprovalRequiredError,
  DirtySourceError,
  GitCommandError,
  RunNotFoundError,
  SandboxUnavailableError,
  UsageError,
} from "./lib/errors.js";
export { commandBackend } from "../backends/command-backend.js";
export { BACKEND_NAMES, resolveBackend } from "../backends/index.js";
export { defineCliBackend } from "./agent/cli-run.js";
export { listBackends } from "./cli/backends-report.js";
export { readTestClaim } from "./verdict/agent-claim.js";
export { CannotContinueError, continueRun } from "./repair/continue-run.js";
export { collectKeptSessions } from "./repair/session-gc.js";
export { handoffFeedback } from "./repair/feedback.js";
export { batchPaths, runBatch } from "./many/batch.js";
export { LocalExecutor } from "./many/local-executor.js";
export { MAX_BATCH_FILE_BYTES, parseBatchText, readBatchFile } from "./many/batch-file.js";
export { BatchRecord, TaskRecord } from "./many/batch-record.js";
export { BatchTask, HandoffConfig } from "./settings/file-schema.js";
export { SEVERITY, TASK_OUTCOMES, batchExitCode } from "./many/outcome.js";
export { renderBatchJunit } from "./many/junit.js";

/** The agent-CLI backends as objects, made from the registry's rows (backends/index.ts). */
export const codexBackend = CLI_BACKENDS.codex.backend;
export const claudeBackend = CLI_BACKENDS.claude.backend;
export const opencodeBackend = CLI_BACKENDS.opencode.backend;
export const piBackend = CLI_BACKENDS.pi.backend;
export const ompBackend = CLI_BACKENDS.omp.backend;
export const copilotBackend = CLI_BACKENDS.copilot.backend;
export const geminiBackend = CLI_BACKENDS.gemini.backend;

export type { RunnerHooks } from "./run/runner.js";
export type { RunOptions } from "./run/options.js";
export type { ApplyOutcome } from "./review/apply.js";
export type { LoadedRun } from "./run-dir/run-lookup.js";
export type { ReportFormat } from "./review/report.js";
export type { AgentCommand, StreamParser, StreamVerdict } from "./agent/stream-contract.js";
export type { TranslatorSpec } from "./agent/agent-process.js";
export type {
  CliBackendDefinition,
  CliCannotResume,
  CliHome,
  CliInfo,
  CliInvocation,
  CliResumeCommand,
  CliResumeInvocation,
  CliTranslator,
} from "./agent/cli-contract.js";
export type { BackendAvailability } from "./cli/backends-report.js";
export type { TestClaim } from "./verdict/agent-claim.js";
export type { AgentContext, AgentOutcome, ExternalAgentBackend, ExternalAgentResult } from "./agent/backend.js";
export type { ResumeOutcome, SessionToResume } from "./agent/backend.js";
export type { FeedbackInput, FeedbackWriter } from "./repair/feedback.js";
export type { AgentEvent, GateEvent, Phase, RecordedEvent, RunnerEvent } from "./vocabulary/events.js";
export type { PolicyFinding, PolicyRule, ViolationRule, WarningRule } from "./patch/rules/findings.js";
export type { PatchPolicy } from "./patch/rules/policy.js";
export type { ContainmentEvent, ContainmentSummary, ExtraMounts, JailReport, ProcessJail } from "./containment/containment.js";
export type { ResourceCaps } from "./containment/cgroup.js";
export type { SandboxMode } from "./containment/sandbox.js";
export type { RunStatus, TerminalReason } from "./vocabulary/terminal-reasons.js";
export type { Verdict } from "./verdict/decide.js";
export type { AgentDetail, BackendOwnDetail, VerdictDetail } from "./verdict/detail.js";
export type { UsageErrorCode } from "./lib/errors.js";
export type { ContinueFrom } from "./repair/continue-from.js";
export type { ResumeOverrides } from "./repair/continue-run.js";
export type { KeptSessionEntry, SessionCollection } from "./repair/session-gc.js";
export type { BatchOptions } from "./many/batch.js";
export type { BatchFile } from "./many/batch-file.js";
export type { BatchProgress } from "./many/batch-progress.js";
export type { BatchRunDefaults, TaskSpec } from "./many/batch-task.js";
export type { LocalExecutorOptions } from "./many/local-executor.js";
export type { TaskOutcome } from "./many/outcome.js";
export type { TaskContext, TaskExecutor } from "./many/task-executor.js";
