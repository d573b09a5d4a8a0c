import type { ExternalAgentBackend } from "../src/agent/backend.js";
import { UsageError } from "../src/lib/errors.js";
import { claudeBackend } from "./claude.js";
import { codexBackend } from "./codex.js";
import { commandBackend } from "./command.js";
import { ompBackend } from "./omp.js";
import { opencodeBackend } from "./opencode.js";
import { piBackend } from "./pi.js";

/** The backends `--backend` can name: five agent CLIs, and `command` for any program. */
export const BACKEND_NAMES = ["codex", "claude", "opencode", "pi", "omp", "command"] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

export interface BackendChoice {
  readonly name: string;
  readonly agentCmd?: string | null;
  readonly bin?: string | null;
}

export function resolveBackend(choice: BackendChoice): ExternalAgentBackend {
  if (choice.name !== "command" && choice.agentCmd) {
    throw new UsageError("agent_cmd_without_command", `--agent-cmd only applies to --backend command (the ${choice.name} backend runs its own CLI; use --bin to choose its executable)`);
  }
  switch (choice.name) {
    case "command":
      if (!choice.agentCmd) throw new UsageError("missing_agent_cmd", "--backend command needs --agent-cmd CMD");
      if (choice.bin) throw new UsageError("bin_with_command", "--bin does not apply to --backend command: put the program in --agent-cmd");
      return commandBackend(choice.agentCmd);
    case "codex":
      return codexBackend;
    case "claude":
      return claudeBackend;
    case "opencode":
      return opencodeBackend;
    case "pi":
      return piBackend;
    case "omp":
      return ompBackend;
    default:
      throw new UsageError("unknown_backend", `unknown backend '${choice.name}' (expected one of ${BACKEND_NAMES.join(", ")})`);
  }
}
