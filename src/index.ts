export { ExternalCodingRunner } from "./runner.js";
export { applyRun } from "./apply.js";
export { loadRun } from "./run-lookup.js";
export { renderReport } from "./report.js";
export { runAgentCommand } from "./agent-process.js";
export { decideOutcome, EXIT_CODES, TERMINAL_REASONS } from "./terminal.js";
export { RunResult } from "./result.js";
export {
  ApplyRefusedError,
  ApprovalRequiredError,
  DirtySourceError,
  GitCommandError,
  RunNotFoundError,
  SandboxUnavailableError,
  UsageError,
} from "./errors.js";
export { commandBackend } from "../backends/command.js";
export { BACKEND_NAMES, resolveBackend } from "../backends/index.js";
export { codexBackend } from "../backends/codex.js";
export { claudeBackend } from "../backends/claude.js";
export { opencodeBackend } from "../backends/opencode.js";
export { piBackend } from "../backends/pi.js";
export { ompBackend } from "../backends/omp.js";
export { defineCliBackend } from "../backends/cli-backend.js";
export { listBackends } from "./backends-report.js";
export { readTestClaim } from "./agent-claim.js";

export type { RunnerHooks } from "./runner.js";
export type { RunOptions } from "./options.js";
export type { ApplyOutcome } from "./apply.js";
export type { LoadedRun } from "./run-lookup.js";
export type { ReportFormat } from "./report.js";
export type { AgentCommand, StreamParser, StreamVerdict, TranslatorSpec } from "./agent-process.js";
export type { CliBackendDefinition, CliHome, CliInvocation } from "../backends/cli-backend.js";
export type { CliInfo } from "../backends/cli-info.js";
export type { BackendAvailability } from "./backends-report.js";
export type { TestClaim } from "./agent-claim.js";
export type { AgentContext, AgentOutcome, ExternalAgentBackend, ExternalAgentResult } from "./backend.js";
export type { AgentEvent, GateEvent, Phase, RecordedEvent, RunnerEvent } from "./events.js";
export type { PolicyFinding, PolicyRule, ViolationRule, WarningRule } from "./findings.js";
export type { PatchPolicy } from "./policy.js";
export type { ContainmentEvent, ContainmentSummary, ExtraMounts, JailReport, ProcessJail } from "./containment.js";
export type { ResourceCaps } from "./cgroup.js";
export type { SandboxMode } from "./sandbox.js";
export type { RunStatus, TerminalReason, Verdict } from "./terminal.js";
