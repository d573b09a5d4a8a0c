import { randomUUID } from "node:crypto";
import { prepareCliHome } from "./cli-home-prepare.js";
import type { CliBackendDefinition, CliInvocation } from "./cli-contract.js";
import { installHint } from "./cli-failures.js";
import type { AgentCommand } from "./stream-contract.js";
import type { ExtraMounts } from "../containment/containment.js";
import { decideAgentEnding, executableNotFound } from "./agent-ending.js";
import { agentResult, runAgentProcess } from "./agent-process.js";
import { resultWithoutProcess } from "./agent-run.js";
import type { AgentContext, ExternalAgentBackend, ExternalAgentResult, ResumeOutcome, SessionToResume } from "./backend.js";
import { installMounts, probeVersion, resolveExecutable } from "./executable.js";
import { linkLogins, loginMounts, replacedLinks, unlinkLogins } from "./login-links.js";
import { copyInsideHome, SessionCopyError } from "./session-copies.js";
import { runBeforeCommands } from "./before-commands.js";

/** A variable named like a secret (`ANTHROPIC_API_KEY`, `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`): said in network.keys when it stays with the agent. */
const KEY_LIKE = /(^|_)(KEY|TOKEN|SECRET|PASSWORD)(_|$)/;
/** One turn's command, and the invocation its parser is built from (a resumed turn's carries the session it continues). */
interface Turn {
  readonly command: AgentCommand;
  readonly parserInvocation: CliInvocation;
  /** A resumed turn's preparatory commands (CliResumeCommand.before). */
  readonly before?: readonly AgentCommand[];
}

/** A turn that cannot start, with the reason (the translator cannot resume from here, a copy was refused, a command before it failed). */
class TurnRefused extends Error {}

/**
 * Runs an agent CLI from its translator: finds the executable, probes its version beside the run, makes the private
 * home with the user's login linked in, runs the command, and decides the ending (src/agent/agent-ending.ts).
 * `resume` does the same with the translator's resume command, in the home the session's state lives in.
 */
export function defineCliBackend(definition: CliBackendDefinition): ExternalAgentBackend {
  const { info } = definition;
  return {
    name: info.name,
    run: (task, context) =>
      runCliTurn(definition, task, context, (invocation) => ({ command: definition.command(invocation), parserInvocation: invocation })),
    async resume(session: SessionToResume, message: string, context: AgentContext): Promise<ResumeOutcome> {
      const resume = definition.resume;
      if (!resume)
        return { kind: "cannot_resume", reason: `${info.name} cannot continue a session headless (its backend has no resume command)` };
      const resumeId = session.sessionId;
      if (resumeId === null) return { kind: "cannot_resume", reason: `${info.name} reported no session id in the earlier turn` };
      try {
        const result = await runCliTurn(definition, message, context, (invocation) => {
          const resumed = resume({ ...invocation, resumeId, previousCwd: session.cwd });
          if ("cannotResume" in resumed) throw new TurnRefused(resumed.cannotResume);
          try {
            copyInsideHome(resumed.copies ?? [], context.homeDir);
          } catch (error) {
            if (!(error instanceof SessionCopyError)) throw error;
            throw new TurnRefused(`${info.name}'s session ${resumeId} could not be carried to ${context.cwd}: ${error.message}`);
          }
          return {
            command: resumed.command,
            parserInvocation: { ...invocation, sessionId: resumed.sessionId ?? invocation.sessionId },
            before: resumed.before ?? [],
          };
        });
        return { kind: "resumed", result };
      } catch (error) {
        if (error instanceof TurnRefused) return { kind: "cannot_resume", reason: error.message };
        throw error;
      }
    },
  };
}

/** One turn of a CLI (a first run or a resumed one): everything but the command line is the same. */
async function runCliTurn(
  definition: CliBackendDefinition,
  text: string,
  context: AgentContext,
  turnOf: (invocation: CliInvocation) => Turn,
): Promise<ExternalAgentResult> {
  const { info } = definition;
  const started = Date.now();
  const executable = resolveExecutable(info, context.executable, context.env.PATH);
  if (!executable)
    return {
      ...resultWithoutProcess(executableNotFound(info, context.executable), Date.now() - started),
      executable: context.executable,
    };
  const home = definition.home(context.homeDir, context.userEnv);
  prepareCliHome(home);
  const invocation: CliInvocation = {
    task: text,
    cwd: context.cwd,
    model: context.model,
    executable: executable.path,
    homeDir: context.homeDir,
    sessionId: randomUUID(),
    network: context.jail?.network ?? "host",
  };
  const { command, parserInvocation, before = [] } = turnOf(invocation);
  // Only recorded, and read again if the run failed: it runs beside the agent, not before it.
  const probing = probeVersion(executable.path, executable.pathEnv, definition.home);
  const linked = linkLogins(home.links);
  const logins = loginMounts(home.links, linked);
  let ran: Awaited<ReturnType<typeof runAgentProcess>>;
  let replaced: ReturnType<typeof replacedLinks>;
  const keys = (definition.keys?.(context.userEnv, context.env) ?? []).flatMap((route) => {
    const key = context.env[route.variable];
    return key ? [{ route, key }] : [];
  });
  const mounts: ExtraMounts = {
    ...mergeMounts(installMounts(executable.path, executable.pathEnv), logins),
    // Its model's hosts, as the user's own config names them: what the egress allowlist adds for this agent.
    network: {
      backend: info.name,
      endpoints: definition.network(context.userEnv, context.env).endpoints,
      keys,
      logins: logins.writable,
      keptKeys: Object.keys(context.env).filter((name) => KEY_LIKE.test(name) && !keys.some(({ route }) => route.variable === name)),
    },
  };
  const inHome = (run: AgentCommand): AgentCommand => ({ ...run, env: { ...home.env, ...run.env, PATH: executable.pathEnv } });
  try {
    const prepared = await runBeforeCommands(before.map(inHome), mounts, context);
    if (prepared.kind === "failed")
      throw new TurnRefused(`${info.name} could not prepare the session for ${context.cwd}: ${prepared.reason}`);
    ran = await runAgentProcess({ command: inHome(command), parser: definition.parser(parserInvocation, info), mounts }, context);
  } finally {
    replaced = replacedLinks(home.links, linked);
    // The user's login is in the home only while a turn runs: between attempts, and in a home kept by --keep-session,
    // there is none (nor a refreshed token the CLI wrote in a link's place). The next turn links it again.
    unlinkLogins(home.links.filter((link) => linked.includes(link.at)));
  }
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
  const warnings = replaced.map((link) => ({
    rule: "cli_login_replaced" as const,
    path: link.target,
    message: `${info.name} replaced its linked login file during the run (a token refresh?); the new file was discarded with the run's private home, so ${info.name} may ask you to log in again.${info.unattendedLogin ? ` ${info.unattendedLogin}` : ""}`,
  }));
  return warnings.length > 0 ? { ...result, warnings } : result;
}

function mergeMounts(...all: { readOnly?: readonly string[]; writable?: readonly string[] }[]): ExtraMounts {
  return { readOnly: all.flatMap((m) => m.readOnly ?? []), writable: all.flatMap((m) => m.writable ?? []) };
}
