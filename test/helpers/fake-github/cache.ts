import { randomUUID } from "node:crypto";
import type { Route, RouteReply } from "./server.js";

/**
 * The Actions cache service (v2) on the stand-in, as @actions/cache 6 uses it with ACTIONS_CACHE_SERVICE_V2 set: the
 * results service's twirp JSON API (`/twirp/github.actions.results.api.v1.CacheService/<method>`) and the signed blob
 * URLs it hands out, where the archive is PUT as an Azure block blob (one PUT, or blocks and a block list) and read
 * back with a HEAD and ranged GETs. Entries outlive a workflow run, as GitHub's do: a later run restores them.
 */

const TWIRP = "/twirp/github.actions.results.api.v1.CacheService/";
const BLOBS = "/cache-blobs/";

export interface StoredCacheEntry {
  readonly id: number;
  readonly key: string;
  readonly version: string;
  /** The archive as committed; a test may change it (storage tampering). */
  archive: Buffer;
  finalized: boolean;
  readonly createdAt: number;
}

export interface FakeCacheService {
  readonly route: Route;
  readonly entries: StoredCacheEntry[];
}

const twirpError = (status: number, code: string, msg: string): RouteReply => ({ status, json: { code, msg } });

export function fakeCacheService(): FakeCacheService {
  const entries: StoredCacheEntry[] = [];
  const blocks = new Map<number, Map<string, Buffer>>();
  let clock = 0;

  const route: Route = (request, url, server) => {
    if (url.pathname.startsWith(TWIRP) && request.method === "POST") {
      if (!/^Bearer \S+/.test(request.headers.authorization ?? "")) return twirpError(401, "unauthenticated", "no runtime token");
      const body = (request.json ?? {}) as Record<string, unknown>;
      const key = String(body.key ?? "");
      const version = String(body.version ?? "");
      const signed = (entry: StoredCacheEntry) => `${server.url}${BLOBS}${entry.id}?sig=fake-signature&se=2099-01-01`;
      switch (url.pathname.slice(TWIRP.length)) {
        case "CreateCacheEntry": {
          // Entries are immutable: a key that exists (finalized or being written) cannot be reserved again.
          if (entries.some((entry) => entry.key === key && entry.version === version))
            return { status: 200, json: { ok: false, signed_upload_url: "", message: "cache entry already exists" } };
          const entry: StoredCacheEntry = {
            id: entries.length + 1,
            key,
            version,
            archive: Buffer.alloc(0),
            finalized: false,
            createdAt: ++clock,
          };
          entries.push(entry);
          return { status: 200, json: { ok: true, signed_upload_url: signed(entry) } };
        }
        case "FinalizeCacheEntryUpload": {
          const entry = entries.find((e) => e.key === key && e.version === version && !e.finalized);
          if (!entry) return { status: 200, json: { ok: false, entry_id: "0", message: "no entry to finalize" } };
          if (String(body.size_bytes) !== String(entry.archive.length))
            return twirpError(400, "invalid_argument", `size ${body.size_bytes} is not the ${entry.archive.length} bytes uploaded`);
          entry.finalized = true;
          return { status: 200, json: { ok: true, entry_id: String(entry.id) } };
        }
        case "GetCacheEntryDownloadURL": {
          const usable = entries.filter((e) => e.finalized && e.version === version);
          const exact = usable.find((e) => e.key === key);
          const restoreKeys = Array.isArray(body.restore_keys) ? body.restore_keys.map(String) : [];
          // GitHub's order: the exact key, then each restore key as a prefix, the newest entry first.
          const found =
            exact ??
            restoreKeys
              .map((prefix) => usable.filter((e) => e.key.startsWith(prefix)).sort((a, b) => b.createdAt - a.createdAt)[0])
              .find((e) => e !== undefined);
          if (!found) return { status: 200, json: { ok: false, signed_download_url: "", matched_key: "" } };
          return { status: 200, json: { ok: true, signed_download_url: signed(found), matched_key: found.key } };
        }
        default:
          return twirpError(404, "bad_route", "no such method");
      }
    }
    if (!url.pathname.startsWith(BLOBS)) return undefined;
    const entry = entries.find((e) => e.id === Number(url.pathname.slice(BLOBS.length)));
    if (!entry || url.searchParams.get("sig") !== "fake-signature") return { status: 403, body: "AuthenticationFailed" };
    const headers = {
      etag: `"0x${entry.id}"`,
      "last-modified": new Date().toUTCString(),
      "x-ms-request-id": randomUUID(),
      "x-ms-version": "2025-01-05",
    };
    if (request.method === "HEAD" || request.method === "GET") {
      if (!entry.finalized) return { status: 404, body: "BlobNotFound" };
      const range = /^bytes=(\d+)-(\d*)$/.exec(String(request.headers["x-ms-range"] ?? request.headers.range ?? ""));
      const blobHeaders = {
        ...headers,
        "x-ms-blob-type": "BlockBlob",
        "content-type": "application/octet-stream",
        "accept-ranges": "bytes",
      };
      if (request.method === "HEAD")
        return { status: 200, body: "", headers: { ...blobHeaders, "content-length": String(entry.archive.length) } };
      if (!range) return { status: 200, body: entry.archive, headers: blobHeaders };
      const start = Number(range[1]);
      const end = range[2] ? Math.min(Number(range[2]), entry.archive.length - 1) : entry.archive.length - 1;
      return {
        status: 206,
        body: entry.archive.subarray(start, end + 1),
        headers: { ...blobHeaders, "content-range": `bytes ${start}-${end}/${entry.archive.length}` },
      };
    }
    if (request.method !== "PUT" || entry.finalized) return { status: 409, body: "" };
    const comp = url.searchParams.get("comp");
    if (comp === "block") {
      if (!blocks.has(entry.id)) blocks.set(entry.id, new Map());
      blocks.get(entry.id)!.set(url.searchParams.get("blockid") ?? "", request.body);
      return { status: 201, body: "", headers };
    }
    if (comp === "blocklist") {
      const staged = blocks.get(entry.id) ?? new Map<string, Buffer>();
      const ids = [...request.body.toString("utf8").matchAll(/<(?:Latest|Uncommitted|Committed)>([^<]*)<\//g)].map((m) => m[1]!);
      if (ids.some((id) => !staged.has(id))) return { status: 400, body: "InvalidBlockList" };
      entry.archive = Buffer.concat(ids.map((id) => staged.get(id)!));
      return { status: 201, body: "", headers };
    }
    entry.archive = request.body;
    return { status: 201, body: "", headers };
  };
  return { route, entries };
}
