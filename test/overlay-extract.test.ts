import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { type SourceRepo, inspectSource } from "../src/clone/source-repo.js";
import { type PristineStore, type Workspace, createPristineStore, fingerprintStore } from "../src/clone/workspace.js";
import { mountOverlay, overlayUnavailable, unmountOverlay } from "../src/environment/overlay.js";
import { type Extraction, extractPatch } from "../src/patch/extract.js";
import { DEFAULT_POLICY, compilePolicy } from "../src/patch/rules/policy.js";
import { readUpperChanges } from "../src/patch/upper-changes.js";
import { expectListingIsGits } from "./helpers/extract.js";
import { commitFile, makeRepo } from "./helpers/repo.js";

/**
 * Gate 3 on an overlay workspace (issue 15): the paths the agent changed are read from the overlay's upper dir, and
 * extraction restricted to them must judge the workspace exactly as the walk of the whole tree does: the same
 * patch, violations and warnings, in every test. Needs root and overlayfs; `HANDOFF_OVERLAY_TESTS=required` makes
 * their absence a failure instead of a skip.
 */
const unavailable = await overlayUnavailable(tmpdir());
if (unavailable !== null && process.env.HANDOFF_OVERLAY_TESTS === "required")
  throw new Error(`overlay mounts are required here: ${unavailable}`);
if (unavailable !== null) console.warn(`handoff tests: overlay extraction tests skipped: ${unavailable}`);

