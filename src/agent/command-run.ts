import { statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import { buildCommandAgentCommand } from "../../backends/command.js";
import { createCommandParser } from "../../backends/command-stream.js";
import { decideAgentEnding } from "./agent-ending.js";
import { agentResult, runAgentProcess } from "./agent-process.js";
import type { AgentContext, ExternalAgentBackend, ExternalAgentResult } from "./backend.js";

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

/** `--backend command --agent-cmd CMD`: the task file written into the private home, then `/bin/sh -c CMD` (backends/command.ts). */
export function commandBackend(agentCmd: string): ExternalAgentBackend {
  return {
    name: "command",
    async run(task: string, context: AgentContext): Promise<ExternalAgentResult> {
      const taskFile = join(context.homeDir, "handoff-task.txt");
      writeFileSync(taskFile, task, { mode: 0o600, flag: "wx" });
      const command = buildCommandAgentCommand(agentCmd, task, context.model, taskFile);
      const ran = await runAgentProcess(
        { command, parser: createCommandParser(), mounts: { programs: commandPrograms(agentCmd) } },
        context,
      );
      const outcome = decideAgentEnding({
        ...ran.ending,
        program: { kind: "command", file: command.file, installHint: "check the --agent-cmd command line" },
      });
      return agentResult(ran, outcome, agentCmd, null);
    },
  };
}
