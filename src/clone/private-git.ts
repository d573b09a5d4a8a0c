import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git } from "../process/git.js";
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
  await git({ cwd: parent }, ["init", "--bare", "--quiet", "--template=", `--object-format=${source.objectFormat}`, "--", path]);
  writeFileSync(join(path, "objects", "info", "alternates"), `${join(objectsFrom, "objects")}\n`);
  // In-tree `.gitattributes` may mark text as binary (`-diff`) to hide code from review: let content decide.
  mkdirSync(join(path, "info"), { recursive: true });
  writeFileSync(join(path, "info", "attributes"), "* !diff\n");
  // Bytecode and test-runner caches are never a change: not the agent's, not the verify commands' (tool-caches.ts).
  const exclude = [...TOOL_CACHE_PATTERNS, ...ignored.map(literalPattern)];
  writeFileSync(join(path, "info", "exclude"), exclude.map((pattern) => `${pattern}\n`).join(""));
  return { path };
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
