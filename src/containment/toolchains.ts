import { type Dirent, closeSync, lstatSync, openSync, readSync, readdirSync } from "node:fs";
import { basename, delimiter, dirname, isAbsolute, join } from "node:path";
import { existingRealPath, isInside } from "../lib/paths.js";
import { SECRET_NAMES, secretPlaceTouched } from "./secret-places.js";
import { TOOLCHAIN_MANAGERS } from "./toolchain-managers.js";

/**
 * The user's toolchains that live in the home (pyenv, rustup, asdf, nvm…): what a contained process must see of the
 * hidden home to run them, found by following what PATH's programs execute (a link's target, the absolute paths a
 * shim script names) and, for the managers in toolchain-managers.ts, their whole root. All read-only; credential
 * files inside are masked; `--expose` adds the user's own paths.
 */
export interface HomeExposure {
  /** The real path shown, read-only. */
  readonly path: string;
  /** Why: the manager, or what on PATH led there. */
  readonly why: string;
}

export interface Toolchains {
  readonly exposed: readonly HomeExposure[];
  /** Credential files and directories inside what is exposed: shown empty. */
  readonly masked: readonly string[];
  /** The managers' root variables, for processes whose HOME is private. */
  readonly env: Readonly<Record<string, string>>;
  /** Directories inside what is exposed that each process gets as a writable throw-away copy (pyenv's shims). */
  readonly scratchCopies: readonly string[];
}

export const NO_TOOLCHAINS: Toolchains = { exposed: [], masked: [], env: {}, scratchCopies: [] };

/** Bounds on what is read to find them: a PATH with thousands of entries costs milliseconds, not a walk of the home. */
const MAX_ENTRIES_PER_DIR = 4_000;
const MAX_SCRIPTS_READ = 400;
const SCRIPT_BYTES = 8_192;
const MASK_WALK_ENTRIES = 5_000;
const MASK_WALK_DEPTH = 2;

/** Shared directories of the home that are never exposed whole: only the part a toolchain needs. */
const SHARED_DIRS = ["", ".local", ".local/share", ".local/state", ".config", ".cache", "bin", ".local/bin"];

