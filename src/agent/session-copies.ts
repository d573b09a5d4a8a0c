import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readSync, unlinkSync, writeSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { existingRealPath, isInside, realPathOrAncestor } from "../lib/paths.js";
import { READ_NO_FOLLOW } from "../lib/safe-read.js";

/** A file a resumed turn needs at another place in the private home (CliResumeCommand.copies). */
export interface SessionCopy {
  readonly from: string;
  readonly to: string;
}

/** A copy that was refused or failed: the turn cannot resume, and the reason says why. */
export class SessionCopyError extends Error {
  override readonly name = "SessionCopyError";
}

/** Created only by handoff, never through a final link, never over an existing entry. */
const WRITE_NEW_NO_FOLLOW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
const CHUNK_BYTES = 1 << 20;

/**
 * Copies each file inside `homeDir`, as a translator asked for it. Both paths must lie inside the home lexically and
 * after the real path of their parent dir (a link in the home cannot send the copy elsewhere); neither the source nor
 * the destination is followed if it is a link; missing parents are created 0700; a regular file already at the
 * destination is replaced. Throws SessionCopyError.
 */
export function copyInsideHome(copies: readonly SessionCopy[], homeDir: string): void {
  const home = existingRealPath(homeDir);
  if (!home) throw new SessionCopyError(`the private CLI home ${homeDir} does not exist`);
  for (const copy of copies) {
    const from = resolve(copy.from);
    const to = resolve(copy.to);
    for (const path of [from, to]) {
      if (path === resolve(homeDir) || !isInside(path, resolve(homeDir)))
        throw new SessionCopyError(`${path} is not inside the private CLI home`);
    }
    insideReally(dirname(from), home);
    // Before any parent is made: the part of the destination that exists already must not lead out of the home.
    const planned = realPathOrAncestor(dirname(to));
    if (!isInside(planned, home)) throw new SessionCopyError(`${dirname(to)} leads outside the private CLI home (to ${planned})`);
    mkdirSync(dirname(to), { recursive: true, mode: 0o700 });
    insideReally(dirname(to), home);
    copyFileNoFollow(from, to);
  }
}

function insideReally(dir: string, home: string): void {
  const real = existingRealPath(dir);
  if (!real) throw new SessionCopyError(`${dir} does not exist`);
  if (!isInside(real, home)) throw new SessionCopyError(`${dir} leads outside the private CLI home (to ${real})`);
}

function copyFileNoFollow(from: string, to: string): void {
  let source: number;
  try {
    source = openSync(from, READ_NO_FOLLOW);
  } catch (error) {
    throw new SessionCopyError(`cannot open ${from}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  try {
    if (!fstatSync(source).isFile()) throw new SessionCopyError(`${from} is not a regular file`);
    replaceRegularFile(to);
    const target = openSync(to, WRITE_NEW_NO_FOLLOW, 0o600);
    try {
      const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
      for (let read = readSync(source, buffer); read > 0; read = readSync(source, buffer)) writeSync(target, buffer, 0, read);
    } finally {
      closeSync(target);
    }
  } finally {
    closeSync(source);
  }
}

/** Makes room for the copy: a regular file is removed; a link, a dir or anything else is refused. */
function replaceRegularFile(to: string): void {
  let stats: ReturnType<typeof lstatSync>;
  try {
    stats = lstatSync(to);
  } catch {
    return;
  }
  if (!stats.isFile()) throw new SessionCopyError(`${to} exists and is not a regular file`);
  unlinkSync(to);
}
