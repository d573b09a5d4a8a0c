import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { lutimesSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CachedEnvironment, EnvironmentCache } from "../../src/environment/cache-store.js";
import type { EnvironmentRecord } from "../../src/environment/record.js";

/** A 64-hex environment key made from a short name, so a test can say which environment it means. */
export function keyOf(name: string): string {
  return createHash("sha256").update(name).digest("hex");
}

/** A valid environment.json for `key`, as a build writes it; `fields` overrides any of it. */
export function environmentRecord(key: string, fields: Partial<EnvironmentRecord> = {}): EnvironmentRecord {
  return {
    version: 1,
    key,
    repo: "/src/project",
    baseCommit: "0123456789abcdef0123456789abcdef01234567",
    setup: ["npm ci"],
    inputs: [{ path: "package-lock.json", oid: "89abcdef0123456789abcdef0123456789abcdef" }],
    createdAt: "2026-11-30T10:00:00.000Z",
    builtBy: "20261130T100000Z-abc123",
    sizeBytes: 1024 * 1024,
    entries: 3,
    fingerprint: "f".repeat(64),
    outputs: ["node_modules/"],
    setupChanges: [],
    setupMs: 12_000,
    unignoredOutputs: [],
    pathBound: [],
    ...fields,
  };
}

/** A finished build by hand, as the environment builder leaves one: tree/ with a few files, index, environment.json. */
export function writeBuild(dir: string, record: EnvironmentRecord): void {
  mkdirSync(join(dir, "tree", "node_modules", "left-pad"), { recursive: true });
  writeFileSync(join(dir, "tree", "package.json"), '{"name":"project"}\n');
  writeFileSync(join(dir, "tree", "node_modules", "left-pad", "index.js"), "module.exports = () => {};\n");
  writeFileSync(join(dir, "index"), "DIRC");
  writeFileSync(join(dir, "environment.json"), JSON.stringify(record));
}

/** Builds and commits an environment `name` in `cache`, last used at `lastUsed` (when given). */
export function cachedEnvironment(
  cache: EnvironmentCache,
  name: string,
  options: { record?: Partial<EnvironmentRecord>; lastUsed?: Date } = {},
): CachedEnvironment {
  const key = keyOf(name);
  const build = cache.startBuild();
  writeBuild(build, environmentRecord(key, options.record));
  const environment = cache.commit(build, key);
  if (options.lastUsed) setLastUsed(environment, options.lastUsed);
  return environment;
}

export function setLastUsed(environment: CachedEnvironment, time: Date): void {
  lutimesSync(join(environment.dir, "last-used"), time, time);
}

/** The pid of a process that has ended and been reaped: a pid nobody holds (the stand-in for a crashed run). */
export function deadPid(): number {
  const child = spawnSync("true");
  if (child.pid === undefined) throw new Error("could not start `true`");
  return child.pid;
}
