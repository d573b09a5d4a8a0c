import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { blobAt } from "../src/verify/changed-inputs.js";
import { gitIn, makeRepo } from "./helpers/repo.js";

/** blobAt: a file of a commit read from the object store, bounded, and null for anything that is not a readable blob. */
describe("blobAt", () => {
  test("a blob whole, bytes as committed; null for a missing path or a directory", async () => {
    const content = Buffer.from([0x23, 0x21, 0x00, 0xff, 0x0a, 0x0a]);
    const repo = await makeRepo({ "dir/a file.sh": "echo hi\n", empty: "" });
    writeFileSync(join(repo, "bin.dat"), content);
    gitIn(repo, "add", "-A");
    gitIn(repo, "commit", "-q", "-m", "bytes");
    const target = { gitDir: join(repo, ".git"), workTree: repo, cwd: repo };
    const head = gitIn(repo, "rev-parse", "HEAD").trim();
    expect(await blobAt(target, `${head}:bin.dat`)).toEqual(content);
    expect((await blobAt(target, `${head}:dir/a file.sh`))?.toString()).toBe("echo hi\n");
    expect(await blobAt(target, `${head}:empty`)).toEqual(Buffer.alloc(0));
    expect(await blobAt(target, `${head}:missing file`)).toBeNull();
    expect(await blobAt(target, `${head}:dir`)).toBeNull();
  });

  test("a blob over 4 MiB is not read: null", async () => {
    const repo = await makeRepo({ "small.txt": "x\n" });
    writeFileSync(join(repo, "big.sh"), Buffer.alloc(4 * 1024 * 1024 + 1, 0x61));
    gitIn(repo, "add", "-A");
    gitIn(repo, "commit", "-q", "-m", "big");
    const target = { gitDir: join(repo, ".git"), workTree: repo, cwd: repo };
    const head = gitIn(repo, "rev-parse", "HEAD").trim();
    expect(await blobAt(target, `${head}:big.sh`)).toBeNull();
    expect((await blobAt(target, `${head}:small.txt`))?.toString()).toBe("x\n");
  });

  test("a path with a newline is read too", async () => {
    const repo = await makeRepo({ "a.txt": "a\n" });
    writeFileSync(join(repo, "new\nline.sh"), "echo nl\n");
    gitIn(repo, "add", "-A");
    gitIn(repo, "commit", "-q", "-m", "newline");
    const target = { gitDir: join(repo, ".git"), workTree: repo, cwd: repo };
    const head = gitIn(repo, "rev-parse", "HEAD").trim();
    expect((await blobAt(target, `${head}:new\nline.sh`))?.toString()).toBe("echo nl\n");
  });
});
