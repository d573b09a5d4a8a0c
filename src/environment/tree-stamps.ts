import { createHash } from "node:crypto";
import { join } from "node:path";
import { fileType, walkTree } from "../lib/fs-walk.js";
import { captureProcess, captureProcessSync } from "../process/process.js";
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
  /**
   * sha256 of find's own output (paths below the root, in the order find met them), null when read by the walk: the
   * same output again is the same stamps, without parsing and sorting them (`known` below).
   */
  readonly findDigest: string | null;
}

/** One entry: its part and path below it, and its stamp line (latin1, one character a byte), and its ctime in ns (digits). */
interface Stamp {
  readonly path: string;
  readonly line: string;
  readonly ctimeNs: string;
  readonly blocks: number;
}

const SYSTEM_PATH = "/usr/bin:/bin:/usr/local/bin";
/**
 * %H the part (the starting point as given), %P the path below it, %y type, %m permission bits (octal), %s size, %T@
 * and %C@ mtime and ctime (s.ns), %i inode, %b 512-byte blocks.
 */
const FIND_FORMAT = "%H\\0%P\\0%y %m %s %T@ %C@ %i %b\\0";
/** One entry as FIND_FORMAT prints it, matched where the last one ended (sticky): the whole output in one string. */
const FIND_ENTRY = /([^\0]*)\0([^\0]*)\0([fdlpscb]) ([0-7]+) (\d+) (\d+)\.(\d{9})\d* (\d+)\.(\d{9})\d* (\d+) (\d+)\0/y;
const TYPE_WORDS: Readonly<Record<string, string>> = { f: "file", d: "dir", l: "symlink", p: "fifo", s: "socket", c: "char", b: "block" };

/**
 * `reader`: how the stamps are read; both give the same ones (tests compare them). `known`: stamps read before from
 * the same parts of a tree (where no agent can write them, or in a record whose own ctime is checked): when find
 * prints exactly what it printed then, they are returned as they are.
 */
export function stampTrees(
  root: string,
  parts: readonly string[],
  reader: "find" | "walk" = "find",
  known: TreeStamps | null = null,
): TreeStamps {
  const out = reader === "find" ? findOutput(root, parts) : null;
  return stampsOf(root, parts, out, known);
}

/**
 * The same stamps with `find` as a child the event loop does not wait on: other work of the run (a sandbox start, a
 * git call) goes on beside it. Node's walk, where find cannot, is synchronous as in `stampTrees`.
 */
export async function stampTreesInBackground(root: string, parts: readonly string[], known: TreeStamps | null = null): Promise<TreeStamps> {
  return stampsOf(root, parts, await findOutputInBackground(root, parts), known);
}

/** The stamps in find's output (`known` when it is the output they were read from), or by the walk where there is none. */
function stampsOf(root: string, parts: readonly string[], out: Buffer | null, known: TreeStamps | null): TreeStamps {
  if (out === null) return digestStamps(stampsByWalk(root, parts), "walk", null);
  const findDigest = createHash("sha256").update(out).digest("hex");
  if (known !== null && known.findDigest === findDigest) return known;
  const found = parseFindOutput(parts, out);
  return found ? digestStamps(found, "find", findDigest) : digestStamps(stampsByWalk(root, parts), "walk", null);
}

function digestStamps(stamps: Stamp[], readBy: TreeStamps["readBy"], findDigest: string | null): TreeStamps {
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
  return { digest, newestCtimeNs: BigInt(newest), entries: stamps.length, sizeBytes: blocks * 512, readBy, findDigest };
}

/** Whether `a` is a later time than `b`, both ns as digits without leading zeros (no BigInt per entry). */
function laterNs(a: string, b: string): boolean {
  return a.length !== b.length ? a.length > b.length : a > b;
}

/** "1796565254" and "485730592" (s, and the first 9 digits after the point) as ns digits, no leading zeros. */
function nanoseconds(seconds: string, fraction: string): string {
  // Only a time in 1970's first second has a leading zero to strip.
  return seconds.charCodeAt(0) !== 48 ? seconds + fraction : `${seconds}${fraction}`.replace(/^0+(?=\d)/, "");
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

/** What GNU find prints of the parts, or null when it cannot (not installed, not GNU, an error). */
function findOutput(root: string, parts: readonly string[]): Buffer | null {
  const find = which("find", SYSTEM_PATH);
  if (find === null) return null;
  return captureProcessSync({ file: find, args: findArgs(parts), cwd: root, env: FIND_ENV, maxBuffer: FIND_MAX_BUFFER });
}

/** `findOutput`, its find process waited for without blocking. */
async function findOutputInBackground(root: string, parts: readonly string[]): Promise<Buffer | null> {
  const find = which("find", SYSTEM_PATH);
  if (find === null) return null;
  const ran = await captureProcess({ file: find, args: findArgs(parts), cwd: root, env: FIND_ENV, maxBuffer: FIND_MAX_BUFFER });
  return ran.exitCode === 0 && !ran.truncated ? ran.stdout : null;
}

const FIND_ENV = { LC_ALL: "C", PATH: SYSTEM_PATH };
const FIND_MAX_BUFFER = 1024 * 1024 * 1024;

/**
 * One find for every part (a part that is missing makes it fail: then the walk says what is there), run in the root
 * with the parts as `./part`: what it prints does not depend on where the root is (a build's directory before it is
 * moved into the cache), so a later find of the moved tree prints the same.
 */
function findArgs(parts: readonly string[]): string[] {
  return ["-P", ...parts.map(startingPoint), "-mindepth", "1", "-printf", FIND_FORMAT];
}

function startingPoint(part: string): string {
  return `./${part}`;
}

/** The stamps in find's output; null when any of it is not what the format prints. */
function parseFindOutput(parts: readonly string[], out: Buffer): Stamp[] | null {
  const partOf = new Map(parts.map((part) => [startingPoint(part), part]));
  // One string and one native regex over it: a string and a match per entry cost several times more while cold.
  const text = out.toString("latin1");
  const stamps: Stamp[] = [];
  FIND_ENTRY.lastIndex = 0;
  while (FIND_ENTRY.lastIndex < text.length) {
    const fields = FIND_ENTRY.exec(text);
    if (!fields) return null;
    const [, start, path, typeLetter, mode, size, mtimeS, mtimeFrac, ctimeS, ctimeFrac, ino, blocks] = fields;
    const part = partOf.get(start!);
    const type = TYPE_WORDS[typeLetter!];
    if (part === undefined || type === undefined) return null;
    const ctimeNs = nanoseconds(ctimeS!, ctimeFrac!);
    stamps.push({
      path: `${part}/${path}`,
      line: line(type, Number.parseInt(mode!, 8), size!, nanoseconds(mtimeS!, mtimeFrac!), ctimeNs, ino!),
      ctimeNs,
      blocks: Number(blocks),
    });
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
