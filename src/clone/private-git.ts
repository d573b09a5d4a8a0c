import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TOOL_CACHE_PATTERNS } from "../patch/tool-caches.js";
import type { SourceRepo } from "./source-repo.js";

/**
 * A git dir only handoff ever wrote to, made after the agent is gone: its config, hooks and info files are
 * handoff's, so no filter, hook or fsmonitor the agent planted can run (docs/threat-model.md G1, G2). It borrows the
 * objects of handoff's pristine store (a copy of the source's, made before the agent) through
 * `objects/info/alternates`: never the source's own object files, which git would touch (it re-dates objects
 * it is asked to write again).
 */
export interface PrivateGitDir {
  readonly path: string;
}

export async function createPrivateGitDir(
  source: SourceRepo,
  objectsFrom: string,
  parent: string,
  label: string,
  /**
   * Paths (relative, a directory ending in `/`) git must treat as ignored besides the tool caches (which always
   * are): what setup left that .gitignore does not cover.
   */
  ignored: readonly string[] = [],
): Promise<PrivateGitDir> {
  const path = mkdtempSync(join(parent, `${label}-`));
  writeBareGitDir(path, source.objectFormat);
  writeFileSync(join(path, "objects", "info", "alternates"), `${join(objectsFrom, "objects")}\n`);
  // In-tree `.gitattributes` may mark text as binary (`-diff`) to hide code from review: let content decide.
  mkdirSync(join(path, "info"), { recursive: true });
  writeFileSync(join(path, "info", "attributes"), "* !diff\n");
  // Bytecode and test-runner caches are never a change: not the agent's, not the verify commands' (tool-caches.ts).
  const exclude = [...TOOL_CACHE_PATTERNS, ...ignored.map(literalPattern)];
  writeFileSync(join(path, "info", "exclude"), exclude.map((pattern) => `${pattern}\n`).join(""));
  return { path };
}

/**
 * What `git init --bare --template=` writes, written here: a git process started for it finished only after
 * extraction's synchronous first steps (settling, the preflight walk), on the critical path of every extraction.
 */
function writeBareGitDir(path: string, objectFormat: "sha1" | "sha256"): void {
  for (const dir of ["objects/info", "objects/pack", "refs/heads", "refs/tags"]) mkdirSync(join(path, dir), { recursive: true });
  writeFileSync(join(path, "HEAD"), "ref: refs/heads/main\n");
  const format = objectFormat === "sha1" ? "\trepositoryformatversion = 0\n" : "\trepositoryformatversion = 1\n";
  const extensions = objectFormat === "sha1" ? "" : "[extensions]\n\tobjectformat = sha256\n";
  writeFileSync(join(path, "config"), `[core]\n${format}\tfilemode = true\n\tbare = true\n${extensions}`);
}

/** Writes an index file with the bytes and mtime git gave it (the mtime keeps git's racy-clean check honest). */
export function writeIndexCopy(path: string, bytes: Buffer, mtimeMs: number): void {
  writeFileSync(path, bytes, { mode: 0o600 });
  const seconds = mtimeMs / 1000;
  utimesSync(path, seconds, seconds);
}

/** A path as a gitignore pattern that matches it alone: anchored, every special character escaped. */
function literalPattern(path: string): string {
  return `/${path.replace(/[\\*?[\]!# ]/gu, (ch) => `\\${ch}`)}`;
}
