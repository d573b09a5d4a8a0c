import { mkdirSync } from "node:fs";
import { join } from "node:path";

/**
 * Package managers' download caches, owned by handoff: without them every setup starts from an empty cache (the
 * sandbox hides the user's own, and each command gets a private HOME). A setup on the base uses the persistent
 * directory in the cache; a setup on a patched manifest (verification) gets a throw-away copy, so nothing the agent
 * could influence reaches a later run.
 */
const DIRS = {
  npm_config_cache: "npm",
  YARN_CACHE_FOLDER: "yarn",
  // pnpm 12 (tried: 12.23) reads its store only from pnpm_config_store_dir; npm reads no variable of that prefix.
  pnpm_config_store_dir: "pnpm-store",
  PIP_CACHE_DIR: "pip",
  UV_CACHE_DIR: "uv",
  CARGO_HOME: "cargo",
  GOMODCACHE: "go/mod",
  GOCACHE: "go/build",
} as const;

/**
 * npm's network calls that change nothing installed (the audit report, funding notices, the update check): a user's
 * own ~/.npmrc usually turns them off, and setup's private HOME has none. They cost a round trip each per install.
 */
const NPM_QUIET = { npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" };

/**
 * pnpm 10 and earlier (tried: 8.15, 9.15, 10.34) read the store from npm_config_store_dir, which npm 11 does not know:
 * every npm command given it prints `npm warn Unknown env config "store-dir"`. So it is set only for a setup that
 * names pnpm.
 */
const NAMES_PNPM = /(^|[^\w-])pnpm($|[^\w-])/;

/**
 * The environment variables that point each package manager at its cache under `root` (made if missing), for a setup
 * made of `setup`.
 */
export function downloadCacheEnv(root: string, setup: readonly string[]): Record<string, string> {
  const env: Record<string, string> = { ...NPM_QUIET };
  for (const [name, dir] of Object.entries(DIRS)) {
    const path = join(root, dir);
    mkdirSync(path, { recursive: true, mode: 0o700 });
    env[name] = path;
  }
  if (setup.some((command) => NAMES_PNPM.test(command))) env.npm_config_store_dir = env.pnpm_config_store_dir!;
  return env;
}
