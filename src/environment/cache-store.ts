// TEMPORARY stand-in for the cache store (the helper's branch replaces this file).
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { EnvironmentRecord } from "./record.js";

export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HANDOFF_CACHE_DIR) return resolve(env.HANDOFF_CACHE_DIR);
  const xdg = env.XDG_CACHE_HOME;
  return join(xdg && isAbsolute(xdg) ? xdg : join(homedir(), ".cache"), "handoff");
}

export function cacheLimitBytes(): number {
  return 10 * 1024 ** 3;
}

export interface CachedEnvironment {
  readonly key: string;
  readonly dir: string;
  readonly tree: string;
  readonly record: EnvironmentRecord;
  readonly lastUsedAt: Date;
  readonly inUse: boolean;
}

export class EnvironmentCache {
  readonly root: string;
  constructor(root: string, _limitBytes?: number) {
    this.root = root;
  }
  find(key: string): CachedEnvironment | null {
    const dir = join(this.root, "environments", key);
    if (!existsSync(dir)) return null;
    try {
      const record = EnvironmentRecord.parse(JSON.parse(readFileSync(join(dir, "environment.json"), "utf8")));
      const now = new Date();
      writeFileSync(join(dir, "last-used"), "");
      utimesSync(join(dir, "last-used"), now, now);
      return { key, dir, tree: join(dir, "tree"), record, lastUsedAt: now, inUse: false };
    } catch {
      rmSync(dir, { recursive: true, force: true });
      return null;
    }
  }
  startBuild(): string {
    mkdirSync(join(this.root, "building"), { recursive: true, mode: 0o700 });
    return mkdtempSync(join(this.root, "building", `${process.pid}-`));
  }
  commit(buildDir: string, key: string): CachedEnvironment {
    mkdirSync(join(this.root, "environments"), { recursive: true, mode: 0o700 });
    const dir = join(this.root, "environments", key);
    try {
      renameSync(buildDir, dir);
    } catch {
      rmSync(buildDir, { recursive: true, force: true });
    }
    return this.find(key)!;
  }
  discard(buildDir: string): void {
    rmSync(buildDir, { recursive: true, force: true });
  }
  use(_key: string): () => void {
    return () => {};
  }
  evict(): { readonly removed: readonly CachedEnvironment[]; readonly freedBytes: number } {
    return { removed: [], freedBytes: 0 };
  }
  list(): CachedEnvironment[] {
    const dir = join(this.root, "environments");
    return existsSync(dir) ? readdirSync(dir).flatMap((key) => this.find(key) ?? []) : [];
  }
  downloadsDir(): string {
    const dir = join(this.root, "downloads");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    statSync(dir);
    return dir;
  }
}
