import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { readBaseTree } from "../src/clone/base-tree.js";
import { preflightStaging } from "../src/patch/staging-preflight.js";
import { scanWorkspace } from "../src/patch/workspace-scan.js";

const gitMayStageEarly = (ws: string, policy: typeof POLICY) => preflightStaging(ws, policy).mayStageEarly;
import { makeRepo, tempDir } from "./helpers/repo.js";

const POLICY = { maxWorkspaceEntries: 100, maxDepth: 8, maxFileBytes: 1024 };

/** A workspace like a clone: handoff's `.git` gitfile at the top, some source, an ordinary `.gitignore`. */
function workspace(): string {
  const ws = tempDir("handoff-preflight");
  writeFileSync(join(ws, ".git"), "gitdir: /elsewhere\n");
  writeFileSync(join(ws, ".gitignore"), "node_modules/\n");
  mkdirSync(join(ws, "src", "lib"), { recursive: true });
  writeFileSync(join(ws, "src", "lib", "math.js"), "export const add = (a, b) => a + b;\n");
  return ws;
}

// The case where git starts early and the scan then finds a path to leave out (the early staging is thrown away
// and done again) is run end to end by threats-filesystem.test.ts, "F6: rejects a hard link … out of the patch".
describe("letting git stage while the workspace scan runs", () => {
  test("an ordinary workspace lets git start at once", () => {
    expect(gitMayStageEarly(workspace(), POLICY)).toBe(true);
  });

  test("a FIFO named .gitignore, where git would block, makes git wait for the scan", () => {
    const ws = workspace();
    execFileSync("mkfifo", [join(ws, "src", ".gitignore")]);
    expect(gitMayStageEarly(ws, POLICY)).toBe(false);
  });

  test("an oversized .gitattributes, which git would read whole, makes git wait for the scan", () => {
    const ws = workspace();
    writeFileSync(join(ws, "src", ".gitattributes"), "");
    truncateSync(join(ws, "src", ".gitattributes"), POLICY.maxFileBytes + 1);
    expect(gitMayStageEarly(ws, POLICY)).toBe(false);
  });

  test("a nested repository below the top makes git wait for the scan", () => {
    const ws = workspace();
    mkdirSync(join(ws, "src", "vendor", ".git"), { recursive: true });
    expect(gitMayStageEarly(ws, POLICY)).toBe(false);
  });

  test("a tree over the entry or depth limit makes git wait for the scan", () => {
    const wide = workspace();
    for (let i = 0; i < POLICY.maxWorkspaceEntries; i++) writeFileSync(join(wide, `f${i}`), "");
    expect(gitMayStageEarly(wide, POLICY)).toBe(false);
    const deep = workspace();
    mkdirSync(join(deep, ...Array.from({ length: POLICY.maxDepth }, (_, i) => `d${i}`)), { recursive: true });
    expect(gitMayStageEarly(deep, POLICY)).toBe(false);
  });

  test("a committed tree deeper than the depth limit, or a committed oversized .gitattributes, still lets git start at once", async () => {
    const deep = Array.from({ length: POLICY.maxDepth + 2 }, (_, i) => `d${i}`).join("/");
    const repo = await makeRepo({ [`${deep}/keep.txt`]: "", "src/.gitattributes": `# ${"x".repeat(POLICY.maxFileBytes)}\n` });
    const base = readBaseTree(readFileSync(join(repo, ".git", "index")), "sha1");
    expect(preflightStaging(repo, POLICY).mayStageEarly).toBe(false);
    expect(preflightStaging(repo, POLICY, base).mayStageEarly).toBe(true);
    mkdirSync(join(repo, deep, "new"));
    expect(preflightStaging(repo, POLICY, base).mayStageEarly).toBe(false);
  });

  test("hands the names it read to the scan, which then finds exactly what it finds reading them itself", async () => {
    const ws = workspace();
    execFileSync("mkfifo", [join(ws, "src", "pipe")]);
    execFileSync("ln", [join(ws, "src", "lib", "math.js"), join(ws, "src", "twin.js")]);
    writeFileSync(join(ws, "src", "big.bin"), "");
    truncateSync(join(ws, "src", "big.bin"), POLICY.maxFileBytes + 1);
    const preflight = preflightStaging(ws, POLICY);
    expect(preflight.mayStageEarly).toBe(true);
    expect(preflight.listings?.get(join(ws, "src"))).toEqual(["big.bin", "lib", "pipe", "twin.js"]);
    const withListings = await scanWorkspace(ws, POLICY, () => {}, preflight.listings ?? undefined);
    const reading = await scanWorkspace(ws, POLICY);
    expect(withListings).toEqual(reading);
    expect(reading.findings.map((finding) => finding.rule).sort()).toEqual(["file_too_large", "hard_link", "hard_link", "special_file"]);
  });
});

