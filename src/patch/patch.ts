import { createHash } from "node:crypto";
import { splitNul } from "../process/git.js";

/**
 * The patch handoff extracted, read once. It stays bytes on disk (changes.patch) and on git's stdin; this is what
 * handoff knows about those bytes: their sha256, and one section per `diff --git` header with its path, change,
 * line counts, hunks and added lines. Staging reads the line counts from it (instead of asking git to diff every file
 * a second time), extraction the added lines (the secret scan), the crash sweep the files of a crashed run's patch,
 * `show` the hunks per file, `apply` and the run directory the hash. Parsing is lenient: anything git would not
 * write (a line before the first header, a hunk whose lines do not add up) is skipped and marks the patch not
 * `wellFormed`, and every reader that needs exact counts then asks git, or leaves them out, as it did before.
 */
export interface ParsedPatch {
  readonly bytes: Buffer;
  /** sha256 of the bytes, hex: computed the first time it is asked for (staging re-reads patches nobody hashes). */
  readonly sha256: string;
  /** One per `diff --git` header, in the order git wrote them (a type change is two: the deletion, then the creation). */
  readonly files: readonly DiffFile[];
  /** Every line is in a section and every hunk adds up, as in everything git writes. */
  readonly wellFormed: boolean;
}

export interface DiffFile {
  /** The `diff --git a/P b/P` line as git wrote it (latin1: with core.quotePath git quotes every byte past ASCII). */
  readonly header: string;
  /** P as the header names it, `a/` dropped, quoted as git quoted it. */
  readonly path: string;
  /** From a `new file mode` or `deleted file mode` line before the first hunk. */
  readonly change: "added" | "modified" | "deleted";
  /** `GIT binary patch` or `Binary files … differ` in the section: its lines are not counted. */
  readonly binary: boolean;
  readonly additions: number;
  readonly deletions: number;
  readonly hunks: readonly DiffHunk[];
}

export interface DiffHunk {
  /** The new file's line number of the hunk's first line (as its `@@` header says). */
  readonly newStart: number;
  /** Where the hunk's body lines start and end in the patch bytes. */
  readonly bodyStart: number;
  readonly bodyEnd: number;
}

/** What `git diff --numstat` would say for one path: null for a binary change. */
export interface LineCounts {
  readonly additions: number | null;
  readonly deletions: number | null;
}

/** Each file's added lines (text without the `+`) and their line numbers in the new file. */
export interface AddedLines {
  readonly lines: string[];
  readonly numbers: number[];
}

const DIFF_HEADER = Buffer.from("diff --git ");
const HUNK = /^@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/u;
const PLUS = 0x2b;
const MINUS = 0x2d;
const SPACE = 0x20;
const BACKSLASH = 0x5c;
const AT = 0x40;
const NEWLINE = 0x0a;

export function patchSha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

interface OpenFile {
  header: string;
  path: string;
  change: DiffFile["change"];
  binary: boolean;
  additions: number;
  deletions: number;
  hunks: DiffHunk[];
}

/** One pass over the bytes; only header lines become strings, a hunk's body is looked at by its first byte. */
export function parsePatch(bytes: Buffer): ParsedPatch {
  const files: OpenFile[] = [];
  let wellFormed = true;
  let current: OpenFile | null = null;
  // The hunk being read: how many old and new lines it still holds, and where its body began.
  let oldLeft = 0;
  let newLeft = 0;
  let hunk: { newStart: number; bodyStart: number } | null = null;
  const closeHunk = (end: number) => {
    if (hunk && current) current.hunks.push({ newStart: hunk.newStart, bodyStart: hunk.bodyStart, bodyEnd: end });
    hunk = null;
    oldLeft = newLeft = 0;
  };
  let at = 0;
  while (at < bytes.length) {
    const newline = bytes.indexOf(NEWLINE, at);
    const end = newline === -1 ? bytes.length : newline;
    const next = end + 1;
    if (hunk && current) {
      const first = end > at ? bytes[at] : SPACE; // an empty line is an empty context line
      if (first === BACKSLASH) {
        at = next; // "\ No newline at end of file"
        continue;
      }
      if (first === PLUS || first === MINUS || first === SPACE) {
        if (first !== MINUS) newLeft--;
        if (first !== PLUS) oldLeft--;
        if (first === PLUS) current.additions++;
        if (first === MINUS) current.deletions++;
        if (oldLeft < 0 || newLeft < 0) wellFormed = false;
        if (oldLeft <= 0 && newLeft <= 0) closeHunk(Math.min(next, bytes.length));
        at = next;
        continue;
      }
      wellFormed = false; // a hunk cut short: the line is read as a header line below
      closeHunk(at);
    }
    if (bytes[at] === DIFF_HEADER[0] && bytes.subarray(at, at + DIFF_HEADER.length).equals(DIFF_HEADER)) {
      current = newFile(bytes.subarray(at, end));
      files.push(current);
    } else if (!current) {
      wellFormed = false;
    } else if (bytes[at] === AT) {
      const match = HUNK.exec(bytes.toString("latin1", at, end));
      if (match) {
        oldLeft = match[1] === undefined ? 1 : Number(match[1]);
        newLeft = match[3] === undefined ? 1 : Number(match[3]);
        hunk = { newStart: Number(match[2]), bodyStart: Math.min(next, bytes.length) };
        if (oldLeft === 0 && newLeft === 0) closeHunk(hunk.bodyStart);
      }
    } else {
      const line = bytes.toString("latin1", at, end);
      if (line === "GIT binary patch" || (line.startsWith("Binary files ") && line.endsWith(" differ"))) current.binary = true;
      else if (current.hunks.length === 0 && line.startsWith("new file mode")) current.change = "added";
      else if (current.hunks.length === 0 && line.startsWith("deleted file mode")) current.change = "deleted";
    }
    at = next;
  }
  if (hunk) {
    wellFormed = false;
    closeHunk(bytes.length);
  }
  let sha256: string | null = null;
  return {
    bytes,
    get sha256() {
      sha256 ??= patchSha256(bytes);
      return sha256;
    },
    files: files.map((file) => (file.binary ? { ...file, additions: 0, deletions: 0 } : file)),
    wellFormed,
  };
}

