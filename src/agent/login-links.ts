import { lstatSync, mkdirSync, readlinkSync, symlinkSync, unlinkSync } from "node:fs";
import { basename, dirname } from "node:path";
import type { LoginLink } from "./cli-contract.js";

/**
 * Makes the user's login visible to the CLI without handoff reading or copying it: a symlink per file that
 * exists (checked with lstat, never opened). Returns the links made, for the record. Idempotent across the turns
 * of one home (a repair attempt, `handoff resume`): a link already ours is reused and counted as made, so
 * `replacedLinks` still sees a replacement in this turn; any other entry at a link's place (a file the CLI
 * replaced the link with) is left alone.
 */
export function linkLogins(links: readonly LoginLink[]): string[] {
  const made: string[] = [];
  for (const link of links) {
    try {
      lstatSync(link.target);
    } catch {
      continue;
    }
    const present = entryAt(link);
    if (present === "other") continue;
    if (present === "none") {
      mkdirSync(dirname(link.at), { recursive: true, mode: 0o700 });
      symlinkSync(link.target, link.at);
    }
    made.push(link.at);
  }
  return made;
}

/** What is at a link's place: nothing, our own link to the user's file, or something else (never followed). */
function entryAt(link: LoginLink): "none" | "ours" | "other" {
  try {
    if (!lstatSync(link.at).isSymbolicLink()) return "other";
  } catch {
    return "none";
  }
  try {
    return readlinkSync(link.at) === link.target ? "ours" : "other";
  } catch {
    return "other";
  }
}

/**
 * Removes the user's login from a private home that outlives its run (`--keep-session`): each link, and a file the
 * CLI replaced it with (a refreshed token is the user's login too). Directories are left. Returns what was removed.
 */
export function unlinkLogins(links: readonly LoginLink[]): string[] {
  const removed: string[] = [];
  for (const link of links) {
    try {
      if (lstatSync(link.at).isDirectory()) continue;
      unlinkSync(link.at);
      removed.push(link.at);
    } catch {
      // nothing there
    }
  }
  return removed;
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
const REFRESHED_LOGIN_FILES = new Set(["auth.json", ".credentials.json", "agent.db", "oauth_creds.json"]);

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