export function findToolchains(pathVariable: string, home: string, expose: readonly string[] = []): Toolchains {
  const realHome = existingRealPath(home) ?? home;
  const exposed = new Map<string, string>();
  const env: Record<string, string> = {};
  const scratchCopies = new Set<string>();
  const inHome = (path: string) => isInside(path, realHome) && path !== realHome;
  const shared = new Set(SHARED_DIRS.map((dir) => (dir ? join(realHome, dir) : realHome)));
  const managers = TOOLCHAIN_MANAGERS.map((manager) => {
    const named = process.env[manager.variable];
    const root = existingRealPath(named && isAbsolute(named) ? named : join(realHome, manager.defaultRoot));
    return { manager, root };
  });
  const useManager = (path: string, why: string): boolean => {
    for (const { manager, root } of managers) {
      const byProgram = manager.program !== undefined && basename(path) === manager.program;
      if (!root || !(isInside(path, root) || byProgram)) continue;
      if (!exposed.has(root)) exposed.set(root, `${manager.name} (${why})`);
      env[manager.variable] = root;
      for (const dir of manager.scratch ?? []) if (lexistsDir(join(root, dir))) scratchCopies.add(join(root, dir));
      return true;
    }
    return false;
  };
  const expose1 = (path: string, why: string) => {
    if (!inHome(path) || useManager(path, why)) return;
    // The install root of a program: the parent of its bin/, libexec/ or shims/ (a venv, a Node install)...
    const dir = dirname(path);
    const root = ["bin", "libexec", "shims", "sbin"].includes(basename(dir)) ? dirname(dir) : dir;
    // ...but never a shared directory of the home whole: then only the directory, or the file itself.
    const chosen = !shared.has(root) ? root : !shared.has(dir) ? dir : path;
    if (![...exposed.keys()].some((known) => isInside(chosen, known))) exposed.set(chosen, why);
  };

  let scriptsRead = 0;
  const seenDirs = new Set<string>();
  const visitDir = (dir: string, why: string) => {
    if (seenDirs.has(dir)) return;
    seenDirs.add(dir);
    let names: string[];
    try {
      names = readdirSync(dir).slice(0, MAX_ENTRIES_PER_DIR);
    } catch {
      return;
    }
    for (const name of names) {
      const entry = join(dir, name);
      const target = existingRealPath(entry);
      if (!target) continue;
      if (target !== entry && inHome(target)) {
        expose1(target, `${entry} links to ${target}`);
        // A venv's python links on to its base interpreter: follow the bin/ it lands in once more.
        if (basename(dirname(target)) === "bin") visitDir(dirname(target), why);
      }
      if (useManager(target, `${entry} runs it`)) continue;
      if (scriptsRead >= MAX_SCRIPTS_READ) continue;
      const text = scriptText(target);
      if (text === null) continue;
      scriptsRead++;
      for (const named of absolutePaths(text)) {
        const real = existingRealPath(named);
        if (real && inHome(real) && !isInside(real, dir)) expose1(real, `${entry} runs ${named}`);
      }
    }
  };
  for (const dir of pathVariable.split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const real = existingRealPath(dir);
    if (!real || !inHome(real)) continue;
    useManager(real, `${dir} is on PATH`);
    visitDir(real, dir);
  }
  for (const path of expose) {
    const real = existingRealPath(path);
    if (real) exposed.set(real, "--expose");
  }
  const list = [...exposed].map(([path, why]) => ({ path, why }));
  return { exposed: list, masked: secretsInside(list, realHome), env, scratchCopies: [...scratchCopies] };
}

/** The text of a script (`#!` first), bounded; null for a binary, a directory or an unreadable file. */
function scriptText(path: string): string | null {
  let fd: number;
  try {
    if (!lstatSync(path).isFile()) return null;
    fd = openSync(path, "r");
  } catch {
    return null;
  }
  try {
    const buffer = Buffer.alloc(SCRIPT_BYTES);
    const read = readSync(fd, buffer, 0, SCRIPT_BYTES, 0);
    if (read < 2 || buffer[0] !== 0x23 || buffer[1] !== 0x21) return null;
    return buffer.subarray(0, read).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** The absolute paths a script names literally (`exec "/root/.pyenv/libexec/pyenv" exec …`, its `#!` line). */
function absolutePaths(text: string): string[] {
  return [...text.matchAll(/(?:^|[\s'"=:(])(\/[A-Za-z0-9._+@%/-]+)/gm)].map((match) => match[1]!.replace(/\/+$/, ""));
}

/** Credential files and secret places inside the exposed paths (by name, a bounded walk), to be shown empty. */
function secretsInside(exposed: readonly HomeExposure[], home: string): string[] {
  const found = new Set<string>();
  let budget = MASK_WALK_ENTRIES;
  const walk = (dir: string, depth: number) => {
    let entries: Dirent[];
    try {
      // The entries' types from the directory itself (Node lstats those the file system does not type).
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (--budget < 0) return;
      const name = entry.name;
      const path = join(dir, name);
      if (entry.isSymbolicLink()) continue;
      const isDir = entry.isDirectory();
      if (SECRET_NAMES.has(name) || secretPlaceTouched(path, home) === path) found.add(path);
      else if (isDir && depth < MASK_WALK_DEPTH) walk(path, depth + 1);
    }
  };
  for (const { path } of exposed) {
    const place = secretPlaceTouched(path, home);
    if (place && isInside(place, path)) found.add(place);
    if (lexistsDir(path)) walk(path, 0);
  }
  return [...found].filter((path) => existingRealPath(path) !== null).sort();
}

function lexistsDir(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}
