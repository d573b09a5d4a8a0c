/**
 * Everything that lands in events.jsonl: handoff's own gate events and the agent's normalized events.
 * Keyed on `type`; `seq` and `time` are added by the run directory when written.
 */
export type Phase =
  | "approval"
  | "snapshot"
  /** The scratch space and handoff's pristine store of the source's objects. */
  | "clone"
  /** The base environment looked up in the cache (and checked unmodified). */
  | "environment"
  /** The programs the setup commands start, found and started in the sandbox before the agent. */
  | "setup-programs"
  /** The programs the verify commands start, likewise: before setup when there is none, else after it, in the workspace. */
  | "verify-programs"
  | "setup"
  /** The agent's workspace, made from the base environment (an overlay view or a copy). */
  | "workspace"
  /** `handoff resume`: the earlier run's patch applied in the new workspace. */
  | "resume-patch"
  | "agent"
  | "extract"
  | "baseline"
  | "verify"
  | "held"
  | "recheck"
  | "finish"
  /** After the verdict: the workspaces removed (timed, never checkpointed: the verdict stands whatever happens here). */
  | "cleanup";

export type GateEvent =
  /** The patch changed files that decide what verification runs, and how `--test-edits` judges that. */
  | { readonly type: "verification.inputs_changed"; readonly policy: string; readonly paths: readonly string[] }
  | { readonly type: "run.started"; readonly runId: string; readonly repo: string; readonly baseCommit: string; readonly backend: string }
  /** How this run's processes are contained: `none` carries the reason (asked for, or bubblewrap unusable). */
  | { readonly type: "sandbox.chosen"; readonly sandbox: "bwrap" | "none"; readonly verifyNetwork: boolean; readonly reason: string | null }
  /** An agent or setup process tried to reach a host the egress allowlist does not name (once per host and process). */
  | {
      readonly type: "egress.blocked";
      readonly role: "agent" | "setup";
      readonly label: string;
      readonly host: string;
      readonly port: number;
      readonly reason: string;
      readonly attempts: number;
    }
  | { readonly type: "phase.started"; readonly phase: Phase }
  | { readonly type: "phase.finished"; readonly phase: Phase; readonly durationMs: number; readonly ok: boolean; readonly note?: string }
  | { readonly type: "command.started"; readonly phase: string; readonly command: string }
  /** A program the commands start cannot be found or started in the sandbox: the run ends environment_unavailable. */
  | ({ readonly type: "program.unavailable" } & ProgramUnavailable)
  | { readonly type: "source.changed"; readonly when: "after_agent" | "at_end"; readonly changed: readonly string[] }
  /** `--attempts`: an attempt begins (`resumed`: the session continues with handoff's feedback) and ends with its own verdict. */
  | { readonly type: "attempt.started"; readonly attempt: number; readonly resumed: boolean }
  | { readonly type: "attempt.finished"; readonly attempt: number; readonly terminalReason: string; readonly detail: string | null }
  /** No further attempt, although the last one could have been repaired: why (a backend that cannot resume, --total-timeout). */
  | { readonly type: "attempts.stopped"; readonly reason: string }
  /** The base environment came from the cache: no setup ran (`setupMs` is what its build took). */
  | { readonly type: "environment.reused"; readonly key: string; readonly builtBy: string; readonly setupMs: number }
  | { readonly type: "run.finished"; readonly terminalReason: string; readonly detail: string | null };

export type AgentEvent =
  /** The agent's session id, as soon as the stream reveals it. */
  | { readonly type: "agent.session"; readonly sessionId: string }
  | { readonly type: "agent.message"; readonly text: string }
  | { readonly type: "agent.reasoning"; readonly text: string }
  | { readonly type: "agent.tool.started"; readonly id: string; readonly name: string; readonly input?: unknown }
  | { readonly type: "agent.tool.finished"; readonly id: string; readonly ok: boolean; readonly output?: string }
  | { readonly type: "agent.file.changed"; readonly path: string; readonly change: string }
  | { readonly type: "agent.usage"; readonly inputTokens: number; readonly outputTokens: number; readonly costUsd: number | null }
  | { readonly type: "agent.error"; readonly message: string }
  | { readonly type: "agent.final"; readonly text: string }
  /** A structured line the backend passes on as it is (e.g. the command backend's own JSON). */
  | { readonly type: "agent.json"; readonly data: unknown }
  /** A line that was not structured output. */
  | { readonly type: "agent.text"; readonly stream: "stdout" | "stderr"; readonly text: string }
  /** A line the backend could not understand: kept, never dropped, never fatal. */
  | { readonly type: "diagnostic"; readonly message: string; readonly raw?: string };

export type RunnerEvent = GateEvent | AgentEvent;

/** An event as written: with its sequence number and time. */
export type RecordedEvent = RunnerEvent & { readonly seq: number; readonly time: string };

/**
 * Whether the environment can run the setup and verify commands at all, told apart from whether the patch passes:
 * the programs the commands start (`programsOf`), checked in the sandbox before the agent starts, and a command's
 * output that says its own program could not start (`startFailure`), which is the environment's failure, never the
 * patch's.
 */
export interface ProgramUnavailable {
  readonly phase: "setup" | "verify";
  readonly command: string;
  readonly program: string;
  /** Where PATH found it, or null when it did not. */
  readonly resolved: string | null;
  readonly problem: "not_found" | "cannot_start";
  /** What starting it printed (plain text, its first lines), or why it was not found. */
  readonly said: string;
  /** The hidden places it tried to reach (`--expose` shows one). */
  readonly tried?: readonly string[];
}
