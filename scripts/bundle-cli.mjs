// `npm run build`, after tsc: bundles the compiled CLI (dist/src/cli/cli.js) into dist/cli/, which bin/handoff.js
// starts. Node's ESM loader pays per file (resolve, read, compile, link): a run loaded about 500 files of dist/ and its
// dependencies before its first phase, the bundle a dozen. Each command stays its own chunk, loaded when it runs
// (src/cli/cli.ts), and a module shared by commands sits in a chunk of its own. The library (dist/src/index.js) is not
// bundled: its users' own tools do that.
import { readFileSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const outdir = `${root}dist/cli`;

/**
 * zod's translated error messages (`z.locales`, 250 files, a third of zod in the bundle): re-exported by `zod` but never
 * used by handoff, which keeps zod's default English (imported on its own by zod's schemas, so it stays).
 */
const withoutZodLocales = {
  name: "without-zod-locales",
  setup(build) {
    build.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer) ? { path: "zod-locales", namespace: "without-zod-locales" } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: "without-zod-locales" }, () => ({ contents: "export {};", loader: "js" }));
  },
};

/**
 * The parsers of the agent CLIs' config files (yaml, smol-toml, jsonc-parser), evaluated at their first use instead
 * of at start-up: a run loads every backend but reads the config of one at most, and yaml's module alone took
 * milliseconds of every start. A `require()` of a bundled module runs it where it is called (esbuild), so the
 * imports of dist/backends/model-endpoints.js become functions that require the parser on their first call.
 */
const LAZY_PARSERS = [
  ['import { parse as parseJsonc } from "jsonc-parser";', 'const parseJsonc = (...args) => require("jsonc-parser").parse(...args);'],
  ['import { parse as parseToml } from "smol-toml";', 'const parseToml = (...args) => require("smol-toml").parse(...args);'],
  ['import { parse as parseYaml } from "yaml";', 'const parseYaml = (...args) => require("yaml").parse(...args);'],
];
const lazyConfigParsers = {
  name: "lazy-config-parsers",
  setup(build) {
    build.onLoad({ filter: /[\\/]dist[\\/]backends[\\/]model-endpoints\.js$/ }, (args) => {
      let contents = readFileSync(args.path, "utf8");
      for (const [from, to] of LAZY_PARSERS) {
        // A changed import line would silently bring back the eager import: the build stops instead.
        if (!contents.includes(from)) throw new Error(`${args.path} no longer has: ${from}`);
        contents = contents.replace(from, to);
      }
      return { contents, loader: "js" };
    });
  },
};

// A chunk of an earlier build would stay beside the new ones, loaded by nothing but shipped.
rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { cli: "dist/src/cli/cli.js" },
  outdir,
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // The queue's packages are optional peers: `handoff worker` and `batch --redis` import them when they run.
  external: ["bullmq", "ioredis"],
  // The ESM build of a package that has one: jsonc-parser's UMD main requires its files by relative path at run time.
  mainFields: ["module", "main"],
  // The licence notices of the bundled packages, kept at the end of each file.
  legalComments: "eof",
  logLevel: "warning",
  plugins: [withoutZodLocales, lazyConfigParsers],
  // CommonJS dependencies call require() for Node's own modules: an ESM bundle has none unless it makes one. Made at
  // the first call: a chunk that never requires (all but two) pays nothing, and `handoff list` loads two dozen chunks.
  banner: {
    js: "import { createRequire as __handoffCreateRequire } from 'node:module'; let __handoffRequire; const require = (id) => (__handoffRequire ??= __handoffCreateRequire(import.meta.url))(id);",
  },
});
