import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { expect, test } from "vitest";
import { tempDir } from "./helpers/repo.js";

/** action/main.js is what GitHub runs: it must be the build of src/action/ as it is now, never a stale one. */
test("the committed action/main.js is what `npm run build:action` makes of the source", () => {
  const root = resolve(import.meta.dirname, "..");
  const rebuilt = join(tempDir("handoff-bundle"), "main.js");
  execFileSync(process.execPath, [join(root, "action", "build.mjs"), rebuilt], { cwd: root });
  const committed = readFileSync(join(root, "action", "main.js"));
  // Not toEqual on 2.6 MB: a stale bundle should fail with one line, not a diff of the whole file.
  expect(readFileSync(rebuilt).equals(committed), "action/main.js is stale: run npm run build:action and commit it").toBe(true);
});
