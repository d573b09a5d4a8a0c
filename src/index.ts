export { ExternalCodingRunner } from "./run/runner.js";
export { applyRun } from "./review/apply.js";
export { loadRun } from "./run-dir/run-lookup.js";
export { renderReport } from "./review/report.js";
export { runAgentCommand } from "./agent/agent-process.js";
export { decideOutcome, EXIT_CODES, TERMINAL_REASONS } from "./verdict/decide.js";
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
export { commandBackend } from "../backends/command.js";
export { BACKEND_NAMES, resolveBackend } from "../backends/index.js";
export { codexBackend } from "../backends/codex.js";
export { claudeBackend } from "../backends/claude.js";
export { opencodeBackend } from "../backends/opencode.js";
export { piBackend } from "../backends/pi.js";
export { ompBackend } from "../backends/omp.js";
export { defineCliBackend } from "../backends/cli-backend.js";
export { listBackends } from "./cli/backends-report.js";
export { readTestClaim } from "./verdict/agent-claim.js";

export type { RunnerHooks } from "./run/runner.js";
export type { RunOptions } from "./run/options.js";
export type { ApplyOutcome } from "./review/apply.js";
export type { LoadedRun } from "./run-dir/run-lookup.js";
export type { ReportFormat } from "./review/report.js";
export type { AgentCommand, StreamParser, StreamVerdict, TranslatorSpec } from "./agent/agent-process.js";
export type { CliBackendDefinition, CliHome, CliInvocation } from "../backends/cli-backend.js";
export type { CliInfo } from "../backends/cli-info.js";
export type { BackendAvailability } from "./cli/backends-report.js";
export type { TestClaim } from "./verdict/agent-claim.js";
export type { AgentContext, AgentOutcome, ExternalAgentBackend, ExternalAgentResult } from "./agent/backend.js";
export type { AgentEvent, GateEvent, Phase, RecordedEvent, RunnerEvent } from "./run/events.js";
export type { PolicyFinding, PolicyRule, ViolationRule, WarningRule } from "./patch/rules/findings.js";
export type { PatchPolicy } from "./patch/rules/policy.js";
export type { ContainmentEvent, ContainmentSummary, ExtraMounts, JailReport, ProcessJail } from "./containment/containment.js";
export type { ResourceCaps } from "./containment/cgroup.js";
export type { SandboxMode } from "./containment/sandbox.js";
export type { RunStatus, TerminalReason, Verdict } from "./verdict/decide.js";
