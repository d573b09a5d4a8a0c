import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { CliInfo, CliInvocation, CliResumeInvocation } from "../../src/agent/cli-contract.js";
import { CLI_BACKENDS, type CliName, resolveBackend } from "../../backends/index.js";
import type { AgentContext, ExternalAgentBackend, ExternalAgentResult, ResumeOutcome, SessionToResume } from "../../src/agent/backend.js";
import type { AgentEvent } from "../../src/vocabulary/events.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./repo.js";

/**
 * What the backend unit tests hand a CLI backend: the task, a clone, a run's private home dir and handoff's session
 * id, with the executable of the CLI under test.
 */
export function cliInvocation(executable: string, overrides: Partial<CliInvocation> = {}): CliInvocation {
  return {
    task: "make add() return the sum",
    cwd: "/work/clone/ws",
    model: null,
    executable,
    homeDir: "/var/handoff/homes/run-1",
    sessionId: "00000000-0000-4000-8000-000000000000",
    network: "host",
    ...overrides,
  };
}

/** A resumed turn of the session `resumeId` (a repair attempt: the same clone unless `previousCwd` says otherwise). */
export function cliResumeInvocation(executable: string, overrides: Partial<CliResumeInvocation> = {}): CliResumeInvocation {
  const invocation = cliInvocation(executable, overrides);
  return { resumeId: "session-1", previousCwd: invocation.cwd, ...invocation, task: "did not pass handoff's checks", ...overrides };
}

/** The registry's info for CLI `name`, which its parser is given. */
export function cliInfo(name: CliName): CliInfo {
  return CLI_BACKENDS[name].info;
}

/** A stream of JSON lines as a CLI prints it: each value as JSON, a string as it is (to write a bad line). */
export function lines(...values: unknown[]): string {
  return values.map((value) => (typeof value === "string" ? value : JSON.stringify(value))).join("\n");
}

export interface BackendRunOverrides {
  /** The agent's working directory (default: a fresh clone of the failing-add fixture project). */
  readonly cwd?: string;
  /** Variables over the default environment (PATH=/usr/bin:/bin, HOME and TMPDIR in a temp dir). */
  readonly env?: Readonly<Record<string, string>>;
  readonly model?: string | null;
  /** The CLI to run, as `--bin` names it (default: none, so the backend looks it up on PATH). */
  readonly executable?: string | null;
  /** The CLI's private home (default: an empty dir in a temp dir). */
  readonly homeDir?: string;
  /** handoff's own environment, where the backend finds the user's login (default: HOME in a temp dir). */
  readonly userEnv?: Readonly<Record<string, string | undefined>>;
  /** Wall-clock limit (default 60 s) and limit on silence (default 30 s). */
  readonly timeoutMs?: number;
  readonly idleTimeoutMs?: number;
  readonly onStdout?: (chunk: Buffer) => void;
}

/** Runs backend `name` (or a backend object) on the task as the runner would, everything in temp dirs; returns its result and every event it emitted. */
export async function runBackend(
  name: string | ExternalAgentBackend,
  overrides: BackendRunOverrides = {},
): Promise<{ result: ExternalAgentResult; events: AgentEvent[] }> {
  const events: AgentEvent[] = [];
  const backend = typeof name === "string" ? resolveBackend({ name }) : name;
  const result = await backend.run("make add() return the sum", await backendContext(overrides, events));
  return { result, events };
}

/** Continues `session` with `message` through backend `name`'s `resume`, as a repair attempt or `handoff resume` would. */
export async function resumeBackend(
  name: string | ExternalAgentBackend,
  session: SessionToResume,
  message: string,
  overrides: BackendRunOverrides = {},
): Promise<{ outcome: ResumeOutcome; events: AgentEvent[] }> {
  const events: AgentEvent[] = [];
  const backend = typeof name === "string" ? resolveBackend({ name }) : name;
  if (!backend.resume) throw new Error(`backend ${backend.name} has no resume`);
  const outcome = await backend.resume(session, message, await backendContext(overrides, events));
  return { outcome, events };
}

async function backendContext(overrides: BackendRunOverrides, events: AgentEvent[]): Promise<AgentContext> {
  const scratch = tempDir("handoff-backend-run");
  const homeDir = overrides.homeDir ?? join(scratch, "cli-home");
  mkdirSync(homeDir, { recursive: true });
  return {
    cwd: overrides.cwd ?? (await makeRepo(FAILING_ADD_PROJECT)),
    env: { PATH: "/usr/bin:/bin", HOME: join(scratch, "home"), TMPDIR: scratch, ...overrides.env },
    signal: new AbortController().signal,
    deadline: Date.now() + (overrides.timeoutMs ?? 60_000),
    idleTimeoutMs: overrides.idleTimeoutMs ?? 30_000,
    model: overrides.model ?? null,
    executable: overrides.executable ?? null,
    homeDir,
    userEnv: overrides.userEnv ?? { HOME: join(scratch, "user") },
    onStdout: overrides.onStdout,
    emit: (event) => events.push(event),
  };
}
