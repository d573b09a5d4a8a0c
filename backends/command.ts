import { statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import { z } from "zod";
import type { AgentContext, ExternalAgentBackend, ExternalAgentResult } from "../src/agent/backend.js";
import { type AgentCommand, type StreamParser, runAgentCommand } from "../src/agent/agent-process.js";
import type { AgentEvent } from "../src/run/events.js";

/**
 * `--backend command --agent-cmd CMD`: any program as the agent. It runs with `/bin/sh -c` in the clone, the task
 * on stdin, in the file named by $HANDOFF_TASK_FILE, and in $HANDOFF_TASK when it fits (and `--model`, if given, in
 * $HANDOFF_MODEL). JSON lines become events (a `{"type":"message","text":…}` line is its final
 * message); other lines become text events. Exit 0 means it finished; anything else is an agent error.
 */
export function buildCommandAgentCommand(agentCmd: string, task: string, model: string | null = null, taskFile: string | null = null): AgentCommand {
  // The kernel caps one environment string at 128 KiB (E2BIG): a larger task is on stdin and in the file only.
  const inline: Record<string, string> = Buffer.byteLength(task) <= MAX_TASK_IN_ENV_BYTES ? { HANDOFF_TASK: task } : {};
  return {
    file: "/bin/sh",
    args: ["-c", agentCmd],
    stdin: task,
    env: { ...inline, ...(taskFile ? { HANDOFF_TASK_FILE: taskFile } : {}), ...(model ? { HANDOFF_MODEL: model } : {}) },
  };
}

/** The largest task also passed in $HANDOFF_TASK. */
export const MAX_TASK_IN_ENV_BYTES = 64 * 1024;

/**
 * The files the command names by absolute (or `~/`) path: the sandbox shows them (with their directory where that
 * hides nothing else). A heuristic over the words of the command: a program found on PATH needs nothing, a path
 * built at run time is not seen, and a relative path resolves in the clone.
 */
export function commandPrograms(agentCmd: string): string[] {
  const programs = new Set<string>();
  for (const word of agentCmd.split(/[\s;&|()<>'"`=]+/)) {
    const path = word.startsWith("~/") ? join(homedir(), word.slice(2)) : word;
    if (!isAbsolute(path)) continue;
    try {
      if (statSync(path).isFile()) programs.add(path);
    } catch {
      // not a file here
    }
  }
  return [...programs];
}

/** POSIX shells exit 127 when the command is not found and 126 when it cannot be executed. */
const SHELL_COULD_NOT_START = new Set([126, 127]);

function explainShellFailure(result: ExternalAgentResult): ExternalAgentResult {
  const { outcome } = result;
  if (outcome.kind !== "failed" || result.exitCode === null || !SHELL_COULD_NOT_START.has(result.exitCode)) return result;
  return {
    ...result,
    outcome: {
      kind: "failed",
      detail: "executable_unavailable",
      message: `the agent command could not be started (the shell exited ${result.exitCode}: ${result.exitCode === 127 ? "not found" : "not executable"})`,
      hint: "check --agent-cmd: the program must exist on PATH or by path, and be executable",
    },
  };
}

const MessageLine = z.looseObject({ type: z.literal("message"), text: z.string() });
const SessionLine = z.looseObject({ type: z.literal("session"), id: z.string() });

export function createCommandParser(): StreamParser {
  let finalMessage: string | null = null;
  let sessionId: string | null = null;
  return {
    push(line: string): AgentEvent[] {
      if (line.trim() === "") return [];
      let data: unknown;
      try {
        data = JSON.parse(line);
      } catch {
        return [{ type: "agent.text", stream: "stdout", text: line }];
      }
      const message = MessageLine.safeParse(data);
      if (message.success) {
        finalMessage = message.data.text;
        return [{ type: "agent.message", text: message.data.text }];
      }
      const session = SessionLine.safeParse(data);
      if (session.success && sessionId === null) {
        sessionId = session.data.id;
        return [{ type: "agent.session", sessionId }];
      }
      return [{ type: "agent.json", data }];
    },
    finish() {
      return { verdict: { kind: "exit_code_decides" }, sessionId, finalMessage, usage: null };
    },
  };
}

export function commandBackend(agentCmd: string): ExternalAgentBackend {
  return {
    name: "command",
    async run(task: string, context: AgentContext): Promise<ExternalAgentResult> {
      const taskFile = join(context.homeDir, "handoff-task.txt");
      writeFileSync(taskFile, task, { mode: 0o600, flag: "wx" });
      const result = await runAgentCommand(
        {
          command: buildCommandAgentCommand(agentCmd, task, context.model, taskFile),
          parser: createCommandParser(),
          executableLabel: agentCmd,
          version: null,
          installHint: "check the --agent-cmd command line",
          mounts: { programs: commandPrograms(agentCmd) },
        },
        context,
      );
      return explainShellFailure(result);
    },
  };
}
