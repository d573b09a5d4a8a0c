// Builds action/main.js, the file action.yml runs: src/action/main.ts with every dependency inline, so a job that
// uses the action needs no npm install (`npm run build:action`; test/action-bundle.test.ts fails when it is stale).
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const outfile = process.argv[2] ?? `${root}action/main.js`;

await build({
  absWorkingDir: root,
  entryPoints: ["src/action/main.ts"],
  outfile,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // The ESM build of a package that has one: jsonc-parser's UMD main requires its files by relative path at run time.
  mainFields: ["module", "main"],
  minify: true,
  // The licence notices of the bundled packages, kept at the end of the file.
  legalComments: "eof",
  logLevel: "warning",
  // CommonJS dependencies call require() for Node's own modules: an ESM bundle has none unless it makes one.
  banner: {
    js: "import { createRequire as __handoffCreateRequire } from 'node:module'; const require = __handoffCreateRequire(import.meta.url);",
  },
});
