import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import fg from "fast-glob";
import { simpleGit } from "simple-git";
import { onTestFinished } from "vitest";

/** A temp directory removed when the current test finishes. */
export function tempDir(label = "handoff-test"): string {
  const dir = mkdtempSync(join(tmpdir(), `${label}-`));
  // Retried: a process the test started (a browser's helper) may still be closing a file inside it.
  onTestFinished(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5 }));
  return dir;
}

/**
 * A fixture repository the test trusts (simple-git is fine here: the repo is ours, not the agent's).
 * Files are written, committed on `main` with a local identity, and no background maintenance.
 */
export async function makeRepo(files: Record<string, string>, options: { dir?: string } = {}): Promise<string> {
  const dir = options.dir ?? join(tempDir("handoff-src"), "repo");
  mkdirSync(dir, { recursive: true });
  const git = simpleGit(dir);
  await git.init(["-q", "-b", "main"]);
  await git.addConfig("user.name", "Fixture");
  await git.addConfig("user.email", "fixture@example.invalid");
  await git.addConfig("commit.gpgSign", "false");
  await git.addConfig("maintenance.auto", "false");
  await git.addConfig("gc.auto", "0");
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  await git.add(["-A"]);
  await git.commit("fixture");
  return dir;
}

/** A small node project whose test fails until `add` adds. */
export const FAILING_ADD_PROJECT: Record<string, string> = {
  "package.json": `${JSON.stringify({ name: "fixture", type: "module", scripts: { test: "node test.js" } }, null, 2)}\n`,
  "math.js": "export function add(a, b) {\n  return a - b;\n}\n",
  "test.js":
    'import { add } from "./math.js";\nif (add(2, 2) !== 4) {\n  console.error("FAIL: add(2, 2) =", add(2, 2));\n  process.exit(1);\n}\nconsole.log("ok");\n',
  ".gitignore": "node_modules/\n",
};

/**
 * Every entry under `dir` (including .git, ignored files and directories) with its type, mode, mtime, ctime,
 * inode and content hash: two equal fingerprints mean the tree is byte-identical and untouched.
 */
export function fingerprintTree(dir: string): Map<string, string> {
  const entries = fg.sync("**", { cwd: dir, dot: true, onlyFiles: false, followSymbolicLinks: false, markDirectories: false });
  const map = new Map<string, string>();
  for (const rel of entries.sort()) {
    const abs = join(dir, rel);
    const stats = lstatSync(abs, { bigint: true });
    let content = "";
    if (stats.isFile()) content = createHash("sha256").update(readFileSync(abs)).digest("hex");
    else if (stats.isSymbolicLink()) content = `-> ${readlinkSync(abs)}`;
    map.set(rel, `${stats.mode} ${stats.size} ${stats.mtimeNs} ${stats.ctimeNs} ${stats.ino} ${content}`);
  }
  return map;
}

export function diffFingerprints(before: Map<string, string>, after: Map<string, string>): string[] {
  const changed: string[] = [];
  for (const [key, value] of before) if (after.get(key) !== value) changed.push(key);
  for (const key of after.keys()) if (!before.has(key)) changed.push(key);
  return changed;
}

/** Plain git in a test's own repository (never the agent's). */
export function gitIn(repo: string, ...args: string[]): string {
  return execFileSync("git", ["-C", repo, ...args], { encoding: "utf8" });
}

/** Writes `path` in `repo` and commits it on its own. */
export function commitFile(repo: string, path: string, content: string | Buffer): void {
  writeFileSync(join(repo, path), content);
  gitIn(repo, "add", "--", path);
  gitIn(repo, "commit", "-q", "-m", `edit ${path}`);
}
