import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";

const ROOT = resolve(import.meta.dirname, "..");

/** README.md and every markdown file under docs/: what a newcomer reads and copies. */
function readmeAndDocs(): string[] {
  const docs = readdirSync(join(ROOT, "docs"), { recursive: true, encoding: "utf8" }).filter((path) => path.endsWith(".md"));
  return ["README.md", ...docs.map((path) => join("docs", path))];
}

describe("the package name", () => {
  // `npx handoff` in a repository without handoff installed fetches the npm package named handoff, another project's, and runs it.
  test("no README or docs command runs `npx handoff`, and no import names the package `handoff`", () => {
    for (const file of readmeAndDocs()) {
      const text = readFileSync(join(ROOT, file), "utf8");
      expect(text, file).not.toMatch(/npx handoff\b/);
      expect(text, file).not.toMatch(/from ["']handoff(?:\/[^"']*)?["']/);
      expect(text, file).not.toMatch(/import ["']handoff["']/);
    }
  });

  test("package.json is agent-handoff, its bin is the handoff command, and the README installs it from the clone", () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { name: string; bin: Record<string, string> };
    expect(manifest.name).toBe("agent-handoff");
    expect(Object.keys(manifest.bin)).toEqual(["handoff"]);
    expect(existsSync(join(ROOT, manifest.bin.handoff!))).toBe(true);
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    expect(readme).toContain("npm install -g .");
    expect(readme).toContain("npm install -g agent-handoff");
  });

  test("the npm package ships neither the action's compiled files nor the tests", () => {
    const [pack] = JSON.parse(
      execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: ROOT, encoding: "utf8" }),
    ) as [{ name: string; files: { path: string }[] }];
    expect(pack.name).toBe("agent-handoff");
    const paths = pack.files.map((file) => file.path);
    expect(paths).toContain("bin/handoff.js");
    expect(paths.filter((path) => path.startsWith("dist/src/action/") || path.startsWith("test/"))).toEqual([]);
  });
});
