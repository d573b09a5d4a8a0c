import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { EnvironmentCache, cacheLimitBytes, defaultCacheDir } from "../src/environment/cache-store.js";
import { checkEnvironment, fingerprintEnvironment } from "../src/environment/environment.js";
import { UsageError } from "../src/lib/errors.js";
import { cachedEnvironment, deadPid, environmentRecord, keyOf, setLastUsed, writeBuild } from "./helpers/environments.js";
import { tempDir } from "./helpers/repo.js";

/**
 * Issue 15: the cache of base environments across runs. Environments are committed whole (a rename), found by key,
 * used under a marker, evicted least-recently-used first down to the limit, and never removed while a live process
 * uses one.
 */

const MIB = 1024 * 1024;

function makeCache(limitBytes = 10 * MIB): EnvironmentCache {
  return new EnvironmentCache(join(tempDir("handoff-cache"), "cache"), limitBytes);
}

const daysAgo = (days: number) => new Date(Date.now() - days * 24 * 3600 * 1000);

describe("where the cache lives and how large it may grow", () => {
  test("defaultCacheDir: $HANDOFF_CACHE_DIR, else an absolute $XDG_CACHE_HOME/handoff, else ~/.cache/handoff", () => {
    expect(defaultCacheDir({ HANDOFF_CACHE_DIR: "/var/cache/h", XDG_CACHE_HOME: "/x" })).toBe("/var/cache/h");
    expect(defaultCacheDir({ HANDOFF_CACHE_DIR: "rel" })).toBe(resolve("rel"));
    expect(defaultCacheDir({ XDG_CACHE_HOME: "/x/cache" })).toBe("/x/cache/handoff");
    // A relative XDG_CACHE_HOME is ignored, as the XDG spec says.
    expect(defaultCacheDir({ XDG_CACHE_HOME: "x/cache" })).toBe(join(homedir(), ".cache", "handoff"));
    expect(defaultCacheDir({})).toBe(join(homedir(), ".cache", "handoff"));
  });

  test("HANDOFF_CACHE_LIMIT takes bytes or K/M/G/T (powers of 1024, fractions allowed); unset or empty is 10 GiB", () => {
    expect(cacheLimitBytes({})).toBe(10 * 1024 ** 3);
    expect(cacheLimitBytes({ HANDOFF_CACHE_LIMIT: "" })).toBe(10 * 1024 ** 3);
    expect(cacheLimitBytes({ HANDOFF_CACHE_LIMIT: "20G" })).toBe(20 * 1024 ** 3);
    expect(cacheLimitBytes({ HANDOFF_CACHE_LIMIT: "500M" })).toBe(500 * MIB);
    expect(cacheLimitBytes({ HANDOFF_CACHE_LIMIT: "1.5G" })).toBe(1.5 * 1024 ** 3);
    expect(cacheLimitBytes({ HANDOFF_CACHE_LIMIT: "2t" })).toBe(2 * 1024 ** 4);
    expect(cacheLimitBytes({ HANDOFF_CACHE_LIMIT: "64k" })).toBe(65536);
    expect(cacheLimitBytes({ HANDOFF_CACHE_LIMIT: "123456" })).toBe(123456);
    expect(cacheLimitBytes({ HANDOFF_CACHE_LIMIT: "0" })).toBe(0);
  });

  test.each(["lots", "1.5", "-1G", "20GB", "1e9", "G", "1 G", "99999999999T"])(
    "HANDOFF_CACHE_LIMIT=%s is a usage error that names the variable",
    (value) => {
      const read = () => cacheLimitBytes({ HANDOFF_CACHE_LIMIT: value });
      expect(read).toThrow(UsageError);
      expect(read).toThrow(/^HANDOFF_CACHE_LIMIT must be a size such as 20G, 500M, 1\.5G or a whole number of bytes .*not '/);
    },
  );
});

describe("EnvironmentCache", () => {
  test("a committed build is found by its key, with its record; the root and its directories are made 0700", () => {
    const cache = makeCache();
    const key = keyOf("one");
    const build = cache.startBuild();
    expect(build.startsWith(join(cache.root, "building", `${process.pid}-`))).toBe(true);
    expect(readdirSync(build)).toEqual([]);
    for (const dir of [cache.root, join(cache.root, "building"), build]) expect(statSync(dir).mode & 0o777).toBe(0o700);

    writeBuild(build, environmentRecord(key, { setup: ["npm ci", "npm run build"] }));
    const committed = cache.commit(build, key);
    expect(committed).toMatchObject({
      key,
      dir: join(cache.root, "environments", key),
      tree: join(cache.root, "environments", key, "tree"),
    });
    expect(existsSync(build)).toBe(false);
    expect(existsSync(join(committed.tree, "node_modules", "left-pad", "index.js"))).toBe(true);

    const found = cache.find(key);
    expect(found?.record.setup).toEqual(["npm ci", "npm run build"]);
    expect(found?.inUse).toBe(false);
    expect(cache.find(keyOf("another"))).toBeNull();
  });

  test("find touches last-used: the environment found becomes the most recently used", () => {
    const cache = makeCache();
    const old = cachedEnvironment(cache, "old", { lastUsed: daysAgo(3) });
    cachedEnvironment(cache, "new", { lastUsed: daysAgo(1) });
    expect(cache.list().map((environment) => environment.key)).toEqual([keyOf("new"), keyOf("old")]);

    const found = cache.find(old.key);
    expect(found!.lastUsedAt.getTime()).toBeGreaterThan(daysAgo(0.01).getTime());
    expect(cache.list().map((environment) => environment.key)).toEqual([keyOf("old"), keyOf("new")]);
  });

  test("evict removes the least recently used first, until the total size is within the limit", () => {
    const cache = makeCache(250);
    for (const [name, days] of [
      ["a", 4],
      ["b", 3],
      ["c", 2],
      ["d", 1],
    ] as const)
      cachedEnvironment(cache, name, { record: { sizeBytes: 100 }, lastUsed: daysAgo(days) });

    const first = cache.evict();
    expect(first.removed.map((environment) => environment.key)).toEqual([keyOf("a"), keyOf("b")]);
    expect(first.freedBytes).toBe(200);
    expect(cache.list().map((environment) => environment.key)).toEqual([keyOf("d"), keyOf("c")]);
    expect(existsSync(first.removed[0]!.dir)).toBe(false);
    // Within the limit now: nothing more goes.
    expect(cache.evict()).toEqual({ removed: [], freedBytes: 0 });
  });

  test("an environment in use survives evict and clear; once released, it goes", () => {
    const cache = makeCache(0);
    const used = cachedEnvironment(cache, "used", { lastUsed: daysAgo(5) });
    cachedEnvironment(cache, "idle", { lastUsed: daysAgo(1) });
    const release = cache.use(used.key);
    expect(cache.list().find((environment) => environment.key === used.key)?.inUse).toBe(true);

    expect(cache.evict().removed.map((environment) => environment.key)).toEqual([keyOf("idle")]);
    expect(cache.clear()).toEqual({ removed: 0, freedBytes: 0, skippedInUse: 1, downloadsRemoved: false });
    expect(cache.find(used.key)).not.toBeNull();

    release();
    release(); // twice is harmless
    expect(existsSync(join(cache.root, "in-use", used.key))).toBe(false);
    expect(cache.clear()).toEqual({ removed: 1, freedBytes: used.record.sizeBytes, skippedInUse: 0, downloadsRemoved: false });
    expect(cache.find(used.key)).toBeNull();
  });

  test("a use marker whose process is gone does not protect, and is removed", () => {
    const cache = makeCache(0);
    const environment = cachedEnvironment(cache, "crashed-user");
    const markers = join(cache.root, "in-use", environment.key);
    mkdirSync(markers, { recursive: true });
    writeFileSync(join(markers, `${deadPid()}-0123456789abcdef`), "");
    expect(cache.list()[0]?.inUse).toBe(false);

    expect(cache.evict().removed.map((removed) => removed.key)).toEqual([environment.key]);
    expect(existsSync(markers)).toBe(false);
  });

  test.each([
    ["no environment.json", (dir: string) => rmSync(join(dir, "environment.json"))],
    ["an environment.json that is not JSON", (dir: string) => writeFileSync(join(dir, "environment.json"), '{"version": 1, "key"')],
    [
      "an environment.json of another key",
      (dir: string) => writeFileSync(join(dir, "environment.json"), JSON.stringify(environmentRecord(keyOf("x")))),
    ],
    ["an environment.json that is not a record", (dir: string) => writeFileSync(join(dir, "environment.json"), '{"version": 1}')],
    ["no tree/", (dir: string) => rmSync(join(dir, "tree"), { recursive: true })],
  ])("find removes a directory with %s and returns null", (_, spoil) => {
    const cache = makeCache();
    const environment = cachedEnvironment(cache, "spoilt");
    spoil(environment.dir);
    expect(cache.find(environment.key)).toBeNull();
    expect(existsSync(environment.dir)).toBe(false);
  });

  test.each(["environment.json", "tree"])(
    "an environment without its %s, its key in use (every run marks it before it looks): retired, kept whole while in use, and the key builds again",
    (part) => {
      const cache = makeCache();
      const environment = cachedEnvironment(cache, `spoilt-${part}`);
      rmSync(join(environment.dir, part), { recursive: true });
      const release = cache.use(environment.key);
      expect(cache.find(environment.key)).toBeNull();
      expect(existsSync(environment.dir)).toBe(false);
      // A run that still has a view of it keeps what is left: removed once nobody uses the key.
      const [retired] = readdirSync(join(cache.root, "retired"));
      expect(retired?.startsWith(`${environment.key}.`)).toBe(true);
      expect(existsSync(join(cache.root, "retired", retired!, "index"))).toBe(true);
      const build = cache.startBuild();
      writeBuild(build, environmentRecord(environment.key));
      expect(cache.commit(build, environment.key).dir).toBe(environment.dir);
      expect(cache.find(environment.key)?.record.key).toBe(environment.key);
      release();
      expect(readdirSync(join(cache.root, "retired"))).toEqual([]);
    },
  );

  test("a link planted as an environment is removed, never followed: its target stays whole", () => {
    const cache = makeCache();
    const victim = join(tempDir("handoff-victim"), "precious");
    mkdirSync(join(victim, "tree"), { recursive: true });
    writeBuild(victim, environmentRecord(keyOf("linked")));
    mkdirSync(join(cache.root, "environments"), { recursive: true });
    symlinkSync(victim, join(cache.root, "environments", keyOf("linked")));

    expect(cache.list()).toEqual([]);
    expect(cache.find(keyOf("linked"))).toBeNull();
    expect(existsSync(join(cache.root, "environments", keyOf("linked")))).toBe(false);
    expect(existsSync(join(victim, "tree", "package.json"))).toBe(true);
  });

  test("an environments/ that is a link is not looked through: clear removes nothing behind it", () => {
    const cache = makeCache();
    const elsewhere = join(tempDir("handoff-victim"), "environments");
    mkdirSync(join(elsewhere, keyOf("far")), { recursive: true });
    writeBuild(join(elsewhere, keyOf("far")), environmentRecord(keyOf("far")));
    mkdirSync(cache.root, { recursive: true });
    symlinkSync(elsewhere, join(cache.root, "environments"));

    expect(cache.list()).toEqual([]);
    expect(cache.clear()).toEqual({ removed: 0, freedBytes: 0, skippedInUse: 0, downloadsRemoved: false });
    expect(existsSync(join(elsewhere, keyOf("far"), "tree", "package.json"))).toBe(true);
    expect(() => cache.startBuild()).not.toThrow();
    expect(() => cachedEnvironment(cache, "near")).toThrow(/is not a directory/);
  });

  test("two builds of one key: the second commit returns the first environment and its build directory is gone", () => {
    const cache = makeCache();
    const key = keyOf("raced");
    const winner = cache.startBuild();
    const loser = cache.startBuild();
    writeBuild(winner, environmentRecord(key, { builtBy: "winner" }));
    writeBuild(loser, environmentRecord(key, { builtBy: "loser" }));

    expect(cache.commit(winner, key).record.builtBy).toBe("winner");
    const second = cache.commit(loser, key);
    expect(second.record.builtBy).toBe("winner");
    expect(second.dir).toBe(join(cache.root, "environments", key));
    expect(existsSync(loser)).toBe(false);
    expect(readdirSync(join(cache.root, "building"))).toEqual([]);
  });

  test("a build that is not a complete environment is not committed, and is removed", () => {
    const cache = makeCache();
    const build = cache.startBuild();
    writeBuild(build, environmentRecord(keyOf("other")));
    expect(() => cache.commit(build, keyOf("mine"))).toThrow(/not a complete environment .*another key/);
    expect(existsSync(build)).toBe(false);
    expect(cache.find(keyOf("mine"))).toBeNull();
  });

  test("discard removes a build; commit and discard refuse a directory that is no build of this cache", () => {
    const cache = makeCache();
    const build = cache.startBuild();
    writeBuild(build, environmentRecord(keyOf("cancelled")));
    cache.discard(build);
    expect(existsSync(build)).toBe(false);

    const stranger = tempDir("handoff-not-a-build");
    expect(() => cache.discard(stranger)).toThrow(/not a build directory/);
    expect(() => cache.commit(stranger, keyOf("x"))).toThrow(/not a build directory/);
    expect(existsSync(stranger)).toBe(true);
  });

  test("evict and clear remove the build directories of processes that are gone, and keep a live one", () => {
    const cache = makeCache();
    const live = cache.startBuild();
    const stale = join(cache.root, "building", `${deadPid()}-0123456789abcdef`);
    mkdirSync(join(stale, "tree", "node_modules"), { recursive: true });
    const halfRemoved = join(cache.root, "removing", `${deadPid()}-fedcba9876543210`);
    mkdirSync(join(halfRemoved, "tree"), { recursive: true });

    cache.evict();
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(halfRemoved)).toBe(false);
    expect(existsSync(live)).toBe(true);

    const staleAgain = join(cache.root, "building", `${deadPid()}-0123456789abcdef`);
    mkdirSync(staleAgain);
    cache.clear();
    expect(existsSync(staleAgain)).toBe(false);
    expect(existsSync(live)).toBe(true);
  });

  test("clear removes the download caches too, unless keepDownloads", () => {
    const cache = makeCache();
    const downloads = cache.downloadsDir();
    expect(downloads).toBe(join(cache.root, "downloads"));
    expect(statSync(downloads).mode & 0o777).toBe(0o700);
    writeFileSync(join(downloads, "npm-tarball"), "x");
    const environment = cachedEnvironment(cache, "cleared", { record: { sizeBytes: 4096 } });

    expect(cache.clear({ keepDownloads: true })).toEqual({ removed: 1, freedBytes: 4096, skippedInUse: 0, downloadsRemoved: false });
    expect(existsSync(environment.dir)).toBe(false);
    expect(existsSync(join(downloads, "npm-tarball"))).toBe(true);
    expect(cache.clear().downloadsRemoved).toBe(true);
    expect(existsSync(downloads)).toBe(false);
  });

  test("clear removes the download caches of runs without the sandbox too (unsandboxed/downloads), unless keepDownloads", () => {
    const cache = makeCache();
    const theirs = new EnvironmentCache(
      join(cache.root, "unsandboxed", "123-0123456789abcdef"),
      0,
      join(cache.root, "unsandboxed", "downloads"),
    );
    writeFileSync(join(theirs.downloadsDir(), "npm-tarball"), "x");
    expect(cache.clear({ keepDownloads: true }).downloadsRemoved).toBe(false);
    expect(existsSync(join(cache.root, "unsandboxed", "downloads", "npm-tarball"))).toBe(true);
    expect(cache.clear().downloadsRemoved).toBe(true);
    expect(existsSync(join(cache.root, "unsandboxed", "downloads"))).toBe(false);
  });

  test("an empty or missing cache: nothing to list, evict or clear, and nothing is created", () => {
    const cache = makeCache(0);
    expect(cache.list()).toEqual([]);
    expect(cache.find(keyOf("none"))).toBeNull();
    expect(cache.evict()).toEqual({ removed: [], freedBytes: 0 });
    expect(cache.clear()).toEqual({ removed: 0, freedBytes: 0, skippedInUse: 0, downloadsRemoved: false });
    expect(existsSync(cache.root)).toBe(false);
  });

  test("a key that is not 64 lowercase hex digits is refused before any path is made of it", () => {
    const cache = makeCache();
    for (const key of ["../../etc", "ABC", `${keyOf("a")}/..`]) {
      expect(() => cache.find(key)).toThrow(/not an environment key/);
      expect(() => cache.use(key)).toThrow(/not an environment key/);
    }
  });

  test("lastUsedAt is the mtime of last-used", () => {
    const cache = makeCache();
    const environment = cachedEnvironment(cache, "dated");
    const when = new Date("2026-01-02T03:04:05.000Z");
    setLastUsed(environment, when);
    expect(cache.list()[0]?.lastUsedAt.toISOString()).toBe(when.toISOString());
  });
});

