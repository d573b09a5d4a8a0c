import { spawnSync } from "node:child_process";
import { describe, expect, test } from "vitest";
import { HANDOFF_BIN } from "./helpers/cli.js";
import { tempDir } from "./helpers/repo.js";

const TRACE = new URL("./helpers/trace-loads.mjs", import.meta.url).pathname;

/** The dist/ modules a command line loads, as paths under dist/src/. */
function modulesLoaded(args: readonly string[]): string[] {
  const cwd = tempDir("handoff-startup");
  const { stderr, status } = spawnSync(process.execPath, ["--import", TRACE, HANDOFF_BIN, ...args], {
    cwd,
    env: { ...process.env, XDG_STATE_HOME: cwd },
    encoding: "utf8",
  });
  expect(status, stderr).toBe(0);
  return stderr
    .split("\n")
    .filter((line) => line.startsWith("LOAD "))
    .map((line) => line.replace(/^LOAD .*\/dist\/src\//, ""));
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
