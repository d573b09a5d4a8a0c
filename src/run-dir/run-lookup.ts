import type { z } from "zod";
import { lstatSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { type ArtifactRead, parseArtifactJson, readArtifact, readArtifactJson } from "./artifact-file.js";
import { RunNotFoundError, UntrustedArtifactError } from "../lib/errors.js";
import { RunResult } from "../verdict/result.js";
import { lexists } from "../lib/paths.js";
import { RequestJson } from "./artifacts/request.js";
import { defaultRunsDir } from "./default-places.js";

export interface LoadedRun {
  readonly dir: string;
  /** How the user named the run, for messages (the directory when absent). */
  readonly ref?: string;
  readonly result: RunResult;
  /** A candidate of a candidates run (`apply --candidate k`, or its winner): which one, of which run. */
  readonly candidate?: { readonly k: number; readonly of: string };
}

/** A run as messages name it: `run <id>`, or `candidate <k> (run <id>)` for a candidate, whose own id is its number. */
export function runLabel(run: LoadedRun): string {
  return run.candidate ? `candidate ${run.candidate.k} (run ${run.candidate.of})` : `run ${run.result.runId}`;
}

/** The largest result.json `show`, `apply` and `list` read. */
export const MAX_RESULT_BYTES = 16 * 1024 * 1024;

/** A run named by id (looked up in the runs directory) or by its directory path. */
export function loadRun(ref: string, runsDir: string = defaultRunsDir()): LoadedRun {
  const candidates = placesNamed(ref, runsDir);
  const dir = candidates.find((path) => lexists(join(path, "result.json")) && statSync(path).isDirectory());
  if (!dir) {
    const exists = candidates.find((path) => lexists(path));
    throw new RunNotFoundError(ref, exists ? "it has no result.json (still running, or crashed)" : `looked in ${candidates.join(" and ")}`);
  }
  // Never through a link, never a file another user could have written: `apply` acts on what this says.
  const read = readArtifact(join(dir, "result.json"), MAX_RESULT_BYTES);
  switch (read.kind) {
    case "untrusted":
      throw new UntrustedArtifactError(ref, "result.json", read.why);
    case "missing":
      throw new RunNotFoundError(ref, "it has no result.json (still running, or crashed)");
    case "too_large":
      throw new RunNotFoundError(ref, `result.json is ${read.size} bytes, more than a result can be`);
    case "unreadable":
      throw new RunNotFoundError(ref, `result.json cannot be read (${read.message})`);
    case "bytes":
      break;
  }
  let json: unknown;
  try {
    json = JSON.parse(read.bytes.toString("utf8"));
  } catch (error) {
    throw new RunNotFoundError(ref, `result.json is not valid JSON (${(error as Error).message})`);
  }
  const parsed = RunResult.safeParse(json);
  if (!parsed.success) throw new RunNotFoundError(ref, `result.json does not match schema version 1 (${parsed.error.issues[0]?.message})`);
  return { dir, ref, result: parsed.data };
}

/** Where a run (or batch) named `ref` may be: a path as given, else the id in the runs directory, then as a path. */
export function placesNamed(ref: string, runsDir: string): string[] {
  return ref.includes("/") || ref.startsWith(".") ? [resolve(ref)] : [join(runsDir, ref), resolve(ref)];
}

/**
 * changes.patch of a loaded run, read only if it is a regular file of this user (see readArtifact); an empty
 * buffer when there is none.
 */
export function loadPatch(run: LoadedRun): Buffer {
  const read = readArtifact(join(run.dir, "changes.patch"), 1024 * 1024 * 1024);
  switch (read.kind) {
    case "bytes":
      return read.bytes;
    case "missing":
      return Buffer.alloc(0);
    case "untrusted":
      throw new UntrustedArtifactError(run.ref ?? run.dir, "changes.patch", read.why);
    case "too_large":
      throw new RunNotFoundError(run.ref ?? run.dir, `changes.patch is ${read.size} bytes, more than handoff keeps`);
    case "unreadable":
      throw new RunNotFoundError(run.ref ?? run.dir, `changes.patch cannot be read (${read.message})`);
  }
}

const MAX_REQUEST_BYTES = 16 * 1024 * 1024;

/** request.json of a run directory, read as result.json is (a regular file of this user, never a link); null when missing, untrusted or invalid. */
export function readRequest(runDir: string): RequestJson | null {
  return readArtifactJson(join(runDir, "request.json"), RequestJson, MAX_REQUEST_BYTES);
}

/**
 * A file in a folder of a loaded run (`attempts/2/feedback.md`), read as readArtifact reads one: only if every
 * folder on the way is a real directory of this user (never a link) and the file is one handoff wrote.
 */
export function readRunFile(run: LoadedRun, relative: string, maxBytes: number): ArtifactRead {
  const parts = relative.split("/");
  if (parts.some((part) => part === "" || part === "." || part === ".."))
    return { kind: "untrusted", why: `not a run-directory path: ${relative}` };
  let folder = run.dir;
  for (const part of parts.slice(0, -1)) {
    folder = join(folder, part);
    let stats: ReturnType<typeof lstatSync>;
    try {
      stats = lstatSync(folder);
    } catch {
      return { kind: "missing" };
    }
    if (!stats.isDirectory()) return { kind: "untrusted", why: `${part}/ is not a directory (a link, or a file)` };
    const uid = process.getuid?.();
    if (uid !== undefined && stats.uid !== uid) return { kind: "untrusted", why: `${part}/ is owned by uid ${stats.uid}, not by you` };
  }
  return readArtifact(join(run.dir, relative), maxBytes);
}

/** A JSON file in a folder of a loaded run, read as readRunFile reads one and parsed with its schema; null otherwise. */
export function readRunJson<T>(run: LoadedRun, relative: string, schema: z.ZodType<T>, maxBytes: number): T | null {
  return parseArtifactJson(readRunFile(run, relative, maxBytes), schema);
}
