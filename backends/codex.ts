import { createHash } from "node:crypto";
import { join } from "node:path";
import type { AgentCommand } from "../src/agent/stream-contract.js";
import type { CliHome, CliInvocation, CliResumeCommand, CliResumeInvocation, CliTranslator } from "../src/agent/cli-contract.js";
import { createCodexParser } from "./codex-stream.js";
import { sameNameLinks, userDir } from "./cli-home.js";

/**
 * OpenAI Codex CLI (`codex exec --json`, tested with 0.171.0). See docs/backends/codex.md for why each flag is there.
 */

/** The user's files linked into the private CODEX_HOME: the login, and the config that names their provider. */
export const CODEX_LOGIN_FILES = ["auth.json", "config.toml"] as const;

/** The user's own Codex home: `$CODEX_HOME` when set to an absolute path, else `~/.codex`. */
export function userCodexHome(userEnv: Readonly<Record<string, string | undefined>>): string {
  return userDir(userEnv, "CODEX_HOME", ".codex");
}

export function codexHome(homeDir: string, userEnv: Readonly<Record<string, string | undefined>>): CliHome {
  const home = join(homeDir, "codex");
  const mine = userCodexHome(userEnv);
  const links = sameNameLinks(CODEX_LOGIN_FILES, home, mine);
  return { env: { CODEX_HOME: home }, dirs: [home], links };
}

/** A TOML basic string (JSON's escapes are a subset of TOML's). */
function tomlString(value: string): string {
  return JSON.stringify(value);
}

/**
 * `-c projects={"<clone>"={trust_level="untrusted"}}`: a repo-committed `.codex/config.toml` is read only for a
 * trusted project, keyed by the working directory. The clone is a fresh path, so it is untrusted anyway; saying so
 * explicitly keeps it untrusted even if the user's config trusts that path (`--trust` does not override it either).
 */
export function untrustedProjectOverride(cwd: string): string {
  return `projects={${tomlString(cwd)}={trust_level="untrusted"}}`;
}

export function codexArgs(invocation: Pick<CliInvocation, "cwd" | "model">): string[] {
  return [
    "exec",
    "--json",
    "-C",
    invocation.cwd,
    "--sandbox",
    "workspace-write",
    "--skip-git-repo-check",
    "-c",
    'approval_policy="never"',
    "-c",
    untrustedProjectOverride(invocation.cwd),
    ...(invocation.model ? ["-m", invocation.model] : []),
    "-",
  ];
}

export function codexCommand(invocation: CliInvocation): AgentCommand {
  return { file: invocation.executable, args: codexArgs(invocation), stdin: invocation.task };
}

/**
 * Where a resumed turn keeps Codex's SQLite state: a folder of CODEX_HOME named for the home's own path. Codex records
 * each thread's rollout file by absolute path there and, when that path is gone (a kept home renamed for `handoff
 * resume`), fails "no rollout found" instead of looking again. A home at a new path so gets a fresh database, which
 * Codex fills from the rollout files under `sessions/`; the turns of one run share theirs.
 */
export function codexResumeStateDir(homeDir: string): string {
  const key = createHash("sha256").update(homeDir).digest("hex").slice(0, 16);
  return join(homeDir, "codex", "state", key);
}

/**
 * `exec --json <the first turn's flags> -c sqlite_home=… resume <thread_id> -`: the global options go before `resume`
 * (as Codex's SDK puts them), `-c` overrides are not kept with the session so they are passed again, and the thread
 * is found in the same CODEX_HOME. The `-C` and the untrusted-project override name the clone this turn runs in.
 */
export function codexResume(invocation: CliResumeInvocation): CliResumeCommand {
  const state = ["-c", `sqlite_home=${tomlString(codexResumeStateDir(invocation.homeDir))}`];
  const args = [...codexArgs(invocation).slice(0, -1), ...state, "resume", invocation.resumeId, "-"];
  return { command: { file: invocation.executable, args, stdin: invocation.task }, sessionId: invocation.resumeId };
}

export const codexDefinition: CliTranslator = {
  home: codexHome,
  command: codexCommand,
  resume: codexResume,
  parser: () => createCodexParser(),
};
