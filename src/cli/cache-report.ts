import { basename } from "node:path";
import type { EnvironmentCache } from "../environment/cache-store.js";
import { escapeControls } from "../vocabulary/display.js";

/** One environment as `handoff cache list --json` prints it. */
export interface CacheListEntry {
  readonly key: string;
  readonly repo: string;
  readonly baseCommit: string;
  readonly setup: readonly string[];
  readonly sizeBytes: number;
  readonly entries: number;
  readonly createdAt: string;
  readonly lastUsedAt: string;
  readonly inUse: boolean;
  readonly setupChanges: readonly string[];
}

/** What `handoff cache list` reports. */
export interface CacheListing {
  readonly cacheDir: string;
  readonly limitBytes: number;
  readonly totalBytes: number;
  readonly environments: readonly CacheListEntry[];
}

/** What `handoff cache clear` did. */
export interface CacheClearing {
  readonly cacheDir: string;
  readonly removed: number;
  readonly freedBytes: number;
  readonly skippedInUse: number;
  readonly downloadsRemoved: boolean;
}

export function listCache(cache: EnvironmentCache): CacheListing {
  const environments = cache.list().map(
    ({ key, record, lastUsedAt, inUse }): CacheListEntry => ({
      key,
      repo: record.repo,
      baseCommit: record.baseCommit,
      setup: record.setup,
      sizeBytes: record.sizeBytes,
      entries: record.entries,
      createdAt: record.createdAt,
      lastUsedAt: lastUsedAt.toISOString(),
      inUse,
      setupChanges: record.setupChanges,
    }),
  );
  const totalBytes = environments.reduce((sum, environment) => sum + environment.sizeBytes, 0);
  return { cacheDir: cache.root, limitBytes: cache.limitBytes, totalBytes, environments };
}

export function clearCache(cache: EnvironmentCache, keepDownloads: boolean): CacheClearing {
  return { cacheDir: cache.root, ...cache.clear({ keepDownloads }) };
}

/** A header, one line per environment (most recently used first), then the total against the limit. */
export function renderCacheListing(listing: CacheListing): string {
  const repoWidth = Math.max("REPOSITORY".length, ...listing.environments.map((environment) => shownRepo(environment.repo).length));
  const row = (cells: readonly [string, string, string, string, string, string, string]) =>
    [
      cells[0].padEnd(12),
      cells[1].padEnd(repoWidth),
      cells[2].padEnd(12),
      cells[3].padStart(8),
      cells[4].padEnd(17),
      cells[5].padEnd(6),
      cells[6],
    ].join("  ");
  const lines = listing.environments.map((environment) =>
    row([
      environment.key.slice(0, 12),
      shownRepo(environment.repo),
      escapeControls(environment.baseCommit.slice(0, 12)),
      humanBytes(environment.sizeBytes),
      `${environment.lastUsedAt.slice(0, 16)}Z`,
      environment.inUse ? "in use" : "",
      environment.setup.length > 0 ? environment.setup.map(escapeControls).join("; ") : "(no setup)",
    ]),
  );
  if (lines.length > 0) lines.unshift(row(["KEY", "REPOSITORY", "BASE", "SIZE", "LAST USED", "IN USE", "SETUP"]));
  const count = `${listing.environments.length} environment${listing.environments.length === 1 ? "" : "s"}`;
  lines.push(
    `total: ${count}, ${humanBytes(listing.totalBytes)} of the ${humanBytes(listing.limitBytes)} limit, in ${escapeControls(listing.cacheDir)}`,
  );
  return `${lines.join("\n")}\n`;
}

export function renderCacheClearing(clearing: CacheClearing): string {
  const count = `${clearing.removed} environment${clearing.removed === 1 ? "" : "s"}`;
  const downloads = clearing.downloadsRemoved ? " and the download caches" : "";
  const skipped = clearing.skippedInUse > 0 ? `; ${clearing.skippedInUse} in use by a running handoff, left in place` : "";
  return `removed ${count} (${humanBytes(clearing.freedBytes)})${downloads} from ${escapeControls(clearing.cacheDir)}${skipped}\n`;
}

function shownRepo(repo: string): string {
  return escapeControls(basename(repo) || repo);
}

/** Bytes as people read them, in powers of 1024 like HANDOFF_CACHE_LIMIT: `812 B`, `4.0 KiB`, `312 MiB`, `1.5 GiB`. */
export function humanBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${bytes} B`;
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}
