import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parsePatch as parseWithJsdiff } from "diff";
import { describe, expect, test } from "vitest";
import { addedLinesPerFile, countsFromPatch, hunkCounts, parsePatch, patchSha256, quoteLikeGit } from "../src/patch/patch.js";
import { parseRawWithNumstat } from "../src/patch/staging.js";
import { makeRepo } from "./helpers/repo.js";

const DIFF = ["diff", "--cached", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color"];

function gitOut(repo: string, args: string[]): Buffer {
  return execFileSync("git", ["-c", "core.quotePath=true", ...args], { cwd: repo, maxBuffer: 64 * 1024 * 1024 });
}

/** git's raw list with its own numstat, and handoff's counts read from the patch, for what is staged in `repo`. */
function bothCounts(repo: string, base: string) {
  const diff = (extra: string[]) => gitOut(repo, [...DIFF, ...extra, base, "--"]);
  const withNumstat = parseRawWithNumstat(diff(["--raw", "--numstat", "-z", "--no-abbrev"]));
  const rawOnly = parseRawWithNumstat(diff(["--raw", "-z", "--no-abbrev"]));
  const patch = diff(["--binary", "--full-index", "--src-prefix=a/", "--dst-prefix=b/"]);
  return {
    git: withNumstat.map(({ additions, deletions }) => ({ additions, deletions })),
    handoff: countsFromPatch(rawOnly, parsePatch(patch)),
    patch,
    rawOnly,
  };
}

describe("line counts read from the patch", () => {
  test("match git's numstat for edits, additions, deletions, binaries, a type change, a mode change and quoted names", async () => {
    const repo = await makeRepo({
      "edit.txt": "one\ntwo\nthree\n",
      "gone.txt": "bye\n",
      "image.bin": "a\0b",
      "was-binary": "x\0y",
      "link-to-be": "regular\n",
      "script.sh": "echo hi\n",
      "no-newline.txt": "last line",
    });
    const base = gitOut(repo, ["rev-parse", "HEAD"]).toString().trim();
    writeFileSync(join(repo, "edit.txt"), "one\n2\nthree\nfour\n");
    rmSync(join(repo, "gone.txt"));
    writeFileSync(join(repo, "image.bin"), "a\0c");
    writeFileSync(join(repo, "was-binary"), "now text\n");
    rmSync(join(repo, "link-to-be"));
    symlinkSync("edit.txt", join(repo, "link-to-be"));
    chmodSync(join(repo, "script.sh"), 0o755);
    writeFileSync(join(repo, "no-newline.txt"), "last line, longer");
    writeFileSync(join(repo, "empty-new"), "");
    writeFileSync(join(repo, 'tab\tquote"back\\slash.txt'), "a\nb\n");
    writeFileSync(join(repo, "caf\u00e9 \u{1f600}.md"), "x\n");
    writeFileSync(join(repo, "new\nline"), "y\n");
    gitOut(repo, ["add", "-A"]);
    const { git, handoff } = bothCounts(repo, base);
    expect(git.length).toBe(11);
    expect(handoff).toEqual(git);
  });

  test("quote paths the way git writes them in diff headers", () => {
    expect(quoteLikeGit(Buffer.from("a/plain name.txt"))).toBe("a/plain name.txt");
    expect(quoteLikeGit(Buffer.from('a/t\tq"b\\'))).toBe('"a/t\\tq\\"b\\\\"');
    expect(quoteLikeGit(Buffer.from("a/caf\u00e9"))).toBe('"a/caf\\303\\251"');
    expect(quoteLikeGit(Buffer.from([0x61, 0x2f, 0x01, 0x7f]))).toBe('"a/\\001\\177"');
  });

  test("give up (null, so git is asked) when the patch does not read as the raw list says", async () => {
    const repo = await makeRepo({ "a.txt": "1\n", "b.txt": "2\n" });
    const base = gitOut(repo, ["rev-parse", "HEAD"]).toString().trim();
    writeFileSync(join(repo, "a.txt"), "one\n");
    writeFileSync(join(repo, "b.txt"), "two\n");
    gitOut(repo, ["add", "-A"]);
    const { handoff, patch, rawOnly } = bothCounts(repo, base);
    expect(handoff).toEqual([
      { additions: 1, deletions: 1 },
      { additions: 1, deletions: 1 },
    ]);
    expect(countsFromPatch(rawOnly.slice(0, 1), parsePatch(patch))).toBeNull(); // a section left over
    expect(countsFromPatch([...rawOnly].reverse(), parsePatch(patch))).toBeNull(); // headers in another order
    const cut = patch.subarray(0, patch.lastIndexOf(0x0a, patch.length - 2) + 1); // a hunk a line short of its header
    expect(countsFromPatch(rawOnly, parsePatch(cut))).toBeNull();
  });
});

describe("the patch, parsed once", () => {
  const PATCH = [
    "diff --git a/math.js b/math.js",
    "index 1111111..2222222 100644",
    "--- a/math.js",
    "+++ b/math.js",
    "@@ -1,3 +1,3 @@",
    " export function add(a, b) {",
    "-  return a - b;",
    "+  return a + b;",
    " }",
    "@@ -10,2 +10,3 @@ export function sub(a, b) {",
    " // tail",
    "+// one more",
    " // end",
    "diff --git a/new file.txt b/new file.txt",
    "new file mode 100644",
    "index 0000000..3333333",
    "--- /dev/null",
    "+++ b/new file.txt",
    "@@ -0,0 +1,2 @@",
    "+-- a line that looks like a header",
    "+no newline at its end",
    "\\ No newline at end of file",
    'diff --git "a/tab\\there" "b/tab\\there"',
    "deleted file mode 100644",
    "index 4444444..0000000",
    "GIT binary patch",
    "literal 0",
    "",
    "diff --git a/gone.txt b/gone.txt",
    "deleted file mode 100644",
    "index 5555555..0000000",
    "--- a/gone.txt",
    "+++ /dev/null",
    "@@ -1 +0,0 @@",
    "-bye",
    "",
  ].join("\n");

  test("one parse gives each file's path, change, counts and hunks, the added lines with their numbers, and the sha256", () => {
    const parsed = parsePatch(Buffer.from(PATCH));
    expect(parsed.wellFormed).toBe(true);
    expect(parsed.sha256).toBe(createHash("sha256").update(PATCH).digest("hex"));
    expect(parsed.sha256).toBe(patchSha256(Buffer.from(PATCH)));
    expect(parsed.files.map(({ path, change, binary, additions, deletions }) => ({ path, change, binary, additions, deletions }))).toEqual([
      { path: "math.js", change: "modified", binary: false, additions: 2, deletions: 1 },
      { path: "new file.txt", change: "added", binary: false, additions: 2, deletions: 0 },
      { path: '"tab\\there"', change: "deleted", binary: true, additions: 0, deletions: 0 },
      { path: "gone.txt", change: "deleted", binary: false, additions: 0, deletions: 1 },
    ]);
    expect(parsed.files[2]!.header).toBe('diff --git "a/tab\\there" "b/tab\\there"');
    expect(hunkCounts(parsed)).toEqual([2, 1, 0, 1]);
    expect(addedLinesPerFile(parsed, 4)).toEqual([
      { lines: ["  return a + b;", "// one more"], numbers: [2, 11] },
      { lines: ["-- a line that looks like a header", "no newline at its end"], numbers: [1, 2] },
      { lines: [], numbers: [] },
      { lines: [], numbers: [] },
    ]);
    expect(addedLinesPerFile(parsed, 3)).toBeNull(); // another number of files than git listed: the files are read instead
  });

  test("added lines are the ones jsdiff read from git's patch before: CRLF, no newline at the end, non-UTF-8 bytes, an empty file", async () => {
    const repo = await makeRepo({ "crlf.txt": "a\r\nb\r\n", "tail.txt": "x\ny", "keep.txt": "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n" });
    const base = gitOut(repo, ["rev-parse", "HEAD"]).toString().trim();
    writeFileSync(join(repo, "crlf.txt"), "a\r\nB\r\nc\r\n");
    writeFileSync(join(repo, "tail.txt"), "x\ny\nz");
    writeFileSync(join(repo, "keep.txt"), "0\n1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\neleven\n");
    writeFileSync(join(repo, "latin1.txt"), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a, 0xff, 0xfe, 0x0a]));
    writeFileSync(join(repo, "empty.txt"), "");
    gitOut(repo, ["add", "-A"]);
    const patch = gitOut(repo, [...DIFF, "--binary", "--full-index", "--src-prefix=a/", "--dst-prefix=b/", base, "--"]);
    const jsdiff = parseWithJsdiff(patch.toString("utf8")).map((file) => {
      const lines: string[] = [];
      const numbers: number[] = [];
      for (const hunk of file.hunks) {
        let lineNo = hunk.newStart;
        for (const line of hunk.lines) {
          if (line.startsWith("+")) {
            lines.push(line.slice(1));
            numbers.push(lineNo);
          }
          if (!line.startsWith("-") && !line.startsWith("\\")) lineNo++;
        }
      }
      return { lines, numbers };
    });
    const parsed = parsePatch(patch);
    expect(jsdiff).toHaveLength(5);
    expect(addedLinesPerFile(parsed, 5)).toEqual(jsdiff);
    expect(hunkCounts(parsed)).toEqual(parseWithJsdiff(patch.toString("utf8")).map((file) => file.hunks.length));
  });

  test("a patch git would not write is not well formed: no counts, no added lines and no hunk counts are read from it", () => {
    const before = parsePatch(Buffer.from(`garbage first\n${PATCH}`));
    expect(before.wellFormed).toBe(false);
    expect(before.files).toHaveLength(4); // still read as far as it goes, for the crash sweep's list of files
    expect(addedLinesPerFile(before, 4)).toBeNull();
    expect(hunkCounts(before)).toEqual([]);
    const cut = parsePatch(Buffer.from(PATCH.split("\n").slice(0, 8).join("\n"))); // a hunk one line short
    expect(cut.wellFormed).toBe(false);
    expect(hunkCounts(cut)).toEqual([]);
    expect(parsePatch(Buffer.alloc(0))).toMatchObject({ wellFormed: true, files: [] });
  });
});