describe("an environment proves it is the one that was built (checkEnvironment)", () => {
  /** An environment committed as a build commits it: its fingerprint in its record. */
  function sealedEnvironment(cache: EnvironmentCache, name: string) {
    const key = keyOf(name);
    const build = cache.startBuild();
    writeBuild(build, environmentRecord(key));
    mkdirSync(join(build, "home"));
    // With find's digest and the newest ctime, as the build keeps them: a check then takes its stamps from the record.
    const record = environmentRecord(key, fingerprintEnvironment(build));
    expect(record.findDigest).toMatch(/^[0-9a-f]{64}$/);
    writeFileSync(join(build, "environment.json"), JSON.stringify(record));
    return cache.commit(build, key);
  }

  test("sound as built; a file written after the commit, its fingerprint recomputed into environment.json, is not", () => {
    const cache = makeCache();
    const trustedAfter = cache.trustedAfter();
    const environment = sealedEnvironment(cache, "sealed");
    const checked = checkEnvironment(environment.dir, environment.record, { trustedAfter });
    expect(checked.kind).toBe("sound");
    writeFileSync(join(environment.tree, "node_modules", "left-pad", "index.js"), "module.exports = () => 'forged';\n");
    // Forged whole: fingerprint, find's digest and the newest ctime all of the written tree.
    const forged = environmentRecord(environment.key, fingerprintEnvironment(environment.dir));
    writeFileSync(join(environment.dir, "environment.json"), JSON.stringify(forged));
    expect(checkEnvironment(environment.dir, forged, { trustedAfter })).toMatchObject({
      kind: "unsound",
      why: expect.stringContaining("modified after it was built"),
    });
    // The run that took it holds its seal: the same write shows against it too.
    if (checked.kind === "sound") expect(checkEnvironment(environment.dir, forged, { seal: checked.seal }).kind).toBe("unsound");
  });

  test("a file of tree/ rewritten in place (same size, record untouched) or only chmodded after the commit: not sound", () => {
    const cache = makeCache();
    const trustedAfter = cache.trustedAfter();
    for (const change of ["rewrite", "chmod"] as const) {
      const environment = sealedEnvironment(cache, change);
      expect(checkEnvironment(environment.dir, environment.record, { trustedAfter }).kind).toBe("sound");
      const file = join(environment.tree, "node_modules", "left-pad", "index.js");
      if (change === "rewrite") writeFileSync(file, readFileSync(file, "utf8").replace(/.$/s, " "));
      else chmodSync(file, 0o600);
      expect(checkEnvironment(environment.dir, environment.record, { trustedAfter })).toMatchObject({
        kind: "unsound",
        why: expect.stringContaining("modified after it was built"),
      });
    }
  });

  test("no environment committed before a run without the sandbox ended is trusted, nor any while one is in progress; one committed after is", () => {
    const cache = makeCache();
    cache.trustedAfter();
    const before = sealedEnvironment(cache, "before");
    const end = cache.markExposure();
    expect(cache.trustedAfter()).toBeNull();
    expect(checkEnvironment(before.dir, before.record, { trustedAfter: cache.trustedAfter() })).toMatchObject({
      kind: "unsound",
      why: expect.stringContaining("while a run without the sandbox is in progress"),
    });
    end();
    expect(checkEnvironment(before.dir, before.record, { trustedAfter: cache.trustedAfter() })).toMatchObject({
      kind: "unsound",
      why: expect.stringContaining("committed before a run without the sandbox ended"),
    });
    const after = sealedEnvironment(cache, "after");
    expect(checkEnvironment(after.dir, after.record, { trustedAfter: cache.trustedAfter() }).kind).toBe("sound");
  });

  test("an exposure whose run is gone (killed) counts as ended now; the exposures directory removed or replaced by a link dates it now too", () => {
    const cache = makeCache();
    cache.trustedAfter();
    const environment = sealedEnvironment(cache, "left");
    writeFileSync(join(cache.root, "exposures", `${deadPid()}-0123456789abcdef`), "");
    expect(checkEnvironment(environment.dir, environment.record, { trustedAfter: cache.trustedAfter() }).kind).toBe("unsound");
    expect(readdirSync(join(cache.root, "exposures"))).toEqual([]);
    const fresh = sealedEnvironment(cache, "fresh");
    expect(checkEnvironment(fresh.dir, fresh.record, { trustedAfter: cache.trustedAfter() }).kind).toBe("sound");
    rmSync(join(cache.root, "exposures"), { recursive: true });
    symlinkSync(tempDir("old"), join(cache.root, "exposures"));
    expect(checkEnvironment(fresh.dir, fresh.record, { trustedAfter: cache.trustedAfter() }).kind).toBe("unsound");
  });
});