describe("the scan walking an ignored directory lightly (no lstat of its files)", () => {
  /** What extraction keeps of a scan: the findings outside `node_modules/` (ignored whole), the fatal one, the count. */
  const kept = (scan: Awaited<ReturnType<typeof scanWorkspace>>) => ({
    findings: scan.findings.filter((finding) => !finding.rawPath.toString("latin1").startsWith("node_modules/")),
    fatal: scan.fatal,
    entries: scan.entries,
  });
  const policy = { maxWorkspaceEntries: 1000, maxDepth: 8, maxFileBytes: 1024 };
  const ignoredWhole = (relPath: Buffer) => relPath.toString("latin1") === "node_modules";

  /** Every kind of entry the scan has a rule for, inside the ignored directory and beside it. */
  function hostileTree(): string {
    const ws = workspace();
    for (const dir of ["node_modules/pkg/deep", "node_modules/sub", "src"]) mkdirSync(join(ws, dir), { recursive: true });
    for (const dir of ["node_modules", "node_modules/pkg", "src"]) {
      writeFileSync(join(ws, dir, "big.bin"), Buffer.alloc(2048));
      writeFileSync(join(ws, dir, "orig.txt"), "x\n");
      execFileSync("ln", [join(ws, dir, "orig.txt"), join(ws, dir, "hard.txt")]);
      execFileSync("mkfifo", [join(ws, dir, "fifo")]);
      execFileSync("ln", ["-s", "/etc/passwd", join(ws, dir, ".gitmodules")]);
      writeFileSync(join(ws, dir, Buffer.from("bad\nname\xff", "latin1").toString("latin1")), "x");
      writeFileSync(join(ws, dir, "GIT~1"), "x");
    }
    writeFileSync(join(ws, "node_modules", "sub", ".git"), "gitdir: /elsewhere\n");
    return ws;
  }

  test("finds what extraction keeps exactly as the full walk does, on a hostile tree", async () => {
    const ws = hostileTree();
    const full = await scanWorkspace(ws, policy);
    const light = await scanWorkspace(ws, policy, undefined, undefined, undefined, undefined, null, undefined, undefined, ignoredWhole);
    expect(kept(full).findings.length).toBeGreaterThan(4);
    expect(kept(light)).toEqual(kept(full));
    // What only an lstat tells (hard links, sizes) is not looked for in the ignored directory; the rest is.
    const named = (scan: typeof full) => scan.findings.map((finding) => `${finding.rule} ${finding.path}`);
    expect(named(light)).toContain("special_file node_modules/pkg/fifo");
    expect(named(full)).toContain("hard_link node_modules/pkg/hard.txt");
    expect(named(light)).not.toContain("hard_link node_modules/pkg/hard.txt");
  });

  test("the .gitignore git would block on, and the limits, are still found inside it", async () => {
    const fifo = hostileTree();
    execFileSync("mkfifo", [join(fifo, "node_modules", "pkg", "deep", ".gitignore")]);
    const tooMany = hostileTree();
    for (let i = 0; i < 40; i++) writeFileSync(join(tooMany, "node_modules", "pkg", `f${i}`), "");
    const tooDeep = hostileTree();
    mkdirSync(join(tooDeep, "node_modules", "a", "b", "c", "d", "e", "f", "g", "h"), { recursive: true });
    for (const [ws, limits] of [
      [fifo, policy],
      [tooMany, { ...policy, maxWorkspaceEntries: 40 }],
      [tooDeep, policy],
    ] as const) {
      const full = await scanWorkspace(ws, limits);
      const light = await scanWorkspace(ws, limits, undefined, undefined, undefined, undefined, null, undefined, undefined, ignoredWhole);
      expect(full.fatal).not.toBeNull();
      expect(kept(light)).toEqual(kept(full));
    }
  });
});
