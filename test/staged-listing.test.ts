import { describe, expect, test } from "vitest";
import { splitRawAndPatch } from "../src/patch/staging.js";
import { extractAfter } from "./helpers/extract.js";
import { makeRepo } from "./helpers/repo.js";

/**
 * Extraction asks git once for the change list and the patch together, and writes the staged index's listing itself
 * from the base index and that list (staged-listing.ts): both must be byte for byte what git gives on its own
 * (extractAfter compares the listing with `git ls-files -s -z` of the index git staged).
 */
const FILES = {
  "README.md": "# fixture\n",
  "src/app.js": "export const app = 1;\n",
  "src/util.js": "export const util = 2;\n",
  "run.sh": "#!/bin/sh\necho run\n",
  'docs/old "quoted".md': "old\n",
  "docs/caf\u00e9.md": "caf\u00e9\n",
};

describe("the staged listing and the one-call diff", () => {
  test("edits, additions, deletions, a mode change, type changes and quoted names: git's own listing", async () => {
    const repo = await makeRepo(FILES);
    const { extraction } = await extractAfter(
      repo,
      [
        "echo more >> src/app.js",
        "rm src/util.js",
        "chmod +x run.sh",
        "rm README.md && ln -s src/app.js README.md",
        "echo edited > 'docs/old \"quoted\".md'",
        "echo new > 'docs/caf\u00e9 new.md'",
        "mkdir -p lib/deep && echo deep > lib/deep/x.js",
        "printf '\\000\\001binary' > lib/blob.bin",
      ].join(" && "),
    );
    expect(extraction.files.map((file) => `${file.change} ${file.path}`).sort()).toEqual(
      [
        "added docs/caf\u00e9 new.md",
        "added lib/blob.bin",
        "added lib/deep/x.js",
        'modified docs/old "quoted".md',
        "modified README.md",
        "modified run.sh",
        "modified src/app.js",
        "deleted src/util.js",
      ].sort(),
    );
    expect(extraction.patch.toString("latin1")).toContain('diff --git "a/docs/old \\"quoted\\".md" "b/docs/old \\"quoted\\".md"');
  });

  test("nothing changed: an empty patch, and the listing is the base's", async () => {
    const repo = await makeRepo(FILES);
    const { extraction } = await extractAfter(repo, "touch src/app.js");
    expect(extraction.patch.length).toBe(0);
    expect(extraction.listing.toString("latin1").split("\0").filter(Boolean)).toHaveLength(Object.keys(FILES).length);
  });

  test("git's combined answer splits into the raw list and the patch; anything else is null", () => {
    const raw = Buffer.from(":100644 100644 aaaa bbbb M\0f\0:000000 100644 0000 cccc A\0g\0", "latin1");
    const patch = Buffer.from("diff --git a/f b/f\nindex aaaa..bbbb 100644\n", "latin1");
    const split = splitRawAndPatch(Buffer.concat([raw, Buffer.from([0]), patch]));
    expect(split?.raw.equals(raw)).toBe(true);
    expect(split?.patch.equals(patch)).toBe(true);
    expect(splitRawAndPatch(Buffer.alloc(0))).toEqual({ raw: Buffer.alloc(0), patch: Buffer.alloc(0) });
    expect(splitRawAndPatch(raw)).toBeNull(); // no patch after the list
    expect(splitRawAndPatch(patch)).toBeNull(); // no list before the patch
    expect(splitRawAndPatch(Buffer.concat([raw, Buffer.from([0]), Buffer.from("garbage")]))).toBeNull();
  });
});
