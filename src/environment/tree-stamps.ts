import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { fileType, walkTree } from "../lib/fs-walk.js";
import { which } from "../process/which.js";

/**
 * The lstat stamps of every entry below some directories of one root (an environment's tree/ and home/): path, type,
 * permission bits, size, mtime, ctime and inode, hashed in path order, with the newest ctime among them, the count and
 * the bytes they take. One `find -printf` process reads them (in C, without a JavaScript object per entry: the
 * bench's second run spends half the time in its environment lookup); where GNU find is missing or says
 * anything unexpected, Node's own walk (fs-walk.ts) gives the same stamps. Never follows a link.
 */
export interface TreeStamps {
  readonly digest: string;
  /** The newest ctime (ns) of any entry; 0 when there is none. */
  readonly newestCtimeNs: bigint;
  readonly entries: number;
  readonly sizeBytes: number;
  /** Which way they were read. */
  readonly readBy: "find" | "walk";
}

/** One entry: its part and path below it, and its stamp line (latin1, one character a byte), and its ctime in ns (digits). */
interface Stamp {
  readonly path: string;
  readonly line: string;
  readonly ctimeNs: string;
  readonly blocks: number;
}

const SYSTEM_PATH = "/usr/bin:/bin:/usr/local/bin";
/** %y type, %m permission bits (octal), %s size, %T@ and %C@ mtime and ctime (s.ns), %i inode, %b 512-byte blocks. */
const FIND_FORMAT = "%P\\0%y %m %s %T@ %C@ %i %b\\0";
const FIND_LINE = /^([fdlpscb]) ([0-7]+) (\d+) (\d+)\.(\d{9})\d* (\d+)\.(\d{9})\d* (\d+) (\d+)$/;
const TYPE_WORDS: Readonly<Record<string, string>> = { f: "file", d: "dir", l: "symlink", p: "fifo", s: "socket", c: "char", b: "block" };

/** `reader`: how the stamps are read; both give the same ones (tests compare them). */
export function stampTrees(root: string, parts: readonly string[], reader: "find" | "walk" = "find"): TreeStamps {
  const found = reader === "find" ? stampsByFind(root, parts) : null;
  const stamps = found ?? stampsByWalk(root, parts);
  // Path order by bytes (latin1 strings compare as their bytes), whichever way they were read.
  stamps.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  let newest = "0";
  let blocks = 0;
  const text: string[] = [];
  for (const stamp of stamps) {
    text.push(stamp.path, stamp.line);
    if (laterNs(stamp.ctimeNs, newest)) newest = stamp.ctimeNs;
    blocks += stamp.blocks;
  }
  // One update: thousands of small ones cost more than the walk.
  const digest = createHash("sha256").update(text.join(""), "latin1").digest("hex");
  return { digest, newestCtimeNs: BigInt(newest), entries: stamps.length, sizeBytes: blocks * 512, readBy: found ? "find" : "walk" };
}

/** Whether `a` is a later time than `b`, both ns as digits without leading zeros (no BigInt per entry). */
function laterNs(a: string, b: string): boolean {
  return a.length !== b.length ? a.length > b.length : a > b;
}

/** "1796565254" and "485730592" (s, and the first 9 digits after the point) as ns digits, no leading zeros. */
function nanoseconds(seconds: string, fraction: string): string {
  return `${seconds}${fraction}`.replace(/^0+(?=\d)/, "");
}

function line(
  type: string,
  mode: number,
  size: bigint | string,
  mtimeNs: bigint | string,
  ctimeNs: bigint | string,
  ino: bigint | string,
): string {
  return `\0${type} ${mode.toString(8)} ${size} ${mtimeNs} ${ctimeNs} ${ino}\n`;
}

/** The stamps as GNU find reads them, or null when it cannot (not installed, not GNU, an error, a time before 1970). */
function stampsByFind(root: string, parts: readonly string[]): Stamp[] | null {
  const find = which("find", SYSTEM_PATH);
  if (find === null) return null;
  const stamps: Stamp[] = [];
  for (const part of parts) {
    const ran = spawnSync(find, ["-P", join(root, part), "-mindepth", "1", "-printf", FIND_FORMAT], {
      env: { LC_ALL: "C", PATH: SYSTEM_PATH },
      maxBuffer: 1024 * 1024 * 1024,
      stdio: ["ignore", "pipe", "ignore"],
    });
    if (ran.error || ran.status !== 0) return null;
    const out = ran.stdout;
    let start = 0;
    while (start < out.length) {
      const nameEnd = out.indexOf(0, start);
      const lineEnd = nameEnd === -1 ? -1 : out.indexOf(0, nameEnd + 1);
      if (lineEnd === -1) return null;
      const fields = FIND_LINE.exec(out.toString("latin1", nameEnd + 1, lineEnd));
      const type = fields ? TYPE_WORDS[fields[1]!] : undefined;
      if (!fields || type === undefined) return null;
      const [, , mode, size, mtimeS, mtimeFrac, ctimeS, ctimeFrac, ino, blocks] = fields;
      const ctimeNs = nanoseconds(ctimeS!, ctimeFrac!);
      stamps.push({
        path: `${part}/${out.toString("latin1", start, nameEnd)}`,
        line: line(type, Number.parseInt(mode!, 8), size!, nanoseconds(mtimeS!, mtimeFrac!), ctimeNs, ino!),
        ctimeNs,
        blocks: Number(blocks),
      });
      start = lineEnd + 1;
    }
  }
  return stamps;
}

/** The same stamps from Node's own lstat walk. */
function stampsByWalk(root: string, parts: readonly string[]): Stamp[] {
  const stamps: Stamp[] = [];
  for (const part of parts) {
    walkTree(join(root, part), {
      onEntry: ({ relPath, stats }) => {
        stamps.push({
          path: `${part}/${relPath.toString("latin1")}`,
          line: line(fileType(stats), Number(stats.mode & 0o7777n), stats.size, stats.mtimeNs, stats.ctimeNs, stats.ino),
          ctimeNs: String(stats.ctimeNs),
          blocks: Number(stats.blocks),
        });
      },
    });
  }
  return stamps;
}
