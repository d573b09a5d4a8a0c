import { rmSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import { buildCommandAgentCommand } from "./command.js";
import { createCommandParser } from "./command-stream.js";
import { decideAgentEnding } from "../src/agent/agent-ending.js";
import { agentResult, runAgentProcess } from "../src/agent/agent-process.js";
import type { AgentContext, ExternalAgentBackend, ExternalAgentResult, ResumeOutcome } from "../src/agent/backend.js";

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

/**
 * `--backend command --agent-cmd CMD`: the task file written into the private home, then `/bin/sh -c CMD`
 * (backends/command.ts). Resuming runs the command again in the same clone, with handoff's feedback on stdin and in
 * $HANDOFF_FEEDBACK, and the attempt's number in $HANDOFF_ATTEMPT: a command has no session, only the clone it left.
 */
export function commandBackend(agentCmd: string): ExternalAgentBackend {
  const turn = async (input: CommandTurn, context: AgentContext): Promise<ExternalAgentResult> => {
    const taskFile = join(context.homeDir, "handoff-task.txt");
    // The first turn's file is the task; a resumed turn's is handoff's feedback (the task stays in $HANDOFF_TASK). The
    // home is the agent's to write: whatever it left at this name goes, and the new file is made exclusively.
    rmSync(taskFile, { force: true, recursive: true });
    writeFileSync(taskFile, input.stdin, { mode: 0o600, flag: "wx" });
    const command = buildCommandAgentCommand(agentCmd, input.task, context.model, taskFile, input.feedback);
    const ran = await runAgentProcess(
      { command: { ...command, stdin: input.stdin }, parser: createCommandParser(), mounts: { programs: commandPrograms(agentCmd) } },
      context,
    );
    const outcome = decideAgentEnding({
      ...ran.ending,
      program: { kind: "command", file: command.file, installHint: "check the --agent-cmd command line" },
    });
    return agentResult(ran, outcome, agentCmd, null);
  };
  let task: string | null = null;
  return {
    name: "command",
    run(taskText: string, context: AgentContext): Promise<ExternalAgentResult> {
      task = taskText;
      return turn({ task: taskText, stdin: taskText, feedback: null }, context);
    },
    async resume(_session, message: string, context: AgentContext): Promise<ResumeOutcome> {
      // `handoff resume` starts with a resumed turn: the user's instruction is then both the task and the message.
      return { kind: "resumed", result: await turn({ task: task ?? message, stdin: message, feedback: message }, context) };
    },
  };
}

interface CommandTurn {
  readonly task: string;
  readonly stdin: string;
  readonly feedback: string | null;
}
