import type { Stats } from "node:fs";
import type { z } from "zod";
import { boundedBytes, readNoFollow } from "../lib/safe-read.js";

export type ArtifactRead =
  | { readonly kind: "bytes"; readonly bytes: Buffer }
  | { readonly kind: "missing" }
  | { readonly kind: "untrusted"; readonly why: string }
  | { readonly kind: "too_large"; readonly size: number }
  | { readonly kind: "unreadable"; readonly message: string };

/**
 * Reads a run artifact only if it is what handoff writes: a regular file (never through a link, never a FIFO),
 * owned by the current user, with one name, writable by no one else. Anything else may have been planted by an
 * agent without a sandbox, or rewritten by another user, so `show`, `apply` and the crash sweep do not trust it.
 * The checks and the read use one descriptor: a file swapped after the checks is not read.
 */
export function readArtifact(path: string, maxBytes: number): ArtifactRead {
  return readArtifactWithStats(path, maxBytes).read;
}

/** readArtifact, and the stats (from its descriptor) of the file it read: null unless it read bytes. */
export function readArtifactWithStats(path: string, maxBytes: number): { readonly read: ArtifactRead; readonly stats: Stats | null } {
  let stats: Stats | null = null;
  const read = readNoFollow<ArtifactRead>(
    path,
    (code) => {
      if (code === "ENOENT") return { kind: "missing" };
      if (code === "ELOOP") return { kind: "untrusted", why: "a symbolic link" };
      if (code === "ENXIO") return { kind: "untrusted", why: "not a regular file" };
      return { kind: "unreadable", message: code };
    },
    (fd, fileStats) => {
      const why = untrustedBecause(fileStats);
      if (why) return { kind: "untrusted", why };
      stats = fileStats;
      return boundedBytes(fd, fileStats.size, maxBytes);
    },
  );
  return { read, stats: read.kind === "bytes" ? stats : null };
}

/** A JSON artifact read as readArtifact reads one and parsed with its schema; null when missing, untrusted, too large or invalid. */
export function readArtifactJson<T>(path: string, schema: z.ZodType<T>, maxBytes: number): T | null {
  return parseArtifactJson(readArtifact(path, maxBytes), schema);
}

/** An artifact read (readArtifact, readRunFile) parsed with its schema; null unless it was read and is valid. */
export function parseArtifactJson<T>(read: ArtifactRead, schema: z.ZodType<T>): T | null {
  if (read.kind !== "bytes") return null;
  try {
    const parsed = schema.safeParse(JSON.parse(read.bytes.toString("utf8")));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Why a file is not one handoff wrote (a regular file of this user, one name, writable by no one else), or null. */
export function untrustedBecause(stats: { isFile(): boolean; uid: number; nlink: number; mode: number }): string | null {
  if (!stats.isFile()) return "not a regular file";
  const uid = process.getuid?.();
  if (uid !== undefined && stats.uid !== uid) return `owned by uid ${stats.uid}, not by you (uid ${uid})`;
  if (stats.nlink > 1) return `a file with ${stats.nlink} names (hard links)`;
  if ((stats.mode & 0o022) !== 0) return `writable by others (mode ${(stats.mode & 0o777).toString(8).padStart(4, "0")})`;
  return null;
}
