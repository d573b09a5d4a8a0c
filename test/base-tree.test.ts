import { execFileSync } from "node:child_process";
import { lstatSync, readFileSync, truncateSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { readBaseTree } from "../src/clone/base-tree.js";
import { makeRepo } from "./helpers/repo.js";

/** The index of a fixture checkout, read as extraction reads the one it kept before the agent ran. */
function baseOf(repo: string) {
  return readBaseTree(readFileSync(join(repo, ".git", "index")), "sha1");
}

const stats = (path: string) => lstatSync(path, { bigint: true });

describe("what the base checkout held, read from its index", () => {
  test("counts the base's files and knows its directories", async () => {
    const repo = await makeRepo({ "a.js": "", "a-b/x": "", "a/b/c/d.txt": "", "a/b/e.txt": "", "a/bc/f": "", "b/g": "", z: "" });
    const base = baseOf(repo);
    expect(base.entries).toBe(7);
    for (const dir of ["a", "a/b", "a/b/c", "a/bc", "a-b", "b"]) expect(base.hasDirectory(Buffer.from(dir)), dir).toBe(true);
    for (const notDir of ["a.js", "a/b/e.txt", "a/b/c/d", "c", "a/", "b/g"])
      expect(base.hasDirectory(Buffer.from(notDir)), notDir).toBe(false);
  });

  test("knows the base's submodules (gitlinks)", async () => {
    const repo = await makeRepo({ "a.js": "" });
    const head = execFileSync("git", ["-C", repo, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
    execFileSync("git", ["-C", repo, "update-index", "--add", "--cacheinfo", `160000,${head},vendor/lib`]);
    expect([...baseOf(repo).gitlinks]).toEqual(["vendor/lib"]);
  });

  test("a committed file is exempt from the size limit only while it holds its checked-out bytes", async () => {
    const repo = await makeRepo({ "big.bin": "x".repeat(5000), "small.txt": "s" });
    const base = baseOf(repo);
    const big = join(repo, "big.bin");
    const unchanged = (path: string) => base.unchanged(Buffer.from(path), Buffer.from(join(repo, path)), stats(join(repo, path)));
    expect(unchanged("big.bin")).toBe(true);
    utimesSync(big, new Date(), new Date()); // touched, not changed: its bytes still hash to the base's blob
    expect(unchanged("big.bin")).toBe(true);
    writeFileSync(big, "y".repeat(5000)); // same size, other bytes
    expect(unchanged("big.bin")).toBe(false);
    truncateSync(big, 5001);
    expect(unchanged("big.bin")).toBe(false);
    writeFileSync(join(repo, "new.bin"), "x".repeat(5000));
    expect(unchanged("new.bin")).toBe(false);
  });

  test("an index it cannot read exempts nothing", () => {
    const base = readBaseTree(Buffer.from("not an index at all, just bytes"), "sha1");
    expect(base.entries).toBe(0);
    expect(base.hasDirectory(Buffer.from("a"))).toBe(false);
  });
});
