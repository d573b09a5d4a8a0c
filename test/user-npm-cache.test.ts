import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { probeBubblewrap } from "../src/containment/sandbox.js";
import { userNpmCacheDir } from "../src/environment/user-npm-cache.js";
import { diffFingerprints, fingerprintTree, makeRepo, tempDir } from "./helpers/repo.js";
import { delegate } from "./helpers/run.js";

/**
 * The first install from what the user already has (docs/environment.md, "Your own npm cache"): the tarballs a
 * lockfile pins that the user's npm cache holds are copied, checked, into handoff's, and the user's cache is never
 * written. Everything here is offline: a package made with `npm pack`, put in a fake user cache with `npm cache add`,
 * and a setup `npm ci --offline`, which can only succeed from a cache.
 */
const bwrap = await probeBubblewrap();
const sandbox = bwrap.ok ? "bwrap" : "none";

function npm(args: string[], cwd: string, cache: string): string {
  const home = tempDir("handoff-npm-home");
  const run = spawnSync("npm", args, {
    cwd,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: home,
      npm_config_cache: cache,
      npm_config_offline: "true",
      npm_config_update_notifier: "false",
    },
    encoding: "utf8",
  });
  expect(run.status, run.stderr).toBe(0);
  return run.stdout;
}

/** A tiny package's tarball, its integrity, and a user npm cache that holds it (as after a real install). */
function userCacheWithPackage(): { cache: string; integrity: string; tarball: Buffer } {
  const source = tempDir("handoff-tiny");
  writeFileSync(join(source, "package.json"), JSON.stringify({ name: "handoff-tiny", version: "1.0.0", main: "index.js" }));
  writeFileSync(join(source, "index.js"), "module.exports = 'tiny';\n");
  const cache = join(tempDir("handoff-user-home"), ".npm");
  const packed = npm(["pack", "--silent"], source, cache).trim();
  const tarball = readFileSync(join(source, packed));
  npm(["cache", "add", join(source, packed)], source, cache);
  const integrity = `sha512-${createHash("sha512").update(tarball).digest("base64")}`;
  return { cache, integrity, tarball };
}

/** A project whose lockfile pins handoff-tiny from the registry, by that integrity. */
function project(integrity: string): Record<string, string> {
  const manifest = { name: "app", version: "1.0.0", dependencies: { "handoff-tiny": "1.0.0" } };
  const lock = {
    name: "app",
    version: "1.0.0",
    lockfileVersion: 3,
    requires: true,
    packages: {
      "": manifest,
      "node_modules/handoff-tiny": {
        version: "1.0.0",
        resolved: "https://registry.npmjs.org/handoff-tiny/-/handoff-tiny-1.0.0.tgz",
        integrity,
      },
    },
  };
  return {
    "package.json": `${JSON.stringify(manifest, null, 2)}\n`,
    "package-lock.json": `${JSON.stringify(lock, null, 2)}\n`,
    ".gitignore": "node_modules/\n",
    "notes.txt": "notes\n",
  };
}

const SETUP = "npm ci --offline";
const EDIT = "echo more >> notes.txt";
const CHECK = `node -e "process.exit(require('handoff-tiny') === 'tiny' ? 0 : 1)"`;

describe("setup installs from the user's own npm cache, read only", () => {
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env.npm_config_cache;
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.npm_config_cache;
    else process.env.npm_config_cache = saved;
  });

  test("an offline npm ci succeeds from the user's cache, which is byte-identical and untouched after the run", async () => {
    const user = userCacheWithPackage();
    const before = fingerprintTree(user.cache);
    process.env.npm_config_cache = user.cache;
    const repo = await makeRepo(project(user.integrity));
    const cacheDir = tempDir("handoff-cache");
    const run = await delegate(repo, EDIT, { setup: [SETUP], verify: [CHECK], sandbox, cacheDir });
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    expect(diffFingerprints(before, fingerprintTree(user.cache))).toEqual([]);
    // handoff's own cache now holds the tarball, so the user's is needed only once.
    const hex = createHash("sha512").update(user.tarball).digest("hex");
    const downloads = join(cacheDir, sandbox === "none" ? "unsandboxed/downloads" : "downloads");
    const copied = join(downloads, "npm/_cacache/content-v2/sha512", hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
    expect(readFileSync(copied).equals(user.tarball)).toBe(true);
  });

  test("without the user's cache the same offline install fails: the run above did reuse it", async () => {
    const user = userCacheWithPackage();
    process.env.npm_config_cache = join(tempDir("handoff-empty-home"), ".npm");
    const repo = await makeRepo(project(user.integrity));
    const run = await delegate(repo, EDIT, { setup: [SETUP], verify: [CHECK], sandbox, cacheDir: tempDir("handoff-cache") });
    expect(run.result.detail).toBe("setup_failed");
  });

  test("a tarball in the user's cache whose bytes are not the lockfile's integrity is left out, and the cache is not touched", async () => {
    const user = userCacheWithPackage();
    const hex = createHash("sha512").update(user.tarball).digest("hex");
    const content = join(user.cache, "_cacache/content-v2/sha512", hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
    // Planted: other bytes under the lockfile's digest (a poisoned cache), as the user's own file.
    spawnSync("chmod", ["u+w", content]);
    writeFileSync(content, Buffer.concat([user.tarball, Buffer.from("planted")]));
    const before = fingerprintTree(user.cache);
    process.env.npm_config_cache = user.cache;
    const repo = await makeRepo(project(user.integrity));
    const cacheDir = tempDir("handoff-cache");
    const run = await delegate(repo, EDIT, { setup: [SETUP], verify: [CHECK], sandbox, cacheDir });
    expect(run.result.detail).toBe("setup_failed");
    expect(diffFingerprints(before, fingerprintTree(user.cache))).toEqual([]);
    const downloads = join(cacheDir, sandbox === "none" ? "unsandboxed/downloads" : "downloads");
    const shard = join(downloads, "npm/_cacache/content-v2/sha512", hex.slice(0, 2), hex.slice(2, 4));
    expect(() => readdirSync(shard)).toThrow();
  });
});

describe("where the user's npm cache is", () => {
  test("npm_config_cache in any case, else cache= in ~/.npmrc, else ~/.npm; only one that holds a _cacache", () => {
    const home = tempDir("handoff-home");
    const named = tempDir("handoff-named");
    mkdirSync(join(named, "_cacache"));
    expect(userNpmCacheDir({ HOME: home, NPM_CONFIG_CACHE: named })).toBe(named);
    expect(userNpmCacheDir({ HOME: home })).toBeNull();
    mkdirSync(join(home, ".npm/_cacache"), { recursive: true });
    expect(userNpmCacheDir({ HOME: home })).toBe(join(home, ".npm"));
    mkdirSync(join(home, "elsewhere/_cacache"), { recursive: true });
    writeFileSync(join(home, ".npmrc"), "fund=false\ncache=~/elsewhere\n");
    expect(userNpmCacheDir({ HOME: home })).toBe(join(home, "elsewhere"));
    expect(userNpmCacheDir({ HOME: home, npm_config_cache: "relative/dir" })).toBeNull();
  });
});