/**
 * The header line names the path twice (`a/P b/P`: no renames), as git printed it: quoted when it holds special
 * characters. The path is taken as UTF-8, the header kept as latin1 to compare with git's quoting byte for byte.
 */
function newFile(line: Buffer): OpenFile {
  const pair = line.subarray(DIFF_HEADER.length).toString("utf8");
  const half = pair.slice(0, (pair.length - 1) / 2);
  const path = half.replace(/^"a\//u, '"').replace(/^a\//u, "");
  return { header: line.toString("latin1"), path, change: "modified", binary: false, additions: 0, deletions: 0, hunks: [] };
}

/**
 * What `git diff --numstat` would say for each change of git's `--raw` list, read from the patch: the sections are
 * walked in the order of the list, a type change being two (deletion, then creation), as git writes it. A section
 * whose header is not the one git writes for that path, a patch that is not well formed, or a section left over
 * gives null, and the caller asks git after all (at 800 changed files that second diff was a third of staging).
 */
export function countsFromPatch(
  changes: readonly { readonly path: Buffer; readonly status: string }[],
  patch: ParsedPatch,
): LineCounts[] | null {
  if (!patch.wellFormed) return null;
  const counts: LineCounts[] = [];
  let next = 0;
  for (const change of changes) {
    const parts = change.status === "T" ? 2 : 1;
    const header = `diff --git ${quoteLikeGit(Buffer.concat([Buffer.from("a/"), change.path]))} ${quoteLikeGit(Buffer.concat([Buffer.from("b/"), change.path]))}`;
    let additions: number | null = 0;
    let deletions: number | null = 0;
    for (let part = 0; part < parts; part++) {
      const file = patch.files[next++];
      if (file === undefined || file.header !== header) return null;
      if (file.binary || additions === null || deletions === null) additions = deletions = null;
      else {
        additions += file.additions;
        deletions += file.deletions;
      }
    }
    counts.push({ additions, deletions });
  }
  return next === patch.files.length ? counts : null;
}

/**
 * The added lines of each file's hunks, in the order git wrote the files (the order of `--raw`); null when the
 * patch is not well formed or has another number of sections than `expected` (a type change is two): the caller
 * then reads the files themselves.
 */
export function addedLinesPerFile(patch: ParsedPatch, expected: number): AddedLines[] | null {
  if (!patch.wellFormed || patch.files.length !== expected) return null;
  return patch.files.map((file) => addedLines(patch.bytes, file));
}

function addedLines(bytes: Buffer, file: DiffFile): AddedLines {
  const lines: string[] = [];
  const numbers: number[] = [];
  for (const hunk of file.hunks) {
    let lineNo = hunk.newStart;
    let at = hunk.bodyStart;
    while (at < hunk.bodyEnd) {
      const newline = bytes.indexOf(NEWLINE, at);
      const end = newline === -1 || newline > hunk.bodyEnd ? hunk.bodyEnd : newline;
      const first = bytes[at];
      if (first === PLUS) {
        lines.push(bytes.toString("utf8", at + 1, end));
        numbers.push(lineNo);
      }
      if (first !== MINUS && first !== BACKSLASH) lineNo++;
      at = end + 1;
    }
  }
  return { lines, numbers };
}

/** Hunks per section, for `show`'s summary table; empty when the patch is not well formed. */
export function hunkCounts(patch: ParsedPatch): number[] {
  return patch.wellFormed ? patch.files.map((file) => file.hunks.length) : [];
}

const ESCAPES: Record<number, string> = { 7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 34: '\\"', 92: "\\\\" };

/** A path as git prints it in a diff header with core.quotePath on: C-style quotes as soon as one byte needs them. */
export function quoteLikeGit(path: Buffer): string {
  let quoted = "";
  let needed = false;
  for (const byte of path) {
    if (byte < 0x20 || byte === 0x7f || byte >= 0x80 || byte === 0x22 || byte === 0x5c) {
      needed = true;
      quoted += ESCAPES[byte] ?? `\\${byte.toString(8).padStart(3, "0")}`;
    } else quoted += String.fromCharCode(byte);
  }
  return needed ? `"${quoted}"` : quoted;
}

/** The paths `git apply --numstat -z` lists: the third field of each record (`adds\tdels\tpath`). */
export function numstatPaths(output: Buffer): string[] {
  return splitNul(output)
    .map((record) => record.toString("utf8").split("\t")[2] ?? "")
    .filter((path) => path !== "");
}
