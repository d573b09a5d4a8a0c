import type { ExternalAgentBackend } from "../src/agent/backend.js";
import { defineCliBackend } from "../src/agent/cli-run.js";
import { commandBackend } from "./command-backend.js";
import { UsageError } from "../src/lib/errors.js";
import { escapeControls } from "../src/vocabulary/display.js";
import { closest } from "../src/lib/suggest.js";
import type { CliInfo, CliTranslator } from "../src/agent/cli-contract.js";
import { claudeDefinition } from "./claude.js";
import { codexDefinition } from "./codex.js";
import { copilotDefinition } from "./copilot.js";
import { geminiDefinition } from "./gemini.js";
import { ompDefinition } from "./omp.js";
import { opencodeDefinition } from "./opencode.js";
import { piDefinition } from "./pi.js";

/** One agent CLI: its `--backend` name, what a user needs to know about it, and its translator (`backends/<name>.ts`). */
export interface CliBackendRow {
  readonly name: string;
  /** The executable defaults to the name. */
  readonly info: Omit<CliInfo, "name" | "executable"> & { readonly executable?: string };
  readonly definition: CliTranslator;
}

/**
 * The agent CLIs handoff runs, one row each: every list of names, the infos, the help text, `resolveBackend` and
 * the conformance suite derive from this table. Adding a CLI is a `<name>.ts` + `<name>-stream.ts` pair and a row
 * here (docs/backends.md, "Adding a backend"). The first row is the default backend.
 */
export const CLI_BACKEND_ROWS = [
  {
    name: "codex",
    info: {
      testedVersion: "0.171.0",
      install: "npm install -g @openai/codex@0.171.0",
      login: "log in with `codex login` (handoff links ~/.codex/auth.json into the run), or pass a key with --env CODEX_API_KEY",
      projectFiles: ["AGENTS.md", ".codex/"],
    },
    definition: codexDefinition,
  },
  {
    name: "claude",
    info: {
      testedVersion: "2.1.197",
      install: "npm install -g @anthropic-ai/claude-code@2.1.197",
      login:
        "log in with `claude` and /login (handoff links ~/.claude/.credentials.json into the run), or pass a key with --env ANTHROPIC_API_KEY, or a `claude setup-token` token with --env CLAUDE_CODE_OAUTH_TOKEN",
      unattendedLogin:
        "For unattended use, create a long-lived token with `claude setup-token` and pass it with --env CLAUDE_CODE_OAUTH_TOKEN.",
      projectFiles: ["CLAUDE.md", ".claude/", ".mcp.json"],
    },
    definition: claudeDefinition,
  },
  {
    name: "opencode",
    info: {
      testedVersion: "1.18.33",
      install: "npm install -g opencode-ai@1.18.33",
      login:
        "log in with `opencode auth login` (handoff links ~/.local/share/opencode/auth.json into the run), or pass the provider's key with --env",
      projectFiles: ["AGENTS.md", ".opencode/", "opencode.json", "opencode.jsonc"],
    },
    definition: opencodeDefinition,
  },
  {
    name: "pi",
    info: {
      testedVersion: "0.73.1",
      install: "npm install -g @mariozechner/pi-coding-agent@0.73.1",
      login:
        "log in with `pi` and /login (handoff links ~/.pi/agent/auth.json into the run), or pass the provider's key with --env, e.g. --env ANTHROPIC_API_KEY",
      projectFiles: ["AGENTS.md", ".pi/"],
    },
    definition: piDefinition,
  },
  {
    name: "omp",
    info: {
      testedVersion: "18.2.3",
      install: "npm install -g bun @oh-my-pi/pi-coding-agent@18.2.3 (omp runs on bun, which must be on PATH)",
      login: "log in with `omp` and /login (handoff links ~/.omp/agent into the run), or pass the provider's key with --env",
      projectFiles: ["AGENTS.md", ".omp/"],
    },
    definition: ompDefinition,
  },
  {
    name: "copilot",
    info: {
      testedVersion: "1.0.102",
      install: "npm install -g @github/copilot@1.0.102",
      login:
        "log in with `copilot login` (handoff links ~/.copilot/config.json into the run; a token in the system keyring may be out of the sandbox's reach), or pass a token with --env COPILOT_GITHUB_TOKEN, or bring your own key: --env COPILOT_PROVIDER_BASE_URL --env COPILOT_PROVIDER_API_KEY --env COPILOT_MODEL --env COPILOT_OFFLINE",
      projectFiles: [
        "AGENTS.md",
        "CLAUDE.md",
        "GEMINI.md",
        ".claude/CLAUDE.md",
        ".github/copilot-instructions.md",
        ".github/instructions/",
        ".github/copilot/",
        ".github/agents/",
        ".github/skills/",
        ".github/extensions/",
        ".github/plugin/",
        ".github/plugin.json",
        ".github/mcp.json",
        ".github/lsp.json",
        ".mcp.json",
        ".copilot/",
      ],
    },
    definition: copilotDefinition,
  },
  {
    name: "gemini",
    info: {
      testedVersion: "0.61.0",
      install: "npm install -g @google/gemini-cli@0.61.0",
      login:
        "log in with `gemini` and choose Login with Google (handoff links ~/.gemini/oauth_creds.json into the run), or choose Use Gemini API key and pass the key with --env GEMINI_API_KEY",
      projectFiles: ["GEMINI.md", ".gemini/", ".geminiignore"],
    },
    definition: geminiDefinition,
  },
] as const satisfies readonly CliBackendRow[];

