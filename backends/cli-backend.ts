import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import type { AgentContext, ExternalAgentBackend, ExternalAgentResult } from "../src/agent/backend.js";
import { type AgentCommand, type StreamParser, runAgentCommand } from "../src/agent/agent-process.js";
import { resultWithoutProcess } from "../src/agent/agent-run.js";
import type { ExtraMounts } from "../src/containment/containment.js";
import type { CliInfo } from "./cli-info.js";
import { probeVersion, resolveExecutable } from "./executable.js";
import { classifyProviderError, hintFor, installHint } from "./failures.js";
import { type LoginLink, linkLogins, loginMounts, replacedLinks } from "./login-links.js";
import { installMounts } from "./executable.js";

/** Everything a backend needs to build one command line: pure data, so argv can be tested without a process. */
export interface CliInvocation {
  readonly task: string;
  readonly cwd: string;
  readonly model: string | null;
  readonly executable: string;
  /** The run's private CLI home (see AgentContext.homeDir). */
  readonly homeDir: string;
  /** A fresh UUID handoff chose; a CLI that accepts a session id up front is given this one. */
  readonly sessionId: string;
}

/** The private home of one run: directories to create, the user's login files to link, the env that points there. */
export interface CliHome {
  readonly env: Readonly<Record<string, string>>;
  readonly dirs: readonly string[];
  readonly links: readonly LoginLink[];
}

/** A translator: argv, environment and private home for its CLI, and a parser for its stdout. Nothing else. */
export interface CliBackendDefinition {
  readonly info: CliInfo;
  home(homeDir: string, userEnv: Readonly<Record<string, string | undefined>>): CliHome;
  command(invocation: CliInvocation): AgentCommand;
  parser(invocation: CliInvocation): StreamParser;
}

function unavailable(info: CliInfo, bin: string | null, durationMs: number): ExternalAgentResult {
  const where = bin ? `--bin ${bin} is not an executable file` : `'${info.executable}' is not on PATH`;
  const outcome = { kind: "failed", detail: "executable_unavailable", message: `${info.name} could not be started: ${where}`, hint: hintFor("executable_unavailable", info) } as const;
  return { ...resultWithoutProcess(outcome, durationMs), executable: bin };
}

/** The stderr line that says why: an `error:`/`fatal:` line if there is one (omp prints its error under a source excerpt), else the first. */
function stderrReason(text: string): string {
  const lines = text.split("\n").map((line) => line.trim()).filter((line) => line !== "");
  return (lines.find((line) => /^(error|fatal)\b/i.test(line)) ?? lines[0] ?? "").slice(0, 300);
}

export function defineCliBackend(definition: CliBackendDefinition): ExternalAgentBackend {
  const { info } = definition;
  return {
    name: info.name,
    async run(task: string, context: AgentContext): Promise<ExternalAgentResult> {
      const started = Date.now();
      const executable = resolveExecutable(info.executable, context.executable, context.env.PATH);
      if (!executable) return unavailable(info, context.executable, Date.now() - started);
      // Only recorded, and read again if the run failed: it runs beside the agent, not before it.
      const probing = probeVersion(executable.path, executable.pathEnv);
      const home = definition.home(context.homeDir, context.userEnv);
      for (const dir of home.dirs) mkdirSync(dir, { recursive: true, mode: 0o700 });
      const linked = linkLogins(home.links);
      const invocation: CliInvocation = {
        task,
        cwd: context.cwd,
        model: context.model,
        executable: executable.path,
        homeDir: context.homeDir,
        sessionId: randomUUID(),
      };
      const command = definition.command(invocation);
      const ran = await runAgentCommand(
        {
          command: { ...command, env: { ...home.env, ...command.env, PATH: executable.pathEnv } },
          parser: definition.parser(invocation),
          executableLabel: executable.path,
          version: null,
          installHint: installHint(info),
          mounts: mergeMounts(installMounts(executable.path, executable.pathEnv), loginMounts(home.links, linked)),
        },
        context,
      );
      const probe = await probing;
      const result = { ...ran, version: probe.ok ? probe.version : null };
      const warnings = replacedLinks(home.links, linked).map((link) => ({
        rule: "cli_login_replaced" as const,
        path: link.target,
        message: `${info.name} replaced its linked login file during the run (a token refresh?); the new file was discarded with the run's private home, so ${info.name} may ask you to log in again.${info.unattendedLogin ? ` ${info.unattendedLogin}` : ""}`,
      }));
      const explained = explain(result, probe.ok ? null : probe.reason, info);
      return warnings.length > 0 ? { ...explained, warnings } : explained;
    },
  };
}

function mergeMounts(...all: { readOnly?: readonly string[]; writable?: readonly string[] }[]): ExtraMounts {
  return { readOnly: all.flatMap((m) => m.readOnly ?? []), writable: all.flatMap((m) => m.writable ?? []) };
}

/** Fills in what the stream could not say: why a CLI died before writing anything, and a hint for every failure. */
function explain(result: ExternalAgentResult, probeFailure: string | null, info: CliInfo): ExternalAgentResult {
  const { outcome } = result;
  if (outcome.kind !== "failed") return result;
  let { detail, message } = outcome;
  const silentExit = result.stdoutLines === 0 && result.exitCode !== 0 && detail !== "executable_unavailable";
  // A CLI that failed at startup after a header line (pi and omp print their session first) says why on stderr only.
  const brokenOff = !silentExit && detail === "malformed_event_stream" && result.exitCode !== null && result.exitCode !== 0 && stderrReason(result.stderrTail) !== "";
  if (silentExit || brokenOff) {
    const said = stderrReason(result.stderrTail);
    if (probeFailure && (result.exitCode === 126 || result.exitCode === 127)) {
      detail = "executable_unavailable";
      message = `${info.name} could not run: ${probeFailure}`;
    } else {
      detail = said ? classifyProviderError(said) : "agent_reported_error";
      message = `${info.name} exited ${result.signal ? `on ${result.signal}` : `with code ${result.exitCode}`} ${silentExit ? "before writing any event" : "before finishing its stream"}${said ? `: ${said}` : ""}`;
    }
  }
  if (!silentExit && /^exit_code_|^killed_by_signal$/.test(detail)) {
    const said = stderrReason(result.stderrTail);
    detail = "agent_reported_error";
    if (said) message = `${message}: ${said}`;
  }
  let hint = outcome.hint ?? hintFor(detail, info);
  if (result.version && result.version !== info.testedVersion && (detail === "malformed_event_stream" || silentExit)) {
    hint = `${hint ?? ""} (handoff was tested with ${info.name} ${info.testedVersion}; this is ${result.version})`.trim();
  }
  return { ...result, outcome: { kind: "failed", detail, message, hint } };
}
