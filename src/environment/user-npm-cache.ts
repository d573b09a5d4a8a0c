import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createHash, randomBytes } from "node:crypto";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";

/**
 * The first install from what the user already has: before a setup on the base runs `npm ci`, handoff itself copies
 * into its own npm download cache the tarballs the lockfile names that the user's npm cache (`_cacache`) holds and
 * its own does not, each one only after its sha512 matched the lockfile's `integrity`. The user's cache is only read,
 * by handoff, outside every sandbox: no setup, agent or verification command ever sees it, and nothing opens it for
 * writing. npm then finds each tarball by that digest (pacote reads `content-v2/sha512/…` directly when the lockfile
 * gives `resolved` and `integrity`) and checks it again as it reads.
 *
 * Why a verified copy and not the user's `_cacache` itself as a read-only layer: npm deletes a cached tarball whose
 * integrity fails (pacote's `cleanupCached`), which on a read-only bind makes the install fail, and an overlay needs
 * root; a copy works everywhere, and only bytes the lockfile pins by hash ever enter handoff's cache.
 */

/** What the copy did, for the setup's log line. */
export interface NpmCacheSeeding {
  readonly userCache: string;
  /** Tarballs copied in, and their bytes. */
  readonly copied: number;
  readonly bytes: number;
  /** Already in handoff's cache. */
  readonly present: number;
  /** In the user's cache with other bytes than the lockfile's integrity names: left out. */
  readonly rejected: number;
}

/** Tarballs larger than this are left to npm (never read whole into memory). */
const MAX_TARBALL_BYTES = 256 * 1024 * 1024;
const NAMES_NPM = /(^|[^\w-])npm($|[^\w-])/;
const LOCKFILES = new Set(["package-lock.json", "npm-shrinkwrap.json"]);

/**
 * The user's npm cache directory, as npm itself would find it from handoff's own environment: `npm_config_cache`
 * (npm reads its variables case-insensitively), else `cache=` in `~/.npmrc`, else `~/.npm`. Null when none is an
 * absolute path to a directory.
 */
export function userNpmCacheDir(env: NodeJS.ProcessEnv = process.env): string | null {
  const named = Object.entries(env).find(([name, value]) => name.toLowerCase() === "npm_config_cache" && value);
  const home = env.HOME || homedir();
  const dir = named?.[1] ?? npmrcCache(home, env) ?? join(home, ".npm");
  if (!isAbsolute(dir)) return null;
  try {
    return lstatSync(join(dir, "_cacache")).isDirectory() ? dir : null;
  } catch {
    return null;
  }
}

/** `cache=` of ~/.npmrc, with `~/` and `${VAR}` expanded as npm does; null when it has none. */
function npmrcCache(home: string, env: NodeJS.ProcessEnv): string | null {
  let text: string;
  try {
    text = readFileSync(join(home, ".npmrc"), "utf8");
  } catch {
    return null;
  }
  let found: string | null = null;
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*cache\s*=\s*(.*?)\s*$/.exec(line);
    if (match) found = match[1]!.replace(/^["']|["']$/g, "");
  }
  if (found === null) return null;
  found = found.replace(/\$\{([^}]+)\}/g, (_, name: string) => env[name] ?? "");
  return found.startsWith("~/") ? join(home, found.slice(2)) : found;
}

/** The lockfiles among the setup inputs, when a setup command runs npm: the tarballs worth looking for. */
export function npmLockfiles(setup: readonly string[], inputs: readonly { readonly path: string }[]): string[] {
  if (!setup.some((command) => NAMES_NPM.test(command))) return [];
  return inputs.map((input) => input.path).filter((path) => LOCKFILES.has(path.slice(path.lastIndexOf("/") + 1)));
}

/**
 * Copies into `handoffCache` (an npm cache directory, its `_cacache` made if missing) every tarball that `lockfiles`
 * (paths under `tree`) pin by sha512 and that `userCache` holds with exactly those bytes. Never writes `userCache`.
 */
export function seedNpmCache(userCache: string, handoffCache: string, tree: string, lockfiles: readonly string[]): NpmCacheSeeding {
  const seeding = { userCache, copied: 0, bytes: 0, present: 0, rejected: 0 };
  const digests = new Set<string>();
  for (const lockfile of lockfiles) for (const digest of lockfileDigests(join(tree, lockfile))) digests.add(digest);
  for (const hex of digests) {
    const target = contentPath(handoffCache, hex);
    if (exists(target)) {
      seeding.present += 1;
      continue;
    }
    const bytes = readRegularFile(contentPath(userCache, hex));
    if (bytes === null) continue;
    if (createHash("sha512").update(bytes).digest("hex") !== hex) {
      seeding.rejected += 1;
      continue;
    }
    // Written beside its place and renamed in, as cacache does: npm never sees half a tarball.
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
    const partial = `${target}.handoff-${randomBytes(6).toString("hex")}`;
    try {
      writeFileSync(partial, bytes, { flag: "wx", mode: 0o644 });
      renameSync(partial, target);
    } catch {
      rmSync(partial, { force: true });
      continue;
    }
    seeding.copied += 1;
    seeding.bytes += bytes.length;
  }
  return seeding;
}

/** The hex sha512 digests of every package a lockfile gives with `resolved` and `integrity` (format 1, 2 or 3). */
export function lockfileDigests(path: string): string[] {
  let lock: unknown;
  try {
    lock = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return [];
  }
  const digests: string[] = [];
  const visit = (entries: unknown): void => {
    if (typeof entries !== "object" || entries === null) return;
    for (const entry of Object.values(entries as Record<string, unknown>)) {
      if (typeof entry !== "object" || entry === null) continue;
      const { integrity, resolved, dependencies } = entry as Record<string, unknown>;
      if (typeof integrity === "string" && typeof resolved === "string") digests.push(...sha512Digests(integrity));
      // Format 1 nests its packages under `dependencies`; 2 and 3 list them flat under `packages`.
      if (typeof dependencies === "object" && dependencies !== null && !Array.isArray(dependencies)) visit(dependencies);
    }
  };
  const { packages, dependencies } = (typeof lock === "object" && lock !== null ? lock : {}) as Record<string, unknown>;
  visit(packages);
  if (typeof packages !== "object" || packages === null) visit(dependencies);
  return digests;
}

/** The sha512 hashes of an integrity string (`sha512-<base64>`, several separated by spaces), in hex. */
function sha512Digests(integrity: string): string[] {
  const digests: string[] = [];
  for (const token of integrity.trim().split(/\s+/)) {
    const match = /^sha512-([A-Za-z0-9+/]{86}==)(\?.*)?$/.exec(token);
    if (match) digests.push(Buffer.from(match[1]!, "base64").toString("hex"));
  }
  return digests;
}

/** cacache's place for content of that sha512 (cacache/lib/content/path.js, content version 2). */
function contentPath(npmCache: string, hex: string): string {
  return join(npmCache, "_cacache", "content-v2", "sha512", hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** A regular file's bytes, read without following a link or blocking on a FIFO; null for anything else. */
function readRegularFile(path: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > MAX_TARBALL_BYTES) return null;
    return readFileSync(fd);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}
