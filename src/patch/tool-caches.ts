/**
 * Bytecode and test-runner caches: what Python, pytest, mypy, ruff, hypothesis and the node tools' cache directory
 * write beside the code whenever the tests run, by the agent or by the verify commands (docs/gates.md, "Tool
 * caches"). They are never a change of the patch's: handoff's private git dirs treat them as ignored (their
 * `info/exclude`), so an untracked one is never staged, neither into the agent's patch (it is named in the
 * `tool_caches_left_out` warning instead) nor when verification stages its checkout again. git never ignores a
 * tracked file, so one the repository commits under such a path stays a change when it changes. An in-tree
 * `.gitignore` can still re-include one with `!` (its rules come before `info/exclude`).
 *
 * Kept to what only ever holds caches, each named by the tool's own docs as not to be committed: no `build/`,
 * `dist/`, `target/` or `.tox/` (outputs and environments, which a project may well commit or need named).
 */
export const TOOL_CACHE_PATTERNS: readonly string[] = [
  "__pycache__/", // CPython's bytecode cache (PEP 3147)
  "*.py[co]", // bytecode beside its source (Python 2, `compileall -b`)
  ".pytest_cache/", // pytest's cacheprovider (--lf, --nf)
  ".mypy_cache/",
  ".ruff_cache/",
  ".hypothesis/", // hypothesis's example database
  "**/node_modules/.cache/", // babel-loader, eslint, terser, webpack… (find-cache-dir)
];

const CACHE_DIRECTORIES = new Set(["__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"]);

/**
 * Whether a path (git's form, a directory ending in `/`) is one of the caches or lies in one: the same rule as
 * TOOL_CACHE_PATTERNS, for telling the caches apart in git's list of ignored files.
 */
export function isToolCache(path: Buffer): boolean {
  const parts = path.toString("latin1").split("/");
  const isDirectory = parts.at(-1) === "";
  if (isDirectory) parts.pop();
  for (const [index, part] of parts.entries()) {
    const dirHere = index < parts.length - 1 || isDirectory;
    if (!dirHere) continue;
    if (CACHE_DIRECTORIES.has(part)) return true;
    if (part === ".cache" && index > 0 && parts[index - 1] === "node_modules") return true;
  }
  const last = parts.at(-1) ?? "";
  return last.endsWith(".pyc") || last.endsWith(".pyo");
}
