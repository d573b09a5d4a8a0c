import { execFileSync } from "node:child_process";
import { chmodSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { countsFromPatch, quoteLikeGit } from "../src/patch/patch.js";
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
  return { git: withNumstat.map(({ additions, deletions }) => ({ additions, deletions })), handoff: countsFromPatch(rawOnly, patch), patch, rawOnly };
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
    expect(countsFromPatch(rawOnly.slice(0, 1), patch)).toBeNull(); // a section left over
    expect(countsFromPatch([...rawOnly].reverse(), patch)).toBeNull(); // headers in another order
    const cut = patch.subarray(0, patch.lastIndexOf(0x0a, patch.length - 2) + 1); // a hunk a line short of its header
    expect(countsFromPatch(rawOnly, cut)).toBeNull();
  });
});
