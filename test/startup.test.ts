import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { HANDOFF_BIN } from "./helpers/cli.js";
import { tempDir } from "./helpers/repo.js";

const TRACE = new URL("./helpers/trace-loads.mjs", import.meta.url).pathname;
/** The CLI as tsc compiled it, file by file (bin/handoff.js starts its bundle, whose chunks follow these imports). */
const UNBUNDLED_CLI = new URL("../dist/src/cli/cli.js", import.meta.url).href;

/** The dist/ files a command line loads: through bin/handoff.js (the bundle), or file by file from dist/src/. */
function filesLoaded(args: readonly string[], via: "bin" | "unbundled"): string[] {
  const cwd = tempDir("handoff-startup");
  const entry =
    via === "bin"
      ? [HANDOFF_BIN]
      : [
          "--input-type=module",
          "-e",
          `const { main } = await import(${JSON.stringify(UNBUNDLED_CLI)}); process.exitCode = await main(process.argv.slice(1));`,
          "--",
        ];
  const { stderr, status } = spawnSync(process.execPath, ["--import", TRACE, ...entry, ...args], {
    cwd,
    env: { ...process.env, XDG_STATE_HOME: cwd, XDG_CACHE_HOME: join(cwd, "cache") },
    encoding: "utf8",
  });
  expect(status, stderr).toBe(0);
  return stderr
    .split("\n")
    .filter((line) => line.startsWith("LOAD "))
    .map((line) => line.replace(/^LOAD .*\/dist\//, ""));
}

/** The dist/src/ modules a command line loads when nothing is bundled: what each command's chunk holds. */
function modulesLoaded(args: readonly string[]): string[] {
  return filesLoaded(args, "unbundled").map((path) => path.replace(/^src\//, ""));
}

// What a command costs to start is measured in `npm run bench -- --only startup`; here, what it loads.
describe("each command loads only its own module", () => {
  test("handoff --version loads the entry, its errors and the command names, nothing else", () => {
    expect(modulesLoaded(["--version"]).sort()).toEqual([
      "cli/cli.js",
      "cli/command-names.js",
      "lib/errors.js",
      "vocabulary/command-exit-codes.js",
    ]);
  });

  test("handoff list loads no pipeline, no agent runner and no queue", () => {
    const loaded = modulesLoaded(["list", "--all"]);
    expect(loaded).toContain("cli/commands/list.js");
    for (const heavy of ["run/pipeline.js", "run/runner.js", "agent/agent-run.js", "queue/worker.js"]) expect(loaded).not.toContain(heavy);
  });

  // The help names the backends, so it reads the registry (and the agent modules its rows are made with); no more.
  test.each([["--help"], ["run", "--help"], ["show", "--help"]])("handoff %s loads no pipeline and no queue", (...args) => {
    const loaded = modulesLoaded(args);
    expect(loaded).toContain("cli/help.js");
    for (const heavy of ["run/pipeline.js", "run/runner.js", "queue/worker.js"]) expect(loaded).not.toContain(heavy);
  });

  test("handoff run loads the pipeline only when it runs", () => {
    expect(modulesLoaded(["run", "--help"])).not.toContain("cli/commands/run.js");
  });
});

// Node's ESM loader pays per file: bin/handoff.js starts the bundle in dist/cli/ (scripts/bundle-cli.mjs).
describe("the launcher starts the bundled CLI", () => {
  test("handoff --version and list read the bundle's files only, a handful for --version", () => {
    const version = filesLoaded(["--version"], "bin");
    expect(
      version.every((path) => path.startsWith("cli/")),
      version.join("\n"),
    ).toBe(true);
    expect(version).toContain("cli/cli.js");
    expect(version.length).toBeLessThanOrEqual(6);
    const list = filesLoaded(["list", "--all"], "bin");
    expect(
      list.every((path) => path.startsWith("cli/")),
      list.join("\n"),
    ).toBe(true);
    expect(list.some((path) => /^cli\/list-[A-Z0-9]+\.js$/.test(path))).toBe(true);
  });

  test("a command's chunk is loaded only when it runs", () => {
    expect(filesLoaded(["--version"], "bin").some((path) => /^cli\/(run|list)-/.test(path))).toBe(false);
  });
});
