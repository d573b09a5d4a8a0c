import { type ChildProcess, spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { expect } from "vitest";
import { tempDir } from "./repo.js";

/** The CLI as users start it: the launcher in bin/ over the compiled dist/ (built by `npm test`). */
export const HANDOFF_BIN = resolve(import.meta.dirname, "../../bin/handoff.js");

export interface CliOutcome {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  readonly cwd?: string;
  /** Added to the environment (handoff's state and workspaces already point into a temp dir). */
  readonly env?: Readonly<Record<string, string>>;
}

/** Starts `node bin/handoff.js ...args` with stdin closed (so never a TTY) and its state in a temp dir. */
export function startCli(args: readonly string[], options: CliOptions = {}): { child: ChildProcess; done: Promise<CliOutcome> } {
  const state = tempDir("handoff-cli-state");
  const child = spawn(process.execPath, [HANDOFF_BIN, ...args], {
    cwd: options.cwd ?? state,
    env: {
      ...process.env,
      XDG_STATE_HOME: join(state, "xdg"),
      HANDOFF_WORKSPACE_DIR: join(state, "ws"),
      HANDOFF_CLI_HOME_DIR: join(state, "homes"),
      ...options.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (text: string) => (stdout += text));
  child.stderr!.setEncoding("utf8").on("data", (text: string) => (stderr += text));
  const done = new Promise<CliOutcome>((resolvePromise, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => resolvePromise({ code, signal, stdout, stderr }));
  });
  return { child, done };
}

export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliOutcome> {
  return startCli(args, options).done;
}

/** A usage error: exit 2, nothing on stdout, exactly one line on stderr that says what is wrong. */
export function expectUsageError(outcome: CliOutcome, says: string | RegExp): void {
  expect(outcome.code, outcome.stderr).toBe(2);
  expect(outcome.stdout).toBe("");
  expect(outcome.stderr.endsWith("\n")).toBe(true);
  expect(outcome.stderr.trimEnd().split("\n"), outcome.stderr).toHaveLength(1);
  expect(outcome.stderr).toMatch(/^handoff: /);
  expect(outcome.stderr).toMatch(says);
}

/** `handoff run -C <repo> -b command --agent-cmd <cmd> <options> -- <task>`: the argv most CLI tests start from. */
export function commandRunArgs(repo: string, agentCmd: string, options: readonly string[], task: string): string[] {
  return ["run", "-C", repo, "-b", "command", "--agent-cmd", agentCmd, ...options, "--", task];
}
