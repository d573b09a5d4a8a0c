import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { overlayUnavailable } from "../src/environment/overlay.js";
import { walkTree } from "../src/lib/fs-walk.js";
import { readFileSafely } from "../src/lib/safe-read.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { extractAfter } from "./helpers/extract.js";
import { agent, delegate, delegateWithoutSandbox } from "./helpers/run.js";
import { FIX_LINE, agentWith, expectRejected, expectVerifiedFix, patchPaths } from "./helpers/verdicts.js";

/**
 * docs/threat-model.md, rows F: filesystem objects an agent can leave in the clone. Every hostile agent also makes the
 * legitimate fix, so a rejected run still has a patch to save. Nothing here may hang: handoff walks with lstat and
 * never follows a link or opens a special file.
 */
const VERIFY = { verify: ["npm test"] };
const overlay = (await overlayUnavailable(tmpdir())) === null;

/** Whether this process may create device nodes (root with CAP_MKNOD, outside a user namespace). */
function canMknod(): boolean {
  const dir = mkdtempSync(join(tmpdir(), "mknod-probe-"));
  try {
    execFileSync("mknod", [join(dir, "probe"), "c", "1", "3"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("F1 symlinks in the patch", () => {
  test("F1: rejects symlinks whose targets leave the clone, without reading the target", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("writes-escaping-symlink.sh"), VERIFY);
    expectRejected(run, "symlink", "escape");
    expect(run.result.policy.violations).toContainEqual(expect.objectContaining({ rule: "symlink", path: "passwd" }));
    expect(run.patch).not.toContain("root:x:0:0");
  });

  test("F1: rejects a symlink even when its target stays inside the clone", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    // The rule on extraction alone; the escaping links above run it end to end.
    const run = await extractAfter(repo, agent("writes-in-tree-symlink.sh"));
    expect(run.extraction.violations).toContainEqual(expect.objectContaining({ rule: "symlink", path: "alias.js" }));
    expect(run.patch).toContain(FIX_LINE);
  });
});

describe("F2 symlink then write-through", () => {
  test("F2: a file written through a symlinked directory is not in the patch; the link is rejected", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("writes-through-a-symlink.sh"), VERIFY);
    expectRejected(run, "symlink", "lnk");
    expect(patchPaths(run)).toEqual(["lnk", "math.js"]);
    expect(run.patch).not.toContain("owned");
  });
});

describe("F3 symlinks the runner could follow", () => {
  test("F3: package.json replaced by a symlink to /dev/zero is rejected without hanging", { timeout: 20_000 }, async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("writes-symlink-to-dev-zero.sh"), VERIFY);
    expectRejected(run, "symlink", "package.json");
    expect(run.patch).toContain("+/dev/zero");
  });

  test("F3: a directory symlink to / is not walked (a 200-entry walk limit is not reached)", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("links-a-directory-to-root.sh"), { ...VERIFY, limits: { maxWorkspaceEntries: 200 } });
    expectRejected(run, "symlink", "rootfs");
  });

  test("F3: readFileSafely never follows a final symlink, never blocks on a FIFO, never reads past the cap", () => {
    const dir = tempDir("safe-read");
    writeFileSync(join(dir, "small.txt"), "hello");
    writeFileSync(join(dir, "big.txt"), "x".repeat(101));
    symlinkSync("/dev/zero", join(dir, "zero"));
    symlinkSync("small.txt", join(dir, "link.txt"));
    execFileSync("mkfifo", [join(dir, "fifo")]);
    expect(readFileSafely(join(dir, "small.txt"), 100)).toEqual({ kind: "bytes", bytes: Buffer.from("hello") });
    expect(readFileSafely(join(dir, "big.txt"), 100)).toEqual({ kind: "too_large", size: 101 });
    expect(readFileSafely(join(dir, "zero"), 100)).toEqual({ kind: "not_regular" });
    expect(readFileSafely(join(dir, "link.txt"), 100)).toEqual({ kind: "not_regular" });
    expect(readFileSafely(join(dir, "fifo"), 100)).toEqual({ kind: "not_regular" });
    expect(readFileSafely("/dev/zero", 100)).toEqual({ kind: "not_regular" });
    expect(readFileSafely(join(dir, "missing"), 100)).toMatchObject({ kind: "unreadable", message: "ENOENT" });
  });
});