export type CliName = (typeof CLI_BACKEND_ROWS)[number]["name"];

/** What each row makes: the CLI's full info, and its backend. */
export interface CliBackendEntry {
  readonly info: CliInfo & { readonly name: CliName };
  readonly backend: ExternalAgentBackend;
}

function entryOf(row: (typeof CLI_BACKEND_ROWS)[number]): CliBackendEntry {
  const info = { executable: row.name, ...row.info, name: row.name };
  return { info, backend: defineCliBackend({ info, ...row.definition }) };
}

/** Each agent CLI's info and backend, by name. */
export const CLI_BACKENDS = Object.fromEntries(CLI_BACKEND_ROWS.map((row) => [row.name, entryOf(row)])) as Record<CliName, CliBackendEntry>;

/** The agent CLIs, in the registry's order. */
export const CLI_INFOS: readonly CliBackendEntry["info"][] = CLI_BACKEND_ROWS.map((row) => CLI_BACKENDS[row.name].info);

/** The backend `--backend command --agent-cmd CMD` names: any program as the agent. */
export const COMMAND_BACKEND = "command";

/** The backends `--backend` can name: the agent CLIs, and `command` for any program. */
export const BACKEND_NAMES: readonly BackendName[] = [...CLI_INFOS.map((info) => info.name), COMMAND_BACKEND];
export type BackendName = CliName | typeof COMMAND_BACKEND;

/** The backend a run uses when neither `--backend` nor .handoff.json names one. */
export const DEFAULT_BACKEND: CliName = CLI_BACKEND_ROWS[0].name;

/** "codex, claude, opencode, pi, omp or command", for help texts. */
export function backendNamesText(): string {
  return `${BACKEND_NAMES.slice(0, -1).join(", ")} or ${BACKEND_NAMES.at(-1)}`;
}

export interface BackendChoice {
  readonly name: string;
  readonly agentCmd?: string | null;
  readonly bin?: string | null;
}

function isCliName(name: string): name is CliName {
  return Object.hasOwn(CLI_BACKENDS, name);
}

export function resolveBackend(choice: BackendChoice): ExternalAgentBackend {
  if (choice.name !== COMMAND_BACKEND && choice.agentCmd) {
    throw new UsageError(
      "agent_cmd_without_command",
      ({ name }) =>
        `${name("agentCmd")} only applies to the command backend (the ${choice.name} backend runs its own CLI; use ${name("bin")} to choose its executable)`,
    );
  }
  if (choice.name === COMMAND_BACKEND) {
    if (!choice.agentCmd)
      throw new UsageError("missing_agent_cmd", ({ surface, name }) =>
        surface === "library"
          ? `the command backend needs ${name("agentCmd")}`
          : `${name("backend")} command needs ${name("agentCmd")} CMD`,
      );
    if (choice.bin)
      throw new UsageError(
        "bin_with_command",
        ({ name }) => `${name("bin")} does not apply to the command backend: put the program in ${name("agentCmd")}`,
      );
    return commandBackend(choice.agentCmd);
  }
  if (isCliName(choice.name)) return CLI_BACKENDS[choice.name].backend;
  throw unknownBackend(choice.name);
}

/** `unknown backend 'codx'; did you mean 'codex'?`, or the names to choose from when none is close. */
export function unknownBackend(name: string): UsageError {
  const shown = escapeControls(name.slice(0, 100));
  const near = closest(name, BACKEND_NAMES);
  return new UsageError(
    "unknown_backend",
    near === null
      ? `unknown backend '${shown}' (expected one of ${BACKEND_NAMES.join(", ")})`
      : `unknown backend '${shown}'; did you mean '${near}'?`,
  );
}
