import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { humanBytes } from "../src/cli/cache-report.js";
import { EnvironmentCache } from "../src/environment/cache-store.js";
import { type CliOutcome, expectUsageError, runCli } from "./helpers/cli.js";
import { cachedEnvironment, keyOf } from "./helpers/environments.js";
import { tempDir } from "./helpers/repo.js";

/**
 * Issue 15: `handoff cache list|clear` over a cache built by hand (valid environment.json records, a tree/ with a
 * few files), found through $HANDOFF_CACHE_DIR. An environment this test process marks in use is a live one.
 */

const MIB = 1024 * 1024;

function makeCache(): EnvironmentCache {
  return new EnvironmentCache(join(tempDir("handoff-cache-cli"), "cache"));
}

async function cacheCli(cache: EnvironmentCache, args: readonly string[], env: Record<string, string> = {}): Promise<CliOutcome> {
  return await runCli(["cache", ...args], { env: { HANDOFF_CACHE_DIR: cache.root, ...env } });
}

/** Two environments: `camelcase` (in use, 312 MiB, used last) and `picomatch` (1.5 GiB, two setup commands). */
function twoEnvironments(cache: EnvironmentCache) {
  const picomatch = cachedEnvironment(cache, "picomatch", {
    record: {
      repo: "/src/picomatch",
      baseCommit: "aaaabbbbccccddddeeeeffff0000111122223333",
      setup: ["npm ci", "npm run build"],
      sizeBytes: 1.5 * 1024 * MIB,
      entries: 41_000,
      setupChanges: ["package-lock.json"],
    },
    lastUsed: new Date("2026-11-30T08:15:30.000Z"),
  });
  const camelcase = cachedEnvironment(cache, "camelcase", {
    record: { repo: "/src/camelcase", baseCommit: "1234567890ab1234567890ab1234567890ab1234", sizeBytes: 312 * MIB, entries: 9_000 },
    lastUsed: new Date("2026-12-01T09:30:59.000Z"),
  });
  return { picomatch, camelcase };
}

describe("handoff cache list", () => {
  test("a header, one line per environment, most recently used first, then the total against the limit", async () => {
    const cache = makeCache();
    const { camelcase, picomatch } = twoEnvironments(cache);
    const release = cache.use(camelcase.key);
    const outcome = await cacheCli(cache, ["list"], { HANDOFF_CACHE_LIMIT: "20G" });
    release();
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stderr).toBe("");
    expect(outcome.stdout).toBe(
      [
        "KEY           REPOSITORY  BASE              SIZE  LAST USED          IN USE  SETUP",
        `${camelcase.key.slice(0, 12)}  camelcase   1234567890ab   312 MiB  2026-12-01T09:30Z  in use  npm ci`,
        `${picomatch.key.slice(0, 12)}  picomatch   aaaabbbbcccc   1.5 GiB  2026-11-30T08:15Z          npm ci; npm run build`,
        `total: 2 environments, 1.8 GiB of the 20 GiB limit, in ${cache.root}`,
        "",
      ].join("\n"),
    );
  });

  test("--json prints the cache directory, the limit, the total and every environment, on stdout alone", async () => {
    const cache = makeCache();
    const { camelcase, picomatch } = twoEnvironments(cache);
    const outcome = await cacheCli(cache, ["list", "--json"]);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(JSON.parse(outcome.stdout)).toEqual({
      cacheDir: cache.root,
      limitBytes: 10 * 1024 ** 3,
      totalBytes: 1.5 * 1024 * MIB + 312 * MIB,
      environments: [
        {
          key: camelcase.key,
          repo: "/src/camelcase",
          baseCommit: "1234567890ab1234567890ab1234567890ab1234",
          setup: ["npm ci"],
          sizeBytes: 312 * MIB,
          entries: 9_000,
          createdAt: "2026-11-30T10:00:00.000Z",
          lastUsedAt: "2026-12-01T09:30:59.000Z",
          inUse: false,
          setupChanges: [],
        },
        {
          key: picomatch.key,
          repo: "/src/picomatch",
          baseCommit: "aaaabbbbccccddddeeeeffff0000111122223333",
          setup: ["npm ci", "npm run build"],
          sizeBytes: 1.5 * 1024 * MIB,
          entries: 41_000,
          createdAt: "2026-11-30T10:00:00.000Z",
          lastUsedAt: "2026-11-30T08:15:30.000Z",
          inUse: false,
          setupChanges: ["package-lock.json"],
        },
      ],
    });
  });

  test("an empty or missing cache is no error, and listing it creates nothing", async () => {
    const cache = makeCache();
    const outcome = await cacheCli(cache, ["list"], { HANDOFF_CACHE_LIMIT: "500M" });
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stdout).toBe(`total: 0 environments, 0 B of the 500 MiB limit, in ${cache.root}\n`);
    expect(existsSync(cache.root)).toBe(false);
  });

  test("a setup command or repository name with control characters is shown escaped, never obeyed", async () => {
    const cache = makeCache();
    cachedEnvironment(cache, "hostile", { record: { repo: "/src/\u001b[2Jrepo", setup: ["echo\nrm -rf /"] } });
    const outcome = await cacheCli(cache, ["list"]);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stdout).not.toContain("\u001b");
    expect(outcome.stdout.split("\n")).toHaveLength(4); // the header, the environment, the total, and the end of the last line
  });
});

