/**
 * Configuration files by kind (issue 26 item 1): files that decide *how* verification runs, wherever they are and
 * whatever names them. A tool reads them of its own accord (npm reads `.npmrc`, tap `.taprc`, Node the nearest
 * `package.json`), so no command has to name them. A patch that changes, deletes or adds one has the run held to the
 * base put it back (an added one removed). Pure: decided from the path alone.
 */

/** Usual tool configurations at any depth, by exact base name. */
const TOOL_CONFIG_NAMES = new Set([
  "Makefile",
  "makefile",
  "GNUmakefile",
  "pytest.ini",
  "tox.ini",
  "setup.cfg",
  "conftest.py",
  "noxfile.py",
  "pyproject.toml",
  // Cargo's manifest decides which tests build and run (`[lib] test = false`, `autotests = false`, `[[test]]
  // harness = false`), and a build script runs before every `cargo test` and can set cfgs the tests read.
  "Cargo.toml",
  "build.rs",
  "sitecustomize.py",
  "usercustomize.py",
  "jsconfig.json",
  "deno.json",
  "deno.jsonc",
  "bunfig.toml",
  "phpunit.xml",
  "phpunit.xml.dist",
  "karma.conf.js",
  "Rakefile",
  "Gemfile",
  "Justfile",
  "justfile",
  "Taskfile.yml",
  "lerna.json",
  "nx.json",
  "turbo.json",
  "pnpm-workspace.yaml",
]);

/** Configuration by the shape of a base name: `*.config.*`, `*.conf`, `tsconfig*.json`, runner configs, `*.pth`. */
const CONFIG_NAME_SHAPES: readonly RegExp[] = [
  /\.config\.[^/]+$/u, // vitest.config.ts, jest.config.js, babel.config.cjs, eslint.config.mjs
  /\.conf$/u,
  /\.conf\.(js|cjs|mjs|ts|json)$/u, // karma.conf.js
  /^tsconfig[^/]*\.json$/u,
  /^(vitest|jest)\.(setup|workspace)\.[^/]+$/u,
  /^vitest\.workspace$/u,
  /\.pth$/u, // Python runs `import` lines of a .pth file in site-packages at start-up
  /^[^.][^/]*rc$/u, // npmrc, babelrc (a dotted `.xrc` is a dotfile anyway)
  /^[^.][^/]*rc\.(json|ya?ml|toml|ini)$/u,
];

/** Git's own dotfiles: they decide what git tracks and shows, not how a tool runs (holding .gitignore would make a build's outputs look like changes). */
const GIT_DOTFILES = new Set([".gitignore", ".gitattributes", ".mailmap", ".git-blame-ignore-revs", ".gitkeep", ".keep"]);

/** Documentation in a dot-directory (`.changeset/x.md`, `.github/PULL_REQUEST_TEMPLATE.md`) configures nothing. */
const DOCUMENTATION = /\.(md|markdown|txt|rst)$/u;

/** The manifest is held field by field (manifest.ts), not here. */
export const MANIFEST = "package.json";

/** A package.json at any depth. */
export function isManifest(path: string): boolean {
  return path === MANIFEST || path.endsWith(`/${MANIFEST}`);
}

export type ConfigKind = "dotfile" | "tool_config" | "dependency_tree";

/**
 * What kind of configuration `path` is, or null when it is none: a dotfile or a file in a dot-directory at any depth
 * (`.npmrc`, `.taprc`, `.mocharc.yml`, `.env.test`, `.config/x`), a tool configuration by name or shape, or a file
 * under `node_modules/` (what `require` resolves before anything else; a patch never legitimately adds one).
 */
export function configKind(path: string): ConfigKind | null {
  const segments = path.split("/");
  const name = segments.at(-1) ?? "";
  if (segments.includes("node_modules")) return "dependency_tree";
  const dotted = segments.findIndex((segment) => segment.startsWith(".") && segment !== "." && segment !== "..");
  const gitOwn = GIT_DOTFILES.has(name) && dotted === segments.length - 1;
  if (dotted !== -1 && !gitOwn && !(dotted < segments.length - 1 && DOCUMENTATION.test(name))) return "dotfile";
  if (TOOL_CONFIG_NAMES.has(name)) return "tool_config";
  if (CONFIG_NAME_SHAPES.some((shape) => shape.test(name))) return "tool_config";
  return null;
}

/** The words a report gives for a kind: "held to the base: .npmrc, a configuration file". */
export function configKindWhy(kind: ConfigKind): string {
  switch (kind) {
    case "dotfile":
      return "a configuration file (a dotfile: tools read it of their own accord)";
    case "tool_config":
      return "a configuration file (a tool reads it by name)";
    case "dependency_tree":
      return "a file under node_modules/ (what require() resolves)";
  }
}
