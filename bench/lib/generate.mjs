import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { GIT_ENV, git, gitOut } from "./git.mjs";
import { seededRandom } from "./random.mjs";
import { TEXT_EXTENSIONS, binaryContent, editedContent, textContent } from "./synthetic-content.mjs";

/**
 * The three synthetic repositories of docs/performance.md#the-repositories, deterministic from a seed: lognormal file sizes scaled to
 * the target total, 3% binary files (plus one 1–6 MB binary per 4,000 files), a random tree up to 8 deep with about
 * 16 files per directory, an import plus 4 commits (each modifies 1%, adds 0.2%, deletes 0.1% of the files), then
 * a working state: dirty tracked files, untracked files and an ignored node_modules tree.
 * History is written with `git fast-import` (one pack, no loose objects), then checked out.
 */
export const REPO_SPECS = {
  small: { files: 500, totalBytes: 5e6, ignored: 2000, untracked: 20, dirty: 5, seed: 1 },
  medium: { files: 10_000, totalBytes: 150e6, ignored: 20_000, untracked: 50, dirty: 10, seed: 2 },
  large: { files: 80_000, totalBytes: 1024e6, ignored: 20_000, untracked: 50, dirty: 10, seed: 3 },
};

/** Bump when the generator changes: cached repositories of another version are rebuilt. */
const GENERATOR_VERSION = 1;
const MAX_TEXT_FILE = 2_500_000;
const EPOCH = 1_700_000_000;

