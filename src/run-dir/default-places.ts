import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";

// Where handoff keeps things when no option says: a module of its own, so that `handoff list` loads no more than it.

/** `$XDG_STATE_HOME/handoff` (absolute only), else `~/.local/state/handoff`. */
function stateDir(env: NodeJS.ProcessEnv): string {
  const state = env.XDG_STATE_HOME?.startsWith("/") ? env.XDG_STATE_HOME : join(homedir(), ".local", "state");
  return join(state, "handoff");
}

export function defaultRunsDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(stateDir(env), "runs");
}

/** Not under the temp dir: Codex will not put its sandbox helpers there. */
export function defaultCliHomesDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.HANDOFF_CLI_HOME_DIR ? resolve(env.HANDOFF_CLI_HOME_DIR) : join(stateDir(env), "homes");
}

export function defaultWorkspacesDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.HANDOFF_WORKSPACE_DIR ? resolve(env.HANDOFF_WORKSPACE_DIR) : join(tmpdir(), "handoff");
}
