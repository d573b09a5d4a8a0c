import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

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
  let fd: number;
  try {
    fd = openSync(path, READ_NO_FOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP") return { kind: "not_regular" };
    return { kind: "unreadable", message: code ?? String(error) };
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return { kind: "not_regular" };
    if (stats.size > maxBytes) return { kind: "too_large", size: stats.size };
    return { kind: "bytes", bytes: readOpenFile(fd, stats.size) };
  } catch (error) {
    return { kind: "unreadable", message: (error as NodeJS.ErrnoException).code ?? String(error) };
  } finally {
    closeSync(fd);
  }
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
