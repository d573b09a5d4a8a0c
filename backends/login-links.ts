import { lstatSync, mkdirSync, readlinkSync, symlinkSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join } from "node:path";

/** One file of the user's CLI login, to be visible inside the run's private CLI home. */
export interface LoginLink {
  /** Where the CLI will look for it, inside the private home. */
  readonly at: string;
  /** The user's own file. */
  readonly target: string;
}

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

/**
 * Makes the user's login visible to the CLI without handoff reading or copying it: a symlink per file that
 * exists (checked with lstat, never opened). Returns the links made, for the record.
 */
export function linkLogins(links: readonly LoginLink[]): string[] {
  const made: string[] = [];
  for (const link of links) {
    try {
      lstatSync(link.target);
    } catch {
      continue;
    }
    mkdirSync(dirname(link.at), { recursive: true, mode: 0o700 });
    symlinkSync(link.target, link.at);
    made.push(link.at);
  }
  return made;
}

/**
 * Links the CLI replaced during the run. A CLI that refreshes a token by writing a temp file and renaming it over
 * the link leaves the new credential in the private home (removed after the run), while the user's file still holds
 * the old one, which a single-use refresh token may have made stale.
 */
export function replacedLinks(links: readonly LoginLink[], made: readonly string[]): LoginLink[] {
  return links.filter((link) => {
    if (!made.includes(link.at)) return false;
    try {
      return readlinkSync(link.at) !== link.target;
    } catch {
      return true;
    }
  });
}

/** Login files a CLI rewrites when it refreshes a token: writable in the sandbox, or a rotated token is lost. */
const REFRESHED_LOGIN_FILES = new Set(["auth.json", ".credentials.json", "agent.db"]);

/**
 * The user's login files the sandbox must show at their own paths (the links in the private home point there).
 * Configuration stays read-only: a CLI config can name programs to run (Codex `notify`, MCP servers), and an agent
 * that could edit it would run code in the user's next session.
 */
export function loginMounts(links: readonly LoginLink[], made: readonly string[]): { readOnly: string[]; writable: string[] } {
  const linked = links.filter((link) => made.includes(link.at));
  return {
    readOnly: linked.filter((link) => !REFRESHED_LOGIN_FILES.has(basename(link.target))).map((link) => link.target),
    writable: linked.filter((link) => REFRESHED_LOGIN_FILES.has(basename(link.target))).map((link) => link.target),
  };
}