describe("F4 links that point back into the tree", () => {
  test("F4: symlink loops (d/up -> .., loop -> .) are rejected and the walk ends", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("links-a-directory-into-itself.sh"), VERIFY);
    expectRejected(run, "symlink", "d/up");
    expect(run.result.policy.violations).toContainEqual(expect.objectContaining({ rule: "symlink", path: "loop" }));
  });

  test("F4: the lstat walk reports a looping link once and never descends into it", () => {
    const dir = tempDir("walk");
    mkdirSync(join(dir, "d"));
    writeFileSync(join(dir, "d", "f.txt"), "x");
    symlinkSync("..", join(dir, "d", "up"));
    symlinkSync(".", join(dir, "loop"));
    const seen: string[] = [];
    const summary = walkTree(dir, { onEntry: ({ relPath }) => void seen.push(relPath.toString()) });
    expect(seen.sort()).toEqual(["d", "d/f.txt", "d/up", "loop"]);
    expect(summary).toMatchObject({ entries: 4, cutShort: null, tooDeep: [] });
  });
});

describe("F5 copying a workspace with fs.cp", () => {
  test("F5: handoff never copies a tree with fs.cp / fs.cpSync", () => {
    const root = resolve(import.meta.dirname, "..");
    for (const dir of ["src", "backends"]) {
      const files = readdirSync(join(root, dir), { recursive: true, encoding: "utf8" }).filter((n) => n.endsWith(".ts"));
      expect(files.length).toBeGreaterThan(dir === "src" ? 50 : 5);
      for (const name of files) {
        const text = readFileSync(join(root, dir, name), "utf8");
        expect(text, `${dir}/${name}`).not.toMatch(/\bcp(Sync)?\s*[,(}]|fs\.cp\b|fs\/promises.*\bcp\b/u);
      }
    }
  });
});

// In a copied workspace the agent can make these links; in an overlay view the kernel refuses any hard link across
// the mount (EXDEV), so the same attacks fail at the agent's `ln` (tested below).
describe("F6 hard links", () => {
  const COPIED = { ...VERIFY, workspaceMode: "copy" } as const;

  test("F6: rejects a hard link to a file outside the clone and leaves it out of the patch", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, agent("hard-links-a-home-file.sh"), COPIED);
    expectRejected(run, "hard_link", "linked.txt");
    expect(patchPaths(run)).toEqual(["math.js"]);
  });

  test("F6: writing through a hard link into the source ends source_repository_changed, the link flagged", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, agent("hard-links-a-source-file.sh"), COPIED);
    expect(run.result.terminalReason).toBe("source_repository_changed");
    expect(run.result.sourceInvariant).toEqual({ matched: false, changed: ["math.js"] });
    expect(run.sourceChanged).toEqual(["math.js"]);
    expect(run.result.policy.violations).toContainEqual(expect.objectContaining({ rule: "hard_link", path: "math.js" }));
    expect(run.result.verification.ran).toBe(false);
    expect(run.payloadsRan).toEqual([]);
  });

  test.skipIf(!overlay)("F6 (overlay view): a hard link to the source cannot be made, so nothing is written through one", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, agent("hard-links-a-source-file.sh"), { ...VERIFY, workspaceMode: "overlay" });
    expect(run.sourceChanged).toEqual([]);
    expect(run.result.sourceInvariant.matched).toBe(true);
    // The agent's `ln` failed (EXDEV); the math.js it then wrote is an ordinary new file in its view.
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    expect(run.result.policy.violations).toEqual([]);
  });
});

describe("F7 object files shared with the source", () => {
  test("F7: the clone shares no object file with the source; corrupting every reachable object leaves it intact", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, agent("corrupts-reachable-objects.sh"), VERIFY);
    expect(run.result.agent.finalMessage).toBe("source object link count: 1");
    expect(run.sourceChanged).toEqual([]);
    expect(run.payloadsRan).toEqual([]);
    execFileSync("git", ["-C", repo, "fsck", "--strict", "--no-dangling"], { stdio: "pipe" });
    expectVerifiedFix(run);
  });
});