describe("handoff cache clear", () => {
  test("removes every environment not in use and the download caches, and says what it removed", async () => {
    const cache = makeCache();
    const { camelcase, picomatch } = twoEnvironments(cache);
    writeFileSync(join(cache.downloadsDir(), "npm-cache-entry"), "tarball");
    const release = cache.use(camelcase.key);
    const outcome = await cacheCli(cache, ["clear"]);
    release();
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stdout).toBe(
      `removed 1 environment (1.5 GiB) and the download caches from ${cache.root}; 1 in use by a running handoff, left in place\n`,
    );
    expect(existsSync(picomatch.dir)).toBe(false);
    expect(existsSync(camelcase.dir)).toBe(true);
    expect(existsSync(join(cache.root, "downloads"))).toBe(false);
  });

  test("--keep-downloads keeps the download caches; --json says what was removed", async () => {
    const cache = makeCache();
    twoEnvironments(cache);
    writeFileSync(join(cache.downloadsDir(), "npm-cache-entry"), "tarball");
    const outcome = await cacheCli(cache, ["clear", "--keep-downloads", "--json"]);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(JSON.parse(outcome.stdout)).toEqual({
      cacheDir: cache.root,
      removed: 2,
      freedBytes: 1.5 * 1024 * MIB + 312 * MIB,
      skippedInUse: 0,
      downloadsRemoved: false,
    });
    expect(existsSync(join(cache.root, "downloads", "npm-cache-entry"))).toBe(true);
    expect(cache.list()).toEqual([]);
  });

  test("an empty or missing cache is no error", async () => {
    const cache = makeCache();
    const outcome = await cacheCli(cache, ["clear"]);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stdout).toBe(`removed 0 environments (0 B) from ${cache.root}\n`);
  });
});

describe("handoff cache: usage errors exit 2 with one line", () => {
  test.each([
    [[], /usage: handoff cache list/],
    [["prune"], /unknown cache subcommand 'prune'/],
    [["list", "extra"], /usage: handoff cache list/],
    [["list", "--all"], /unknown option '--all' for 'handoff cache'/],
    [["list", "--keep-downloads"], /--keep-downloads is an option of 'handoff cache clear'/],
  ])("handoff cache %j", async (args, says) => {
    expectUsageError(await cacheCli(makeCache(), args), says);
  });

  test("a HANDOFF_CACHE_LIMIT that is no size names the variable, and nothing is removed", async () => {
    const cache = makeCache();
    const environment = cachedEnvironment(cache, "kept");
    const outcome = await cacheCli(cache, ["clear"], { HANDOFF_CACHE_LIMIT: "ten gigs" });
    expectUsageError(outcome, /^handoff: HANDOFF_CACHE_LIMIT must be a size such as 20G.*not 'ten gigs'\n$/);
    expect(cache.find(keyOf("kept"))?.dir).toBe(environment.dir);
  });
});

test("humanBytes: powers of 1024, one decimal under ten", () => {
  expect([0, 812, 4096, 312 * MIB, 1.5 * 1024 * MIB, 10 * 1024 ** 3, 3 * 1024 ** 4].map(humanBytes)).toEqual([
    "0 B",
    "812 B",
    "4.0 KiB",
    "312 MiB",
    "1.5 GiB",
    "10 GiB",
    "3.0 TiB",
  ]);
});
