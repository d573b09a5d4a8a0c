import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import type { LoginLink } from "../src/agent/cli-contract.js";

/** The user's home as handoff itself sees it (not the agent's private HOME). */
export function userHome(userEnv: Readonly<Record<string, string | undefined>>): string {
  return userEnv.HOME && isAbsolute(userEnv.HOME) ? userEnv.HOME : homedir();
}

/** A dir of the user's named by an environment variable (`CODEX_HOME`, `XDG_CONFIG_HOME`…) when it is absolute, else `~/<fallback>`. */
export function userDir(userEnv: Readonly<Record<string, string | undefined>>, name: string, fallback: string): string {
  const value = userEnv[name];
  return value && isAbsolute(value) ? value : join(userHome(userEnv), fallback);
}

/** The same file names in the user's dir and in the private one: each `name` in `into` links to `name` in `from`. */
export function sameNameLinks(names: readonly string[], into: string, from: string): LoginLink[] {
  return names.map((name) => ({ at: join(into, name), target: join(from, name) }));
}