describe("F8 shared config, hooks and refs", () => {
  test("F8: config, refs and hooks the agent sets in its clone reach neither the source nor handoff's git", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const configBefore = readFileSync(join(repo, ".git", "config"), "utf8");
    const run = await delegate(repo, agent("changes-its-clone-config.sh"), VERIFY);
    expect(run.result.terminalReason).toBe("verified");
    expect(patchPaths(run)).toEqual(["math.js"]);
    expect(readFileSync(join(repo, ".git", "config"), "utf8")).toBe(configBefore);
    expect(run.sourceChanged).toEqual([]);
    expect(run.payloadsRan).toEqual([]);
  });

  test("F8: handoff never creates a git worktree", () => {
    const root = resolve(import.meta.dirname, "..");
    for (const dir of ["src", "backends"]) {
      for (const name of readdirSync(join(root, dir)).filter((n) => n.endsWith(".ts"))) {
        expect(readFileSync(join(root, dir, name), "utf8"), `${dir}/${name}`).not.toMatch(/["']worktree["']/u);
      }
    }
  });
});

describe("F9 FIFOs, sockets and device nodes", () => {
  test("F9: rejects a FIFO without opening it", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("makes-fifo.sh"), VERIFY);
    expectRejected(run, "special_file", "pipe");
    expect(run.result.policy.violations[0]?.message).toContain("fifo");
  });

  test("F9: rejects a Unix socket", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    // The rule on extraction alone; the FIFO above runs it end to end.
    const run = await extractAfter(repo, agent("makes-socket.sh"));
    expect(run.extraction.violations).toContainEqual(expect.objectContaining({ rule: "special_file", path: "sock" }));
    expect(run.patch).toContain(FIX_LINE);
  });

  test.skipIf(!canMknod())("F9: rejects a character device a root agent made", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, agent("makes-device-node.sh"), VERIFY);
    expectRejected(run, "special_file", "dev-null");
    expect(run.result.policy.violations[0]?.message).toContain("char device");
  });

  test("F9: a FIFO under an ignored directory is not in the patch, not read, and reported as ignored", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("makes-fifo-in-ignored-dir.sh"), VERIFY);
    expect(run.result.terminalReason).toBe("verified");
    expect(patchPaths(run)).toEqual(["math.js"]);
    expect(run.result.policy.warnings).toContainEqual(
      expect.objectContaining({ rule: "ignored_files_added", message: expect.stringContaining("node_modules/") }),
    );
    expect(run.sourceChanged).toEqual([]);
  });
});

describe("F10 huge files, many files, deep trees", () => {
  test("F10: a 20 GiB sparse file ends file_too_large and is never staged", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("writes-huge-sparse-file.sh"), VERIFY);
    expectRejected(run, "file_too_large", "huge.bin");
    expect(run.result.policy.violations[0]?.message).toContain(String(20 * 1024 ** 3));
    expect(patchPaths(run)).toEqual(["math.js"]);
  });

  test("F10: more changed files than maxFiles ends too_many_files", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    // The limits on extraction alone; the sparse file above runs a limit end to end.
    const run = await extractAfter(repo, agentWith("writes-many-files.sh", "30"), { maxFiles: 10 });
    expect(run.extraction.violations).toContainEqual(expect.objectContaining({ rule: "too_many_files", path: "" }));
    expect(run.extraction.violations[0]?.message).toContain("31 changed files");
    expect(run.patch).toContain(FIX_LINE);
  });

  test("F10: a workspace over maxWorkspaceEntries stops the walk before git runs (workspace_too_large)", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await extractAfter(repo, agentWith("writes-many-files.sh", "30"), { maxWorkspaceEntries: 20 });
    expect(run.extraction.violations).toContainEqual(expect.objectContaining({ rule: "workspace_too_large", path: "" }));
    expect(run.patch).toBe("");
  });

  test("F10: a tree deeper than maxDepth ends workspace_too_deep", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await extractAfter(repo, agentWith("writes-deep-tree.sh", "12"), { maxDepth: 8 });
    expect(run.extraction.violations).toContainEqual(expect.objectContaining({ rule: "workspace_too_deep", path: "deep/d/d/d/d/d/d/d" }));
    expect(run.patch).toBe("");
  });

  test("F10: the sparse file really is sparse (the test costs no disk)", () => {
    const dir = tempDir("sparse");
    execFileSync("truncate", ["-s", "20G", join(dir, "huge.bin")]);
    const stats = statSync(join(dir, "huge.bin"));
    expect(stats.size).toBe(20 * 1024 ** 3);
    expect(stats.blocks).toBe(0);
  });
});