const POLICY = compilePolicy(DEFAULT_POLICY);
const hasPython = (() => {
  try {
    execFileSync("python3", ["-c", "import os; os.setxattr"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

interface OverlayWorkspace {
  readonly source: SourceRepo;
  readonly pristine: PristineStore;
  readonly workspace: Workspace;
  readonly lower: string;
  readonly upper: string;
  readonly scratch: string;
}

const mounted: string[] = [];
const roots: string[] = [];
afterEach(async () => {
  for (const merged of mounted.splice(0)) await unmountOverlay(merged);
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/**
 * An overlay view of the base commit of a repository made of `files`: lower is a checkout with its own index (the
 * environment's tree/ and index), upper and work sit in the workspace root, and `ws/.git` is handoff's gitfile.
 * `before.lower` may add to lower what a setup command would have left (untracked outputs), `before.upper` plant
 * something in upper, both before the mount.
 */
async function overlayWorkspace(
  files: Record<string, string>,
  before: { repo?: (repo: string) => void; lower?: (lower: string) => void; upper?: (upper: string) => void } = {},
): Promise<OverlayWorkspace> {
  const repo = await makeRepo(files);
  before.repo?.(repo);
  const root = mkdtempSync(join(tmpdir(), "handoff-overlay-"));
  roots.push(root);
  const source = await inspectSource(repo);
  const scratch = join(root, "scratch");
  mkdirSync(scratch);
  const pristine = await createPristineStore(source, scratch);
  const lower = join(root, "lower");
  mkdirSync(lower);
  const indexPath = join(root, "lower.index");
  const env = { ...process.env, GIT_DIR: pristine.path, GIT_WORK_TREE: lower, GIT_INDEX_FILE: indexPath };
  for (const args of [
    ["read-tree", source.baseCommit],
    ["checkout-index", "-a", "-f"],
    ["update-index", "-q", "--refresh"],
  ])
    execFileSync("git", args, { cwd: lower, env, stdio: "ignore" });
  before.lower?.(lower);

  const upper = join(root, "overlay", "upper");
  mkdirSync(upper, { recursive: true });
  before.upper?.(upper);
  const workTree = join(root, "ws");
  await mountOverlay({ lower, upper, work: join(root, "overlay", "work"), merged: workTree });
  mounted.push(workTree);
  const agentGitDir = join(root, "agent.git");
  const content = `gitdir: ${agentGitDir}\n`;
  writeFileSync(join(workTree, ".git"), content, { mode: 0o644 });
  const bytes = readFileSync(indexPath);
  const workspace: Workspace = {
    root,
    workTree,
    agentGitDir,
    home: join(root, "home"),
    tmp: join(root, "tmp"),
    baseIndex: { bytes, mtimeMs: statSync(indexPath).mtimeMs, sha256: createHash("sha256").update(bytes).digest("hex") },
    gitfile: { content, ino: lstatSync(join(workTree, ".git")).ino },
    overlay: { merged: workTree, upper, lower },
  };
  return { source, pristine, workspace, lower, upper, scratch };
}

/** The simulated agent: a shell script run in the merged view. */
function agentDoes(ov: OverlayWorkspace, script: string): void {
  execFileSync("/bin/sh", ["-c", script], { cwd: ov.workspace.workTree, stdio: "ignore" });
}

function extract(ov: OverlayWorkspace, changed: readonly Buffer[] | null, policy = POLICY): Promise<Extraction> {
  return extractPatch({
    source: ov.source,
    workspace: ov.workspace,
    policy,
    privateParent: ov.scratch,
    // git re-dates a pack it reads an object from: each extraction starts from the store as it is now.
    pristine: { path: ov.pristine.path, fingerprint: fingerprintStore(ov.pristine.path) },
    changed,
  });
}

/** What a verdict depends on: the patch, its files and listing, the violations and the warnings. */
function judged(extraction: Extraction) {
  const { patch, sha256, files, violations, warnings, listing } = extraction;
  return { patch: patch.toString("utf8"), sha256, files, violations, warnings, listing: listing.toString("latin1") };
}

/**
 * Extracts the workspace twice, from the upper dir's changes and from the whole tree, asserts both judge it alike,
 * and returns the changed paths (sorted, as text) and the extraction.
 */
async function extractBothWays(ov: OverlayWorkspace): Promise<{ changed: string[]; extraction: Extraction }> {
  const upper = readUpperChanges(ov.upper, ov.workspace.workTree, ov.lower, POLICY.maxWorkspaceEntries);
  expect(upper).not.toBeNull();
  const restricted = await extract(ov, upper!.paths);
  const whole = await extract(ov, null);
  expectListingIsGits(whole);
  expect(judged(restricted)).toEqual(judged(whole));
  return { changed: upper!.paths.map((path) => path.toString("utf8")).sort(), extraction: restricted };
}

const rules = (extraction: Extraction) => extraction.violations.map((violation) => `${violation.rule} ${violation.path}`).sort();
const patchFiles = (extraction: Extraction) => extraction.files.map((file) => `${file.change} ${file.path}`).sort();

const FILES = {
  "README.md": "# fixture\n",
  "src/app.js": "export const app = 1;\n",
  "src/util.js": "export const util = 2;\n",
  "src/deep/inner.js": "export const inner = 3;\n",
  "docs/guide.md": "guide\n",
  "docs/more/notes.md": "notes\n",
  "run.sh": "#!/bin/sh\necho run\n",
  ".gitignore": "node_modules/\n*.log\n",
};

describe.skipIf(unavailable !== null)("extraction from an overlay's upper dir", () => {
  test("an edit, an addition and a deletion: exactly those three paths, and the same patch as the whole walk", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "echo 'export const app = 42;' > src/app.js && echo new > src/new.js && rm docs/guide.md");
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toEqual(["docs/guide.md", "src/app.js", "src/new.js"]);
    expect(patchFiles(extraction)).toEqual(["added src/new.js", "deleted docs/guide.md", "modified src/app.js"]);
    expect(extraction.violations).toEqual([]);
  });

  test("a file changed and changed back: listed from upper, but no change in the patch", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "echo changed > src/app.js && echo 'export const app = 1;' > src/app.js");
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toEqual(["src/app.js"]);
    expect(extraction.files).toEqual([]);
    expect(extraction.patch.length).toBe(0);
  });

  test("a file touched, or its mode changed and put back (upper holds a copy-up of metadata alone): no change", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "touch -d '2001-01-01' README.md && chmod +x src/util.js && chmod -x src/util.js");
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toEqual(["README.md", "src/util.js"]);
    expect(extraction.files).toEqual([]);
  });

  test("a file deleted (a whiteout of the file), and a new directory with files in it", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "rm src/deep/inner.js && mkdir -p lib/nested && echo a > lib/a.js && echo b > lib/nested/b.js");
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toEqual(["lib", "src/deep/inner.js"]);
    expect(patchFiles(extraction)).toEqual(["added lib/a.js", "added lib/nested/b.js", "deleted src/deep/inner.js"]);
  });

  test("names git quotes (a quote, a backslash, non-ASCII): the patch and the listing are git's own", async () => {
    const ov = await overlayWorkspace({ ...FILES, 'docs/old "quoted".md': "old\n" });
    const at = (name: string) => join(ov.workspace.workTree, name);
    writeFileSync(at('docs/old "quoted".md'), "edited\n");
    writeFileSync(at("docs/caf\u00e9 \u00fcber.md"), "new\n");
    writeFileSync(at("back\\slash.txt"), "new\n");
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toEqual(["back\\slash.txt", "docs/caf\u00e9 \u00fcber.md", 'docs/old "quoted".md'].sort());
    expect(extraction.patch.toString("latin1")).toContain('diff --git "a/docs/old \\"quoted\\".md"');
    expect(extraction.files.map((file) => file.path)).toContain("docs/caf\u00e9 \u00fcber.md");
  });

  test("a file made a symlink and a symlink made a file (type changes), and a mode change beside an edit", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "rm README.md && ln -s docs/guide.md README.md && chmod +x src/app.js && echo more >> src/app.js");
    const { extraction } = await extractBothWays(ov);
    expect(patchFiles(extraction)).toEqual(["modified README.md", "modified src/app.js"]);
  });

  test("a new file inside a gitignored directory that holds a committed file: left out as the whole walk leaves it", async () => {
    const ov = await overlayWorkspace(
      { ...FILES, "build/keep.txt": "kept\n", "build/deep/more.txt": "more\n" },
      { repo: (repo) => commitFile(repo, ".gitignore", "build/\n") },
    );
    agentDoes(ov, "echo new > build/new.txt && echo edit > build/deep/more.txt && mkdir -p build/deep/x && echo y > build/deep/x/y.txt");
    const { extraction } = await extractBothWays(ov);
    expect(patchFiles(extraction)).toEqual(["modified build/deep/more.txt"]);
  });

  test("a whole directory removed (a whiteout of the directory): every file below it is deleted", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "rm -rf docs");
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toEqual(["docs"]);
    expect(patchFiles(extraction)).toEqual(["deleted docs/guide.md", "deleted docs/more/notes.md"]);
  });

  test("a directory removed and made again (an opaque directory): what lower had there is deleted, the new file added", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "rm -rf src && mkdir src && echo fresh > src/fresh.js");
    const { extraction } = await extractBothWays(ov);
    expect(patchFiles(extraction)).toEqual([
      "added src/fresh.js",
      "deleted src/app.js",
      "deleted src/deep/inner.js",
      "deleted src/util.js",
    ]);
  });

  test("a directory renamed (copied up whole, redirect_dir=off): deleted under the old name, added under the new", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "mv docs manual");
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toEqual(["docs", "manual"]);
    expect(patchFiles(extraction)).toEqual([
      "added manual/guide.md",
      "added manual/more/notes.md",
      "deleted docs/guide.md",
      "deleted docs/more/notes.md",
    ]);
  });

  test("a hard link to a lower file (copied up with two names): both names are hard_link violations, nothing staged", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "ln src/util.js linked.js");
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toEqual(["linked.js", "src/util.js"]);
    expect(rules(extraction)).toEqual(["hard_link linked.js", "hard_link src/util.js"]);
    expect(extraction.files).toEqual([]);
  });

  test("a symbolic link added: in the patch, and rejected as a symlink", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "ln -s /etc/passwd src/passwd");
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toEqual(["src/passwd"]);
    expect(rules(extraction)).toContain("symlink src/passwd");
  });

  test("a FIFO added: a special_file violation, and git never opens it", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "mkfifo src/pipe");
    const { extraction } = await extractBothWays(ov);
    expect(rules(extraction)).toEqual(["special_file src/pipe"]);
    expect(extraction.files).toEqual([]);
  });

  test("new content with the old size and mtime put back (touch -r): still in the patch, since upper holds it", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(
      ov,
      "cp -p src/util.js /tmp/.keep-$$ && echo 'export const util = 9;' > src/util.js && touch -r /tmp/.keep-$$ src/util.js && rm /tmp/.keep-$$",
    );
    expect(statSync(join(ov.workspace.workTree, "src/util.js")).size).toBe(FILES["src/util.js"].length);
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toEqual(["src/util.js"]);
    expect(extraction.patch.toString()).toContain("+export const util = 9;");
  });

  test("a nested repository (git init in a directory lower has): a nested_repository violation, its files not staged", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "git init -q src/deep && echo x > src/deep/extra.js");
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toEqual(["src/deep/.git", "src/deep/extra.js"]);
    expect(rules(extraction)).toEqual(["nested_repository src/deep"]);
    expect(extraction.files).toEqual([]);
  });

  test("chmod +x alone (a copy-up with the same bytes): a mode change in the patch", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "chmod +x src/app.js");
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toEqual(["src/app.js"]);
    expect(extraction.patch.toString()).toContain("new mode 100755");
  });

  test("ignored files added (node_modules/, *.log): not in the patch, named in the ignored_files_added warning", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "mkdir -p node_modules/x && echo 1 > node_modules/x/index.js && echo log > src/debug.log && echo y > src/kept.js");
    const { extraction } = await extractBothWays(ov);
    expect(patchFiles(extraction)).toEqual(["added src/kept.js"]);
    expect(extraction.warnings.map((warning) => warning.message)).toEqual([
      "ignored files are in the workspace and not in the patch: node_modules/, src/debug.log",
    ]);
  });

  test("tool caches (__pycache__/, *.pyc, .pytest_cache/, node_modules/.cache/) are left out and named apart; a tracked .pyc edited stays in the patch", async () => {
    const ov = await overlayWorkspace({ ...FILES, ".gitignore": "*.log\n", "src/__pycache__/kept.pyc": "tracked\n" });
    agentDoes(
      ov,
      [
        "echo y > src/kept.js",
        "printf 'x\\0y' > src/__pycache__/app.cpython-311.pyc",
        "echo tracked-too >> src/__pycache__/kept.pyc",
        "mkdir -p lib/__pycache__ && printf '\\0' > lib/__pycache__/m.pyc && printf '\\0' > legacy.pyc",
        "mkdir -p .pytest_cache/v && echo '{}' > .pytest_cache/v/lastfailed",
        "mkdir -p node_modules/.cache/babel && echo c > node_modules/.cache/babel/x.json",
        "echo log > debug.log",
      ].join(" && "),
    );
    const { extraction } = await extractBothWays(ov);
    expect(patchFiles(extraction)).toEqual(["added src/kept.js", "modified src/__pycache__/kept.pyc"]);
    expect(extraction.violations).toEqual([]);
    expect(extraction.warnings).toEqual([
      { path: "", rule: "ignored_files_added", message: "ignored files are in the workspace and not in the patch: debug.log" },
      {
        path: "",
        rule: "tool_caches_left_out",
        message:
          "bytecode and test-runner caches are in the workspace and not in the patch (never part of one): .pytest_cache/, legacy.pyc, lib/__pycache__/, node_modules/.cache/, src/__pycache__/app.cpython-311.pyc",
      },
    ]);
  });

  test("setup outputs in lower (an ignored node_modules/): a file added inside it and one deleted are no change", async () => {
    const ov = await overlayWorkspace(FILES, {
      lower: (lower) => {
        mkdirSync(join(lower, "node_modules", "pkg"), { recursive: true });
        writeFileSync(join(lower, "node_modules", "pkg", "index.js"), "module.exports = 1;\n");
        writeFileSync(join(lower, "node_modules", "pkg", "old.js"), "old\n");
      },
    });
    agentDoes(ov, "echo new > node_modules/pkg/new.js && rm node_modules/pkg/old.js && echo z > src/z.js");
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toEqual(["node_modules/pkg/new.js", "node_modules/pkg/old.js", "src/z.js"]);
    expect(patchFiles(extraction)).toEqual(["added src/z.js"]);
  });

  test("the entry limit counts what the base lacks, as the whole walk does: 6 new files over a limit of 5 end workspace_too_large, every base file edited does not", async () => {
    const policy = compilePolicy({ ...DEFAULT_POLICY, maxWorkspaceEntries: 5 });
    const both = async (ov: OverlayWorkspace) => {
      const upper = readUpperChanges(ov.upper, ov.workspace.workTree, ov.lower, POLICY.maxWorkspaceEntries);
      const [restricted, whole] = [await extract(ov, upper!.paths, policy), await extract(ov, null, policy)];
      expect(judged(restricted)).toEqual(judged(whole));
      return rules(restricted);
    };
    const flooded = await overlayWorkspace(FILES);
    agentDoes(flooded, "mkdir new && for i in 1 2 3 4 5 6; do echo $i > new/f$i; done");
    expect(await both(flooded)).toEqual(["workspace_too_large "]);
    const edited = await overlayWorkspace(FILES);
    agentDoes(
      edited,
      "for f in README.md src/app.js src/util.js src/deep/inner.js docs/guide.md docs/more/notes.md run.sh; do echo more >> $f; done",
    );
    expect(await both(edited)).toEqual([]);
  });

  test("nothing changed: no path from upper, and an empty patch", async () => {
    const ov = await overlayWorkspace(FILES);
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toEqual([]);
    expect(extraction.patch.length).toBe(0);
    expect(extraction.violations).toEqual([]);
  });

  test("an ignored file whose name is not UTF-8: extracted as a whole (git's command line carries text), with the same verdict", async () => {
    const ov = await overlayWorkspace(FILES);
    writeFileSync(Buffer.from(`${ov.workspace.workTree}/src/caf\xe9.log`, "latin1"), "latin-1 name\n");
    agentDoes(ov, "echo y > src/kept.js");
    const { changed, extraction } = await extractBothWays(ov);
    expect(changed).toHaveLength(2);
    expect(patchFiles(extraction)).toEqual(["added src/kept.js"]);
    expect(extraction.warnings.map((warning) => warning.rule)).toEqual(["ignored_files_added"]);
  });

  test.skipIf(!hasPython)("a redirect planted in upper (trusted.overlay.redirect): no list when the view follows it", async () => {
    // A new directory whose xattr sends the kernel to lower's docs/: its view holds files upper does not.
    const ov = await overlayWorkspace(FILES, {
      upper: (upper) => {
        mkdirSync(join(upper, "manual"));
        execFileSync("python3", [
          "-c",
          "import os, sys; os.setxattr(sys.argv[1], 'trusted.overlay.redirect', b'/docs')",
          join(upper, "manual"),
        ]);
      },
    });
    const followed = existsSync(join(ov.workspace.workTree, "manual", "guide.md"));
    const upper = readUpperChanges(ov.upper, ov.workspace.workTree, ov.lower, POLICY.maxWorkspaceEntries);
    if (followed) expect(upper).toBeNull();
    else expect(upper?.paths.map(String)).toEqual(["manual"]);
  });

  test("more entries in upper than the limit: no list (the caller walks the whole tree)", async () => {
    const ov = await overlayWorkspace(FILES);
    agentDoes(ov, "echo 1 > a.js && echo 2 > b.js && echo 3 > c.js");
    expect(readUpperChanges(ov.upper, ov.workspace.workTree, ov.lower, 2)).toBeNull();
    expect(readUpperChanges(ov.upper, ov.workspace.workTree, ov.lower, 3)?.paths).toHaveLength(3);
  });
});