/** Returns the repository's path, building it unless an intact copy from the same spec is cached. */
export async function ensureRepo(name, reposDir, log) {
  const spec = REPO_SPECS[name];
  const path = join(reposDir, name);
  const metaPath = join(reposDir, `${name}.json`);
  const wanted = { version: GENERATOR_VERSION, spec };
  if (existsSync(metaPath) && existsSync(path)) {
    const meta = JSON.parse(readFileSync(metaPath, "utf8"));
    if (JSON.stringify(meta.wanted) === JSON.stringify(wanted) && (await intact(path, meta, spec))) return { path, ...meta.facts };
  }
  log(`generating the ${name} repository (${spec.files} files, ${Math.round(spec.totalBytes / 1e6)} MB; cached for later runs)…`);
  const started = Date.now();
  rmSync(path, { recursive: true, force: true });
  rmSync(metaPath, { force: true });
  const facts = await buildRepo(path, spec);
  writeFileSync(metaPath, JSON.stringify({ wanted, facts }, null, 2));
  log(`  ${name}: built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { path, ...facts };
}

/** The cached copy still has its base commit and exactly its working state (no earlier run left anything behind). */
async function intact(path, meta, spec) {
  try {
    if ((await gitOut(path, ["rev-parse", "HEAD"])).trim() !== meta.facts.baseCommit) return false;
    const status = await gitOut(path, ["--no-optional-locks", "status", "--porcelain", "-z", "--untracked-files=all"]);
    return status.split("\0").filter(Boolean).length === spec.dirty + spec.untracked;
  } catch {
    return false;
  }
}

function planTree(spec, random) {
  const dirs = [{ path: "", depth: 0 }];
  const dirCount = Math.max(1, Math.round(spec.files / 16));
  while (dirs.length < dirCount) {
    const parent = random.pick(dirs);
    if (parent.depth >= 8) continue;
    const name = `${random.pick(["src", "lib", "core", "util", "test", "pkg", "api", "ui", "db", "net"])}${dirs.length}`;
    dirs.push({ path: parent.path ? `${parent.path}/${name}` : name, depth: parent.depth + 1 });
  }
  return dirs;
}

function planFiles(spec, random, dirs) {
  const files = [];
  const bigBinaries = spec.files >= 40_000 ? Math.floor(spec.files / 4000) : 0;
  for (let i = 0; i < spec.files; i++) {
    const dir = random.pick(dirs).path;
    const big = i < bigBinaries;
    const binary = big || random.next() < 0.03;
    const ext = binary ? random.pick(["png", "bin", "woff2"]) : random.pick(TEXT_EXTENSIONS);
    const name = `${random.pick(["index", "main", "util", "model", "view", "helper", "types", "api", "spec", "data"])}_${i}.${ext}`;
    files.push({ path: dir ? `${dir}/${name}` : name, binary, big, weight: Math.exp(random.normal() * 1.1), size: 0, edits: 0 });
  }
  const bigBytes = files.filter((f) => f.big).map((f) => (f.size = 1_000_000 + random.int(5_000_000)));
  const rest = spec.totalBytes - bigBytes.reduce((a, b) => a + b, 0);
  const totalWeight = files.filter((f) => !f.big).reduce((sum, f) => sum + f.weight, 0);
  for (const file of files)
    if (!file.big) file.size = Math.max(16, Math.min(MAX_TEXT_FILE, Math.round((file.weight / totalWeight) * rest)));
  return files;
}

function contentOf(file) {
  const base = file.binary ? binaryContent(file.path, file.size) : textContent(file.path, file.size);
  return file.edits === 0 ? base : editedContent(base, file.path, file.edits);
}

/** Writes the fast-import stream for the whole history to git's stdin, honouring backpressure. */
async function importHistory(path, spec, files, random) {
  const child = spawn("git", ["-C", path, "fast-import", "--quiet", "--done"], { env: GIT_ENV, stdio: ["pipe", "ignore", "inherit"] });
  const exited = new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`git fast-import exited ${code}`))));
  });
  const write = async (chunk) => {
    if (!child.stdin.write(chunk)) await new Promise((resolve) => child.stdin.once("drain", resolve));
  };
  const commit = async (index, message, body) => {
    const when = `${EPOCH + index * 86_400} +0000`;
    await write(`commit refs/heads/main\nauthor Bench <bench@handoff.invalid> ${when}\ncommitter Bench <bench@handoff.invalid> ${when}\n`);
    await write(`data ${Buffer.byteLength(message)}\n${message}\n`);
    await body();
    await write("\n");
  };
  // Inline blobs (`M 100644 inline path`) keep the stream to one pass with no marks to remember.
  const put = async (file) => {
    const bytes = contentOf(file);
    await write(`M 100644 inline ${file.path}\ndata ${bytes.length}\n`);
    await write(bytes);
    await write("\n");
  };
  const live = files.slice();
  await commit(0, "initial import", async () => {
    await write("M 100644 inline .gitignore\ndata 22\nnode_modules/\n*.log\n\n\n");
    for (const file of live) await put(file);
  });
  for (let round = 1; round <= 4; round++) {
    const modify = Math.ceil(live.length * 0.01);
    const add = Math.ceil(spec.files * 0.002);
    const remove = Math.ceil(spec.files * 0.001);
    await commit(round, `change ${round}`, async () => {
      for (let i = 0; i < modify; i++) {
        const file = live[random.int(live.length)];
        file.edits++;
        await put(file);
      }
      for (let i = 0; i < remove; i++) {
        const [file] = live.splice(random.int(live.length), 1);
        await write(`D ${file.path}\n`);
      }
      for (let i = 0; i < add; i++) {
        const model = random.pick(live);
        const file = {
          ...model,
          path: `${dirname(model.path) === "." ? "" : `${dirname(model.path)}/`}added_${round}_${i}.js`,
          binary: false,
          big: false,
          edits: 0,
        };
        live.push(file);
        await put(file);
      }
    });
  }
  await write("done\n");
  child.stdin.end();
  await exited;
  return live;
}

async function buildRepo(path, spec) {
  const random = seededRandom(spec.seed);
  mkdirSync(path, { recursive: true });
  await git(path, ["init", "--quiet", "--initial-branch=main"]);
  const dirs = planTree(spec, random);
  const files = planFiles(spec, random, dirs);
  const live = await importHistory(path, spec, files, random);
  await git(path, ["-c", "checkout.workers=2", "checkout", "--quiet", "-f", "main"]);

  // The working state a developer's repository has: a few edits, a few new files, a big ignored dependency tree.
  const text = live.filter((f) => !f.binary);
  for (let i = 0; i < spec.dirty; i++) {
    const file = text[random.int(text.length)];
    writeFileSync(join(path, file.path), editedContent(contentOf(file), `${file.path} (uncommitted)`, 1));
  }
  for (let i = 0; i < spec.untracked; i++) {
    const dir = random.pick(dirs).path;
    writeFileSync(join(path, dir, `untracked_${i}.txt`), textContent(`untracked ${i}`, 200 + random.int(4000)));
  }
  for (let i = 0; i < spec.ignored; i++) {
    const pkg = `node_modules/pkg${Math.floor(i / 20)}${i % 20 >= 10 ? "/lib" : ""}`;
    mkdirSync(join(path, pkg), { recursive: true });
    writeFileSync(join(path, pkg, `file${i}.js`), textContent(`dep ${i}`, 200 + random.int(1800)));
  }
  // Let the clock pass the index's mtime, then refresh: no entry stays racily clean (re-hashed by every status).
  await new Promise((resolve) => setTimeout(resolve, 1100));
  await git(path, ["update-index", "-q", "--really-refresh"]).catch(() => {});
  await git(path, ["status", "--porcelain"]);
  const baseCommit = (await gitOut(path, ["rev-parse", "HEAD"])).trim();
  const trackedFiles = (await gitOut(path, ["ls-files", "-z"])).split("\0").filter(Boolean).length;
  const tree = (await gitOut(path, ["ls-tree", "-r", "-l", "-z", "HEAD"])).split("\0").filter(Boolean);
  const trackedBytes = tree.reduce((sum, entry) => sum + Number(entry.split(/\s+/)[3] ?? 0), 0);
  return { baseCommit, trackedFiles, trackedBytes };
}
