import type { NetworkAccess } from "../egress/egress-policy.js";
import type { ModelEndpoint } from "../egress/model-endpoints.js";
import type { KeyRoute } from "../egress/key-route.js";
import type { AgentCommand, StreamParser } from "./stream-contract.js";

/** What a user needs to know about an agent CLI: where to get it, how to log in, which version handoff tested. */
export interface CliInfo {
  /** The `--backend` name. */
  readonly name: string;
  /** The executable looked up on PATH when `--bin` is not given. */
  readonly executable: string;
  /** The version the conformance suite runs against (test/agent-clis/<name>/package.json). */
  readonly testedVersion: string;
  readonly install: string;
  readonly login: string;
  /** A login that survives unattended runs, named when the CLI replaced its linked login file. */
  readonly unattendedLogin?: string;
  /**
   * The files and folders (ending in `/`) of a repository that instruct or configure this CLI: a patch that changes
   * one is flagged agent_instructions (src/patch/rules/risk-paths.ts), since it steers the next agent run there.
   */
  readonly projectFiles: readonly string[];
}

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
  /**
   * The agent's network: `filtered` (an empty namespace whose one way out is handoff's egress gate), `host`, or
   * `none`. A CLI with a sandbox of its own can leave the network to handoff's gate when it is filtered.
   */
  readonly network: NetworkAccess;
}

/** A resumed turn: the session to continue, and where it ran (equal to `cwd` within a run). */
export interface CliResumeInvocation extends CliInvocation {
  /** The session id the earlier turn reported. */
  readonly resumeId: string;
  /** The earlier turn's working directory: `cwd` for a repair attempt, the earlier run's clone for `handoff resume`. */
  readonly previousCwd: string;
}

/** How to continue a session: the command, and what to do first: files to copy in the private home, commands to run (pure data). */
export interface CliResumeCommand {
  readonly command: AgentCommand;
  /** E.g. a transcript kept under a folder named for the earlier cwd; both paths inside the invocation's homeDir. */
  readonly copies?: readonly { readonly from: string; readonly to: string }[];
  /**
   * Commands run in order after the copies and before the turn, as the turn runs (the home's env, in the clone, the
   * same sandbox and deadline), e.g. the CLI's own tool rebinding a stored session to a new clone. Their output is
   * not read; one that does not exit 0 makes the turn `cannot_resume` with the last line of its stderr.
   */
  readonly before?: readonly AgentCommand[];
  /** The session id the resumed turn will report, when the CLI keeps it (the parser expects it). */
  readonly sessionId?: string;
}

/** Why this CLI cannot continue the session here (e.g. a CLI version without a headless resume). */
export interface CliCannotResume {
  readonly cannotResume: string;
}

/**
 * The private home of one run: directories to create, the user's login files to link, the env that points there.
 * The same env (in a throwaway home) is what `--version` runs with, so no CLI writes state into the user's home.
 */
export interface CliHome {
  readonly env: Readonly<Record<string, string>>;
  readonly dirs: readonly string[];
  readonly links: readonly LoginLink[];
  /**
   * Files handoff itself writes into the home before each turn (pi's key extension), each replaced whole: whatever
   * the agent left at `at` (a link included) is removed first, never written through. `at` directly in the home.
   */
  readonly files?: readonly CliHomeFile[];
}

/** One file handoff writes into the CLI's private home. */
export interface CliHomeFile {
  readonly at: string;
  readonly text: string;
}

/**
 * A translator: argv, environment and private home for its CLI, and a parser for its stdout. Nothing else: no file
 * system, no process (src/agent/cli-run.ts runs it). `info` is the CLI's registry row (backends/index.ts).
 */
export interface CliTranslator {
  home(homeDir: string, userEnv: Readonly<Record<string, string | undefined>>): CliHome;
  /**
   * The hosts this CLI must reach for its model, as the user set it up: the base URLs its config or the passed
   * environment names (a gateway, a local model server), else its provider's default API, login and token-refresh
   * hosts. Nothing else: no telemetry, no update checks. Read from the user's own config files (the ones `home`
   * links), never from the repository. What the egress allowlist grants the agent on top of `--allow-net`.
   */
  network(userEnv: Readonly<Record<string, string | undefined>>, agentEnv: Readonly<Record<string, string>>): CliNetworkNeeds;
  /**
   * The model keys in the agent's environment (passed with `--env`) that handoff can keep out of the sandbox: each
   * with the header the CLI sends it in, where it sends it, and the variable that points the CLI elsewhere. Absent
   * or empty: the CLI's keys stay in its environment (result.json `network.keys` says so).
   */
  keys?(userEnv: Readonly<Record<string, string | undefined>>, agentEnv: Readonly<Record<string, string>>): readonly KeyRoute[];
  command(invocation: CliInvocation): AgentCommand;
  /** The command that continues a session headless; absent for a CLI that cannot. */
  resume?(invocation: CliResumeInvocation): CliResumeCommand | CliCannotResume;
  parser(invocation: CliInvocation, info: CliInfo): StreamParser;
}

/** Where a CLI reaches its model. */
export interface CliNetworkNeeds {
  readonly endpoints: readonly ModelEndpoint[];
}

export type { ModelEndpoint };

/** A translator with its CLI's info: what `defineCliBackend` turns into a backend. */
export interface CliBackendDefinition extends CliTranslator {
  readonly info: CliInfo;
}

/** One file of the user's CLI login, to be visible inside the run's private CLI home. */
export interface LoginLink {
  /** Where the CLI will look for it, inside the private home. */
  readonly at: string;
  /** The user's own file. */
  readonly target: string;
}
