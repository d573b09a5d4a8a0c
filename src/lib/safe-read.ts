import { type Stats, closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

/** Read-only, never through a final symbolic link, never blocking on a FIFO, never taking a terminal. */
export const READ_NO_FOLLOW = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

export type SafeRead =
  | { readonly kind: "bytes"; readonly bytes: Buffer }
  | { readonly kind: "not_regular" }
  | { readonly kind: "too_large"; readonly size: number }
  | { readonly kind: "unreadable"; readonly message: string };

/**
 * Reads a file without following a final symlink and without blocking on a FIFO, and never more than `maxBytes`.
 * The size is taken from the open descriptor, so a file swapped after an lstat cannot make handoff read /dev/zero.
 */
export function readFileSafely(path: string | Buffer, maxBytes: number): SafeRead {
  return readNoFollow<SafeRead>(
    path,
    (code) => (code === "ELOOP" ? { kind: "not_regular" } : { kind: "unreadable", message: code }),
    (fd, stats) => (stats.isFile() ? boundedBytes(fd, stats.size, maxBytes) : { kind: "not_regular" }),
  );
}

/**
 * Opens `path` with READ_NO_FOLLOW and hands the descriptor and its stat to `read`, closing it after: the checks
 * and the read use one descriptor, so a file swapped after the checks is not read. A failed open goes to
 * `openFailed` with its errno code; a failed stat or read is `unreadable`.
 */
export function readNoFollow<T>(
  path: string | Buffer,
  openFailed: (code: string) => T,
  read: (fd: number, stats: Stats) => T,
): T | { readonly kind: "unreadable"; readonly message: string } {
  let fd: number;
  try {
    fd = openSync(path, READ_NO_FOLLOW);
  } catch (error) {
    return openFailed(errorCode(error));
  }
  try {
    return read(fd, fstatSync(fd));
  } catch (error) {
    return { kind: "unreadable", message: errorCode(error) };
  } finally {
    closeSync(fd);
  }
}

/** The whole file from an open descriptor, or `too_large` when its size (from the descriptor) is over `maxBytes`. */
export function boundedBytes(
  fd: number,
  size: number,
  maxBytes: number,
): { readonly kind: "bytes"; readonly bytes: Buffer } | { readonly kind: "too_large"; readonly size: number } {
  return size > maxBytes ? { kind: "too_large", size } : { kind: "bytes", bytes: readOpenFile(fd, size) };
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? String(error);
}

/**
 * Up to `size` bytes from where the descriptor stands (a file just opened: its start; stdin or a pipe: what comes
 * next), fewer if it ends first. Never more: a file that grew, /dev/zero or an endless pipe cannot fill memory.
 */
export function readOpenFile(fd: number, size: number): Buffer {
  const bytes = Buffer.allocUnsafe(size);
  let offset = 0;
  while (offset < size) {
    const read = readSync(fd, bytes, offset, size - offset, null);
    if (read === 0) break;
    offset += read;
  }
  return bytes.subarray(0, offset);
}

/** Up to `limit` bytes of a file or of stdin (fd 0), never more: /dev/zero or an endless pipe cannot fill memory. */
export function readBounded(file: string | number, limit: number): Buffer {
  const fd = typeof file === "number" ? file : openSync(file, "r");
  try {
    return readOpenFile(fd, limit);
  } finally {
    if (typeof file !== "number") closeSync(fd);
  }
}
