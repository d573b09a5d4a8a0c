import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import type { CliBackendDefinition, CliInvocation } from "../../backends/cli-backend.js";
import { installHint } from "../../backends/failures.js";
import type { ExtraMounts } from "../containment/containment.js";
import { decideAgentEnding, executableNotFound } from "./agent-ending.js";
import { agentResult, runAgentProcess } from "./agent-process.js";
import { resultWithoutProcess } from "./agent-run.js";
import type { AgentContext, ExternalAgentBackend, ExternalAgentResult } from "./backend.js";
import { installMounts, probeVersion, resolveExecutable } from "./executable.js";
import { linkLogins, loginMounts, replacedLinks } from "./login-links.js";

/**
 * Runs an agent CLI from its translator: finds the executable, probes its version beside the run, makes the private
 * home with the user's login linked in, runs the command, and decides the ending (src/agent/agent-ending.ts).
 */
export function defineCliBackend(definition: CliBackendDefinition): ExternalAgentBackend {
  const { info } = definition;
  return {
    name: info.name,
    async run(task: string, context: AgentContext): Promise<ExternalAgentResult> {
      const started = Date.now();
      const executable = resolveExecutable(info.executable, context.executable, context.env.PATH);
      if (!executable)
        return {
          ...resultWithoutProcess(executableNotFound(info, context.executable), Date.now() - started),
          executable: context.executable,
        };
      // Only recorded, and read again if the run failed: it runs beside the agent, not before it.
      const probing = probeVersion(executable.path, executable.pathEnv, definition.home);
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
      const ran = await runAgentProcess(
        {
          command: { ...command, env: { ...home.env, ...command.env, PATH: executable.pathEnv } },
          parser: definition.parser(invocation, info),
          mounts: mergeMounts(installMounts(executable.path, executable.pathEnv), loginMounts(home.links, linked)),
        },
        context,
      );
      const probe = await probing;
      const version = probe.ok ? probe.version : null;
      const outcome = decideAgentEnding({
        ...ran.ending,
        program: {
          kind: "cli",
          file: command.file,
          installHint: installHint(info),
          info,
          probeFailure: probe.ok ? null : probe.reason,
          version,
        },
      });
      const result = agentResult(ran, outcome, executable.path, version);
      const warnings = replacedLinks(home.links, linked).map((link) => ({
        rule: "cli_login_replaced" as const,
        path: link.target,
        message: `${info.name} replaced its linked login file during the run (a token refresh?); the new file was discarded with the run's private home, so ${info.name} may ask you to log in again.${info.unattendedLogin ? ` ${info.unattendedLogin}` : ""}`,
      }));
      return warnings.length > 0 ? { ...result, warnings } : result;
    },
  };
}

function mergeMounts(...all: { readOnly?: readonly string[]; writable?: readonly string[] }[]): ExtraMounts {
  return { readOnly: all.flatMap((m) => m.readOnly ?? []), writable: all.flatMap((m) => m.writable ?? []) };
}
