import { execFileSync } from "node:child_process";
import { lstatSync, mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { readIndexTable } from "../src/clone/index-entries.js";
import { RacyEntryFiles, datedPastRacyEntries, gitMayHaveMissedAChange, settleRacyEntries } from "../src/clone/racy-index.js";
import { inspectSource } from "../src/clone/source-repo.js";
import { createPristineStore, createWorkspace, removeTree } from "../src/clone/workspace.js";
import { extractPatch } from "../src/patch/extract.js";
import { DEFAULT_POLICY, compilePolicy } from "../src/patch/rules/policy.js";
import { makeRepo, tempDir } from "./helpers/repo.js";

/** A fresh checkout whose every entry is racily clean: the index is dated in the same second as its files. */
async function racyCheckout(): Promise<{ repo: string; index: { bytes: Buffer; mtimeMs: number }; seconds: number }> {
  const repo = await makeRepo({ "a.txt": "hello\n", "b.txt": "world\n", "dir/c.txt": "third file\n" });
  const seconds = Math.floor(statSync(join(repo, "a.txt")).mtimeMs / 1000);
  return { repo, index: { bytes: readFileSync(join(repo, ".git", "index")), mtimeMs: seconds * 1000 }, seconds };
}

/** What git itself makes of an index copy with the given mtime: the paths it finds changed by stat or content. */
function gitSeesChanged(repo: string, index: { bytes: Buffer; mtimeMs: number }): string[] {
  const file = join(tempDir("handoff-index"), "copy.index");
  writeFileSync(file, index.bytes);
  utimesSync(file, index.mtimeMs / 1000, index.mtimeMs / 1000);
  const out = execFileSync("git", ["add", "-A", "--dry-run"], { cwd: repo, env: { ...process.env, GIT_INDEX_FILE: file } }).toString();
  return out.split("\n").filter(Boolean);
}

function indexSizes(repo: string, bytes: Buffer): Record<string, number> {
  const file = join(tempDir("handoff-index"), "sizes.index");
  writeFileSync(file, bytes);
  const out = execFileSync("git", ["ls-files", "--debug"], { cwd: repo, env: { ...process.env, GIT_INDEX_FILE: file } }).toString();
  const sizes: Record<string, number> = {};
  let path = "";
  for (const line of out.split("\n")) {
    if (!line.startsWith(" ")) path = line;
    const size = /size: (\d+)/u.exec(line);
    if (size) sizes[path] = Number(size[1]);
  }
  return sizes;
}

/** Rewrites a file with other bytes of the same size and puts its mtime back to the nanosecond: only ctime moves. */
function rewriteSameSizeKeepMtime(path: string, content: string): void {
  const { mtimeNs } = lstatSync(path, { bigint: true });
  writeFileSync(path, content);
  execFileSync("touch", ["-m", "-d", `@${mtimeNs / 1_000_000_000n}.${String(mtimeNs % 1_000_000_000n).padStart(9, "0")}`, path]);
}

/**
 * A racy checkout with `file` rewritten (same size, mtime put back) within the second of the checkout, so that only
 * the ctime's nanoseconds tell (git compares whole seconds): on a loaded machine the rewrite can land in the next
 * second, so a checkout where it did is made again.
 */
async function racyCheckoutRewrittenInTheSameSecond(file: string, content: string): ReturnType<typeof racyCheckout> {
  for (let attempt = 1; ; attempt++) {
    const checkout = await racyCheckout();
    const path = join(checkout.repo, file);
    const ctimeSeconds = () => lstatSync(path, { bigint: true }).ctimeNs / 1_000_000_000n;
    const before = ctimeSeconds();
    rewriteSameSizeKeepMtime(path, content);
    if (ctimeSeconds() === before || attempt === 10) return checkout;
  }
}

describe("settling racily clean index entries", () => {
  test("trusts the untouched files of a fresh checkout and dates the copy one second past them", async () => {
    const { repo, index, seconds } = await racyCheckout();
    const settled = settleRacyEntries(index, repo, "sha1");
    expect(settled.mtimeMs).toBe((seconds + 1) * 1000);
    expect(indexSizes(repo, settled.bytes)).toEqual({ "a.txt": 6, "b.txt": 6, "dir/c.txt": 11 });
    expect(gitSeesChanged(repo, settled)).toEqual([]);
  });

  test("smudges a file rewritten in the same second with its size and mtime put back, so git still stages it", async () => {
    const { repo, index } = await racyCheckoutRewrittenInTheSameSecond("a.txt", "HELLO\n");
    // The danger being guarded against: the same copy merely dated a second later hides the change from git.
    expect(gitSeesChanged(repo, { bytes: index.bytes, mtimeMs: index.mtimeMs + 1000 })).toEqual([]);
    const settled = settleRacyEntries(index, repo, "sha1");
    expect(indexSizes(repo, settled.bytes)["a.txt"]).toBe(0);
    expect(gitSeesChanged(repo, settled)).toEqual(["add 'a.txt'"]);
  });

  test("smudges a racy entry whose file was deleted and recreated, even with its old bytes", async () => {
    const { repo, index } = await racyCheckout();
    const path = join(repo, "b.txt");
    execFileSync("rm", [path]);
    writeFileSync(path, "world\n");
    const settled = settleRacyEntries(index, repo, "sha1");
    expect(indexSizes(repo, settled.bytes)["b.txt"]).toBe(0);
    expect(indexSizes(repo, settled.bytes)["a.txt"]).toBe(6);
  });

  test("leaves an index alone when it is not racy or not of version 2 or 3", async () => {
    const { repo, index } = await racyCheckout();
    const later = { bytes: index.bytes, mtimeMs: index.mtimeMs + 5000 };
    expect(settleRacyEntries(later, repo, "sha1")).toBe(later);
    execFileSync("git", ["update-index", "--index-version", "4"], { cwd: repo });
    const v4 = { bytes: readFileSync(join(repo, ".git", "index")), mtimeMs: index.mtimeMs };
    expect(settleRacyEntries(v4, repo, "sha1")).toBe(v4);
  });
});

describe("staging before settling: the index dated past its racy entries, checked after", () => {
  test("git missed nothing in an untouched checkout, nor where a whole-second field tells the change", async () => {
    const { repo, index } = await racyCheckout();
    const table = readIndexTable(index.bytes, 20);
    expect(datedPastRacyEntries(index, table).mtimeMs).toBe(index.mtimeMs - (index.mtimeMs % 1000) + 1000);
    expect(gitMayHaveMissedAChange(index, repo, table)).toBe(false);
    writeFileSync(join(repo, "b.txt"), "a longer world\n"); // another size: git sees it
    execFileSync("rm", [join(repo, "dir", "c.txt")]); // gone: git sees it
    expect(gitMayHaveMissedAChange(index, repo, table)).toBe(false);
  });

  test("a file rewritten in the second of the checkout, size and mtime put back, is what git may have missed", async () => {
    const { repo, index } = await racyCheckoutRewrittenInTheSameSecond("a.txt", "HELLO\n");
    const table = readIndexTable(index.bytes, 20);
    const dated = datedPastRacyEntries(index, table);
    expect(gitSeesChanged(repo, dated)).toEqual([]); // what the check is for
    expect(gitMayHaveMissedAChange(index, repo, table)).toBe(true);
    // The lstats a walk took are used as they are (here: a.txt as the checkout left it, so nothing is missed).
    const seen = new Map([[Buffer.from(join(repo, "a.txt")).toString("latin1"), lstatSync(join(repo, "b.txt"), { bigint: true })]]);
    expect(gitMayHaveMissedAChange(index, repo, table, seen)).toBe(false);
  });

  test("what a walk saw of each racy entry's file is what counts, without a second lstat", async () => {
    const { repo, index } = await racyCheckoutRewrittenInTheSameSecond("a.txt", "HELLO\n");
    const table = readIndexTable(index.bytes, 20);
    const seenRewritten = new RacyEntryFiles(index, table);
    seenRewritten.observe(Buffer.from("a.txt"), lstatSync(join(repo, "a.txt"), { bigint: true }));
    const seenUntouched = new RacyEntryFiles(index, table);
    seenUntouched.observe(Buffer.from("a.txt"), lstatSync(join(repo, "b.txt"), { bigint: true })); // another inode: a change git sees too
    execFileSync("rm", [join(repo, "a.txt")]); // gone now: only the observations can tell
    expect(seenRewritten.gitMayHaveMissedAChange(repo)).toBe(true);
    expect(seenUntouched.gitMayHaveMissedAChange(repo)).toBe(false);
    expect(indexSizes(repo, seenRewritten.settle(repo, "sha1").bytes)["a.txt"]).toBe(0); // smudged: git re-hashes it
  });

  test("extraction still stages such a rewrite: the early staging is thrown away and done again from the settled index", async () => {
    for (let attempt = 1; ; attempt++) {
      const repo = await makeRepo({ "a.txt": "hello\n", "b.txt": "world\n", "dir/c.txt": "third file\n" });
      const root = tempDir("handoff-racy-extract");
      onTestFinished(() => removeTree(root));
      const scratch = join(root, "scratch");
      mkdirSync(scratch);
      const source = await inspectSource(repo);
      const pristine = await createPristineStore(source, scratch);
      const workspace = await createWorkspace(source, pristine, join(root, "ws"));
      const path = join(workspace.workTree, "a.txt");
      const before = lstatSync(path, { bigint: true });
      rewriteSameSizeKeepMtime(path, "HELLO\n");
      const after = lstatSync(path, { bigint: true });
      const indexSeconds = BigInt(Math.floor(workspace.baseIndex.mtimeMs / 1000));
      const racyAndHidden =
        before.mtimeNs / 1_000_000_000n >= indexSeconds && after.ctimeNs / 1_000_000_000n === before.ctimeNs / 1_000_000_000n;
      if (!racyAndHidden && attempt < 10) continue; // the rewrite landed in the next second: git would see it anyway
      const extraction = await extractPatch({ source, workspace, policy: compilePolicy(DEFAULT_POLICY), privateParent: scratch, pristine });
      expect(extraction.files.map((file) => file.path)).toEqual(["a.txt"]);
      expect(extraction.patch.toString("utf8")).toContain("+HELLO");
      return;
    }
  });
});
