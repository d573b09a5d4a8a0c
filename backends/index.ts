import type { ExternalAgentBackend } from "../src/backend.js";
import { UsageError } from "../src/errors.js";
import { commandBackend } from "./command.js";

/** The backends `--backend` can name. The agent-CLI backends (codex, claude, opencode, pi, omp) come next. */
export const BACKEND_NAMES = ["codex", "claude", "opencode", "pi", "omp", "command"] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

export interface BackendChoice {
  readonly name: string;
  readonly agentCmd?: string | null;
  readonly bin?: string | null;
}

export function resolveBackend(choice: BackendChoice): ExternalAgentBackend {
  switch (choice.name) {
    case "command":
      if (!choice.agentCmd) throw new UsageError("missing_agent_cmd", "--backend command needs --agent-cmd CMD");
      if (choice.bin) throw new UsageError("bin_with_command", "--bin does not apply to --backend command: put the program in --agent-cmd");
      return commandBackend(choice.agentCmd);
    case "codex":
    case "claude":
    case "opencode":
    case "pi":
    case "omp":
      throw new UsageError(
        "backend_unavailable",
        `backend '${choice.name}' is not available in this version of handoff yet; use --backend command --agent-cmd CMD`,
      );
    default:
      throw new UsageError("unknown_backend", `unknown backend '${choice.name}' (expected one of ${BACKEND_NAMES.join(", ")})`);
  }
}
