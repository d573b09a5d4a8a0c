import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, renameSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { stampTrees, stampTreesInBackground } from "../src/environment/tree-stamps.js";
import { tempDir } from "./helpers/repo.js";

/**
 * Issue 32: an environment's fingerprint and newest ctime are read by one `find` process; Node's own lstat walk, used
 * where GNU find is missing, must give exactly the same stamps, or an environment built on one would be refused (or,
 * worse, a change missed) by the other.
 */

function variedTree(): string {
  const root = tempDir("handoff-stamps");
  const tree = join(root, "tree");
  mkdirSync(join(tree, "node_modules", "left-pad", "lib"), { recursive: true });
  mkdirSync(join(tree, "empty"));
  mkdirSync(join(root, "home", ".npm"), { recursive: true });
  writeFileSync(join(tree, "package.json"), "{}\n");
  writeFileSync(join(tree, "node_modules", "left-pad", "index.js"), "module.exports = 1;\n");
  writeFileSync(join(tree, "node_modules", "left-pad", "lib", "big.bin"), Buffer.alloc(70_000, 7));
  writeFileSync(join(tree, "name with\nnewline"), "x");
  writeFileSync(join(tree, "caf\u00e9"), "y");
  writeFileSync(Buffer.concat([Buffer.from(`${tree}/raw-`), Buffer.from([0xff, 0xfe])]), "z");
  symlinkSync("node_modules/left-pad", join(tree, "link"));
  symlinkSync("/nowhere", join(tree, "dangling"));
  execFileSync("mkfifo", [join(tree, "fifo")]);
  writeFileSync(join(tree, "setuid"), "#!/bin/sh\n");
  chmodSync(join(tree, "setuid"), 0o4755);
  chmodSync(join(tree, "empty"), 0o1777);
  writeFileSync(join(root, "home", ".npmrc"), "cache=x\n");
  return root;
}

describe("the stamps of an environment's tree/ and home/", () => {
  test("find and Node's walk give the same digest, newest ctime, count and size", () => {
    const root = variedTree();
    const byFind = stampTrees(root, ["tree", "home"], "find");
    const byWalk = stampTrees(root, ["tree", "home"], "walk");
    expect(byFind.readBy).toBe("find");
    expect(byWalk.readBy).toBe("walk");
    expect({ ...byFind, readBy: null, findDigest: null }).toEqual({ ...byWalk, readBy: null });
    expect(byFind.findDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(byWalk.findDigest).toBeNull();
    expect(byFind.entries).toBe(16);
    expect(byFind.newestCtimeNs).toBeGreaterThan(0n);
  });

  test("read in the background (find as a child the event loop does not wait on), the stamps are the same", async () => {
    const root = variedTree();
    const inBackground = await stampTreesInBackground(root, ["tree", "home"]);
    expect(inBackground.readBy).toBe("find");
    expect(inBackground).toEqual(stampTrees(root, ["tree", "home"], "find"));
    const withMissing = await stampTreesInBackground(root, ["tree", "missing"]);
    expect(withMissing).toEqual(stampTrees(root, ["tree", "missing"]));
  });

  test("a part that does not exist has no entries, and the digest says which part an entry is in", () => {
    const root = variedTree();
    const withMissing = stampTrees(root, ["tree", "missing"]);
    expect(withMissing.digest).toBe(stampTrees(root, ["tree"]).digest);
    expect(withMissing.entries).toBe(14);
    expect(stampTrees(root, ["home"]).digest).not.toBe(stampTrees(root, ["tree"]).digest);
  });

  test("any write in place shows: content of the same size, a chmod, a new file deep down", () => {
    const root = variedTree();
    const before = stampTrees(root, ["tree", "home"]);
    // File times come from the kernel's coarse clock: a write in the same tick as the tree's making keeps its ctime.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    writeFileSync(join(root, "tree", "node_modules", "left-pad", "index.js"), "module.exports = 2;\n");
    const rewritten = stampTrees(root, ["tree", "home"]);
    expect(rewritten.digest).not.toBe(before.digest);
    expect(rewritten.newestCtimeNs).toBeGreaterThan(before.newestCtimeNs);
    chmodSync(join(root, "tree", "package.json"), 0o600);
    const chmodded = stampTrees(root, ["tree", "home"]);
    expect(chmodded.digest).not.toBe(rewritten.digest);
    writeFileSync(join(root, "tree", "node_modules", "left-pad", "lib", "new.js"), "");
    expect(stampTrees(root, ["tree", "home"]).entries).toBe(before.entries + 1);
  });

  test("find prints the same of a tree moved elsewhere: its digest of find's output does not depend on the root", () => {
    const root = variedTree();
    const before = stampTrees(root, ["tree", "home"]);
    const moved = `${root}-moved`;
    renameSync(root, moved);
    try {
      expect(stampTrees(moved, ["tree", "home"])).toEqual(before);
    } finally {
      renameSync(moved, root);
    }
  });

  test("stamps known from an earlier read are taken as they are only when find prints exactly the same", async () => {
    const root = variedTree();
    const before = stampTrees(root, ["tree", "home"]);
    // A stand-in with the same find digest and another fingerprint: returned as it is, so nothing was parsed.
    const known = { ...before, digest: "known" };
    expect(stampTrees(root, ["tree", "home"], "find", known).digest).toBe("known");
    expect((await stampTreesInBackground(root, ["tree", "home"], known)).digest).toBe("known");
    // Content of the same size with its mtime put back: the ctime moved, so find prints something else and it is read whole.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    const file = join(root, "tree", "node_modules", "left-pad", "index.js");
    writeFileSync(file, "module.exports = 3;\n");
    utimesSync(
      file,
      new Date(Number(before.newestCtimeNs / 1_000_000n) - 60_000),
      new Date(Number(before.newestCtimeNs / 1_000_000n) - 60_000),
    );
    const after = stampTrees(root, ["tree", "home"], "find", known);
    expect(after.digest).not.toBe("known");
    expect(after.digest).not.toBe(before.digest);
    expect(after.newestCtimeNs).toBeGreaterThan(before.newestCtimeNs);
    expect(await stampTreesInBackground(root, ["tree", "home"], known)).toEqual(after);
    // Read by the walk (no find output to compare), known stamps are never taken.
    expect(stampTrees(root, ["tree", "home"], "walk", { ...after, digest: "known" }).digest).toBe(after.digest);
  });
});
