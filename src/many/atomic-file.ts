import { randomBytes } from "node:crypto";
import { closeSync, constants, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/** A temp file is always a new file: never an existing one, never through a link. */
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Writes `path` whole or not at all: a temp file next to it, every byte, fsync, rename over it. A reader (CI picking
 * up junit.xml, `jq` on batch.json) sees the old file or the new one, never half of one; a failure leaves no temp file.
 */
export function writeFileAtomically(path: string, content: string): void {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  const fd = openSync(temp, CREATE_NEW, 0o600);
  try {
    const bytes = Buffer.from(content);
    for (let offset = 0; offset < bytes.length; ) offset += writeSync(fd, bytes, offset, bytes.length - offset);
    fsyncSync(fd);
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  } finally {
    closeSync(fd);
  }
}
