import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { mountPoints, overlayUnavailable } from "../src/environment/overlay.js";
import { probeBubblewrap } from "../src/containment/sandbox.js";
import { runCli, commandRunArgs } from "./helpers/cli.js";
import { gitIn, makeRepo, tempDir } from "./helpers/repo.js";
import { delegate, delegateWithoutSandbox, makeHarness } from "./helpers/run.js";
import type { ExternalAgentBackend } from "../src/agent/backend.js";
import type { RunResult } from "../src/verdict/result.js";

/**
 * The base environment (docs/environment.md): setup runs once on the pristine base, every workspace is made from
 * it, and the next run on the same commit takes it from the cache. Each test has its own cache directory.
 */
const overlay = (await overlayUnavailable(tmpdir())) === null;
// CI runs as root on a kernel with overlayfs: there these tests must not skip their overlay half.
if (!overlay && process.env.HANDOFF_OVERLAY_TESTS === "required") throw new Error("overlay mounts are required here");
const MODES = overlay ? (["overlay", "copy"] as const) : (["copy"] as const);
const bwrap = await probeBubblewrap();
if (!bwrap.ok && process.env.HANDOFF_SANDBOX_TESTS === "required") throw new Error(`bubblewrap is required here: ${bwrap.reason}`);

/** A project whose test passes only once setup has made node_modules/dep (and add() adds). */
const PROJECT = {
  "package.json": `${JSON.stringify({ name: "fixture", type: "module", scripts: { test: "node test.js" } }, null, 2)}\n`,
  "math.js": "export function add(a, b) {\n  return a - b;\n}\n",
  "test.js":
    'import { readFileSync } from "node:fs";\nimport { add } from "./math.js";\nreadFileSync("node_modules/dep/index.js");\nif (add(2, 2) !== 4) process.exit(1);\nconsole.log("ok");\n',
  ".gitignore": "node_modules/\n",
};
const SETUP = "mkdir -p node_modules/dep && echo 'export default 1' > node_modules/dep/index.js";
const FIX = "sed -i 's/a - b/a + b/' math.js";
/** node_modules/dep/check.sh fails on the base: only a poisoned environment makes `sh node_modules/dep/check.sh` pass. */
const CHECKED_SETUP = `${SETUP} && printf 'exit 1\\n' > node_modules/dep/check.sh`;
const CHECK = "sh node_modules/dep/check.sh";

function setupRecords(result: RunResult): number {
  const all = [...result.verification.commands, ...(result.verification.baseline?.commands ?? [])];
  return all.filter((command) => command.phase?.endsWith("setup")).length;
}

describe.each(MODES)("a base environment, workspaces as %s", (mode) => {
  test("setup runs once on the base; a second run on the same commit runs none, and both verify", async () => {
    const repo = await makeRepo(PROJECT);
    const cacheDir = tempDir("handoff-cache");
    const options = { setup: [SETUP], verify: ["npm test"], workspaceMode: mode, cacheDir } as const;

    const first = await delegate(repo, FIX, options);
    expect(first.result.terminalReason, first.result.summary).toBe("verified");
    expect(first.result.environment).toMatchObject({ source: "built", workspaceMode: mode, builtBy: first.result.runId });
    expect(first.result.environment?.verificationSetup).toMatchObject({ ran: false });
    expect(setupRecords(first.result)).toBe(1);

    const second = await delegate(repo, FIX, options);
    expect(second.result.terminalReason, second.result.summary).toBe("verified");
    expect(second.result.environment).toMatchObject({ source: "reused", builtBy: first.result.runId, key: first.result.environment?.key });
    expect(setupRecords(second.result)).toBe(0);
    expect(second.patch).toBe(first.patch);
    expect(second.result.timings.phases.setup).toBeUndefined();
    expect(second.result.timings.phases.cleanup).toBeGreaterThanOrEqual(0);
  });

  test("--baseline sets up at most once: the base is the environment itself", async () => {
    const repo = await makeRepo(PROJECT);
    const run = await delegate(repo, FIX, {
      setup: [SETUP],
      verify: ["npm test"],
      baseline: true,
      workspaceMode: mode,
      cacheDir: tempDir("c"),
    });
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    expect(run.result.verification.baseline?.passed).toBe(false);
    expect(setupRecords(run.result)).toBe(1);
  });

  test("a setup that edits a tracked file and leaves an unignored file: both named, neither is the agent's patch", async () => {
    const repo = await makeRepo(PROJECT);
    const setup = `${SETUP} && echo '// touched by setup' >> math.js && echo generated > build-info.txt`;
    const run = await delegate(repo, "true", { setup: [setup], verify: ["npm test"], workspaceMode: mode, cacheDir: tempDir("c") });
    expect(run.result.terminalReason).toBe("no_changes");
    expect(run.patch).toBe("");
    expect(run.result.environment?.setupChanges).toEqual(["math.js"]);
    const warning = run.result.policy.warnings.find((w) => w.rule === "setup_changed_tree");
    expect(warning?.message).toContain("math.js");
    expect(warning?.message).toContain("build-info.txt");
  });

  test("the agent's own change next to setup's leftovers is the whole patch and verifies", async () => {
    const repo = await makeRepo(PROJECT);
    const setup = `${SETUP} && echo generated > build-info.txt`;
    const run = await delegate(repo, FIX, { setup: [setup], verify: ["npm test"], workspaceMode: mode, cacheDir: tempDir("c") });
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    expect(run.result.patch?.files.map((file) => file.path)).toEqual(["math.js"]);
  });

  test("a patch that changes a setup input makes verification set up again, and the result says why", async () => {
    const repo = await makeRepo(PROJECT);
    // The test passes only where setup saw the package.json under test.
    const setup = "mkdir -p node_modules/dep && cp package.json node_modules/dep/index.js";
    const agentCmd = `${FIX} && sed -i 's/"fixture"/"fixture-renamed"/' package.json`;
    const verify = "cmp package.json node_modules/dep/index.js && npm test";
    const run = await delegate(repo, agentCmd, { setup: [setup], verify: [verify], workspaceMode: mode, cacheDir: tempDir("c") });
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    expect(run.result.environment?.verificationSetup).toEqual({ ran: true, reason: "the patch changed setup inputs: package.json" });
    expect(setupRecords(run.result)).toBe(2);
  });

  test("--setup-inputs names a file setup reads that is no manifest and that no setup command names", async () => {
    // setup.sh is named by the command, so it is an input; deps.txt, which it reads, is known only through --setup-inputs.
    const repo = await makeRepo({
      ...PROJECT,
      "deps.txt": "one\n",
      "setup.sh": "mkdir -p node_modules/dep && cp deps.txt node_modules/dep/index.js\n",
    });
    const setup = "sh setup.sh";
    const agentCmd = `${FIX} && echo two >> deps.txt`;
    const verify = "cmp deps.txt node_modules/dep/index.js && npm test";
    const options = { setup: [setup], verify: [verify], workspaceMode: mode, cacheDir: tempDir("c") };
    const without = await delegate(repo, agentCmd, options);
    expect(without.result.terminalReason).toBe("verification_failed");
    const named = await delegate(repo, agentCmd, { ...options, setupInputs: ["deps.txt"] });
    expect(named.result.terminalReason, named.result.summary).toBe("verified");
    expect(named.result.environment?.verificationSetup?.reason).toContain("deps.txt");
  });

  test("a setup that writes its own directory's path: no environment, setup runs in each checkout, and the run verifies", async () => {
    const repo = await makeRepo(PROJECT);
    const setup = "mkdir -p node_modules/dep && pwd > node_modules/dep/where && echo 'export default 1' > node_modules/dep/index.js";
    const verify = 'test "$(cat node_modules/dep/where)" = "$(pwd)" && npm test';
    const cacheDir = tempDir("c");
    const options = { setup: [setup], verify: [verify], workspaceMode: mode, cacheDir };
    const first = await delegate(repo, FIX, options);
    expect(first.result.terminalReason, first.result.summary).toBe("verified");
    expect(first.result.environment).toMatchObject({ source: "none" });
    expect(first.result.environment?.noneReason).toContain("node_modules/dep/where");
    const second = await delegate(repo, FIX, options);
    expect(second.result.terminalReason, second.result.summary).toBe("verified");
    // The record of the first build spares the second a build that would be thrown away: setup in the clone and in verification only.
    expect(setupRecords(second.result)).toBe(2);
  });
});

describe("the environment is handoff's, not the agent's", () => {
  test("an agent without the sandbox that rewrites its run's own environment: verification sets up its own checkout, and nothing of it outlives the run", async () => {
    const repo = await makeRepo(PROJECT);
    const cacheDir = tempDir("handoff-cache");
    // node_modules/dep/check.sh fails on the base; the agent makes the environment's copy pass instead of fixing anything.
    // A run without the sandbox builds its own environment, under unsandboxed/<pid>-<r>/, never in environments/.
    const agentCmd = `for f in ${cacheDir}/unsandboxed/*/environments/*/tree/node_modules/dep/check.sh; do printf 'exit 0\\n' > "$f"; done; echo '// looked' >> math.js`;
    const run = await delegateWithoutSandbox(repo, agentCmd, { setup: [CHECKED_SETUP], verify: [CHECK], cacheDir });
    expect(run.result.terminalReason).toBe("verification_failed");
    expect(run.result.policy.warnings.map((w) => w.rule)).toContain("environment_modified");
    expect(existsSync(join(cacheDir, "environments"))).toBe(false);
    expect(readdirSync(join(cacheDir, "unsandboxed"))).toEqual(["downloads"]);
  });

  test("no view stays mounted after a run, whatever its verdict", async () => {
    const harness = makeHarness();
    const repo = await makeRepo(PROJECT);
    await delegate(repo, FIX, { harness, setup: [SETUP], verify: ["npm test"], cacheDir: tempDir("c") });
    await delegate(repo, "exit 3", { harness, setup: [SETUP], verify: ["npm test"], cacheDir: tempDir("c") });
    const under = [...mountPoints()].filter((point) => point.startsWith(harness.workspacesDir));
    expect(under).toEqual([]);
    expect(readdirSync(harness.workspacesDir)).toEqual([]);
  });

  test("handoff show says where the environment came from and whether verification set up again", async () => {
    const repo = await makeRepo(PROJECT);
    const harness = makeHarness();
    const cacheDir = tempDir("c");
    await delegate(repo, FIX, { harness, setup: [SETUP], verify: ["npm test"], cacheDir });
    const second = await delegate(repo, FIX, { harness, setup: [SETUP], verify: ["npm test"], cacheDir });
    const shown = await runCli(["show", second.runDir]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/base environment [0-9a-f]{12} reused from the cache: no setup ran/);
    expect(shown.stdout).toContain("verification did not run setup again: the patch changed no setup input");
    expect(shown.stdout).toMatch(/to the verdict, then (?:\d+ ms|\d+\.\d s) removing the workspaces/);
    expect(shown.stdout).toMatch(/cleanup \d/);
  });

  test("--workspace-mode takes auto, overlay or copy: anything else is a usage error before a run exists", async () => {
    const repo = await makeRepo(PROJECT);
    const runsDir = join(tempDir("runs"), "runs");
    const outcome = await runCli(
      commandRunArgs(repo, "true", ["--workspace-mode", "fast", "--no-verify", "--yes", "--runs-dir", runsDir], "task"),
    );
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toContain("--workspace-mode 'fast' must be auto, overlay or copy");
    expect(existsSync(runsDir)).toBe(false);
  });
});

test.skipIf(!overlay)("an overlay workspace: the agent's writes land in its upper dir, never in the cached environment", async () => {
  const repo = await makeRepo(PROJECT);
  const cacheDir = tempDir("c");
  const run = await delegate(repo, `${FIX} && rm -rf node_modules && echo x > new.txt`, {
    setup: [SETUP],
    verify: ["npm test"],
    workspaceMode: "overlay",
    cacheDir,
  });
  expect(run.result.terminalReason, run.result.summary).toBe("verified");
  const [key] = readdirSync(join(cacheDir, "environments"));
  const tree = join(cacheDir, "environments", key!, "tree");
  expect(readFileSync(join(tree, "math.js"), "utf8")).toContain("a - b");
  expect(existsSync(join(tree, "node_modules/dep/index.js"))).toBe(true);
  expect(existsSync(join(tree, "new.txt"))).toBe(false);
});

test.skipIf(!overlay)(
  "an overlay workspace of a source with a branch named handoff: the agent's branch is the base in its copy, the source's branch untouched",
  async () => {
    const repo = await makeRepo(PROJECT);
    gitIn(repo, "checkout", "-q", "-b", "handoff");
    writeFileSync(join(repo, "other.txt"), "only on the source's own handoff branch\n");
    gitIn(repo, "add", "other.txt");
    gitIn(repo, "commit", "-q", "-m", "a commit on handoff");
    gitIn(repo, "checkout", "-q", "main");
    const theirs = gitIn(repo, "rev-parse", "handoff");
    const cacheDir = tempDir("c");
    for (const round of [1, 2]) {
      const run = await delegate(repo, FIX, {
        setup: [SETUP],
        verify: ["npm test"],
        workspaceMode: "overlay",
        cacheDir,
      });
      expect(run.result.terminalReason, `round ${round}: ${run.result.summary}`).toBe("verified");
      expect(run.result.patch?.files.map((file) => file.path)).toEqual(["math.js"]);
    }
    expect(gitIn(repo, "rev-parse", "handoff")).toBe(theirs);
  },
);

test("the environment's index is written in a later second than every tracked file, so no entry is racily clean", async () => {
  const repo = await makeRepo(PROJECT);
  const cacheDir = tempDir("c");
  // A setup of milliseconds: the build writes the files and the index within one second, the case that needs the wait.
  const run = await delegate(repo, FIX, { verify: ["npm test"], workspaceMode: overlay ? "overlay" : "copy", cacheDir, setup: [SETUP] });
  expect(run.result.terminalReason, run.result.summary).toBe("verified");
  const [key] = readdirSync(join(cacheDir, "environments"));
  const dir = join(cacheDir, "environments", key!);
  const indexSecond = Math.floor(statSync(join(dir, "index")).mtimeMs / 1000);
  for (const name of Object.keys(PROJECT)) expect(Math.floor(statSync(join(dir, "tree", name)).mtimeMs / 1000)).toBeLessThan(indexSecond);
});

test("a same-size edit made the moment the workspace exists, from handoff's own process, is in the patch (no setup, and with one)", async () => {
  // A library backend writes at once: within the second the environment's index was written. Its edit keeps the
  // file's size, so only the stat data's times tell it apart; the index must not vouch for them.
  const backend: ExternalAgentBackend = {
    name: "instant",
    async run(_task, context) {
      writeFileSync(join(context.cwd, "math.js"), PROJECT["math.js"].replace("a - b", "a + b"));
      const base = { executable: null, version: null, exitCode: 0, signal: null, usage: null, stderrTail: "", durationMs: 0 };
      return { ...base, outcome: { kind: "finished" }, sessionId: null, finalMessage: null };
    },
  };
  for (const setup of [[], [SETUP]]) {
    const repo = await makeRepo(PROJECT);
    const cacheDir = tempDir("c");
    for (const round of [1, 2]) {
      const run = await delegate(repo, "", { backend, setup, verify: [setup.length > 0 ? "npm test" : "node -e 0"], cacheDir });
      expect(run.result.terminalReason, `setup ${setup.length}, round ${round}: ${run.result.summary}`).toBe("verified");
      expect(run.patch).toContain("+  return a + b;");
    }
  }
});

/**
 * An agent without the sandbox runs as you: it can write the cache, and compute a fingerprint with handoff's own
 * function. This one makes node_modules/dep/check.sh of every cached environment pass, either in place (the file
 * rewritten, environment.json given the new fingerprint) or whole (a copy edited, fingerprinted and renamed into the
 * environment's place, so that every entry is older than the directory).
 */
function forgingAgent(cacheDir: string, style: "in place" | "whole"): { readonly command: string; readonly poisoned: string } {
  const dir = tempDir("forger");
  const script = join(dir, "forge.mjs");
  const poisoned = join(dir, "poisoned");
  const environmentModule = resolve("dist/src/environment/environment.js");
  writeFileSync(
    script,
    `import { cpSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
const { fingerprintEnvironment } = await import(${JSON.stringify(environmentModule)});
const root = join(${JSON.stringify(cacheDir)}, "environments");
for (const key of readdirSync(root)) {
  const dir = join(root, key);
  const work = ${JSON.stringify(style)} === "whole" ? dir + ".forged" : dir;
  if (work !== dir) cpSync(dir, work, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
  writeFileSync(join(work, "tree/node_modules/dep/check.sh"), "exit 0\\n");
  const record = JSON.parse(readFileSync(join(work, "environment.json"), "utf8"));
  record.fingerprint = fingerprintEnvironment(work).fingerprint;
  writeFileSync(join(work, "environment.json"), JSON.stringify(record));
  if (work !== dir) { renameSync(dir, dir + ".old"); renameSync(work, dir); rmSync(dir + ".old", { recursive: true }); }
  writeFileSync(${JSON.stringify(poisoned)}, key);
}
`,
  );
  return { command: `node ${script} && echo '// looked' >> math.js`, poisoned };
}

describe.skipIf(!bwrap.ok)("the cache is checked, not believed (issue 26)", () => {
  test.each(["in place", "whole"] as const)(
    "an agent without the sandbox rewrites a cached environment (%s) and recomputes its fingerprint: a later sandboxed run never verifies a wrong fix",
    async (style) => {
      const repo = await makeRepo(PROJECT);
      const cacheDir = tempDir("handoff-cache");
      const options = { setup: [CHECKED_SETUP], verify: [CHECK], cacheDir };
      const first = await delegate(repo, "echo '// looked' >> math.js", options);
      expect(first.result.terminalReason).toBe("verification_failed");
      expect(first.result.environment?.source).toBe("built");

      // The forging run has no setup: it uses no environment itself, so nothing of its own run looks at the one it poisons.
      const forging = forgingAgent(cacheDir, style);
      await delegateWithoutSandbox(repo, forging.command, { verify: ["true"], workspaceMode: "copy", cacheDir });
      expect(readFileSync(forging.poisoned, "utf8")).toBe(first.result.environment?.key);

      const later = await delegate(repo, "echo '// looked again' >> math.js", options);
      expect(later.result.terminalReason, later.result.summary).toBe("verification_failed");
      // Not taken from the cache: built again, on the base.
      expect(later.result.environment?.source).toBe("built");
    },
  );

  test("a run without the sandbox that writes and would evict the environment a sandboxed run is using: that run never verifies a wrong fix, never loses its lower tree", async () => {
    const repo = await makeRepo(PROJECT);
    const cacheDir = tempDir("handoff-cache");
    let concurrent: Awaited<ReturnType<typeof delegateWithoutSandbox>> | null = null;
    const forging = forgingAgent(cacheDir, "in place");
    // The sandboxed run's agent: while it works, a run without the sandbox (cache limit 0: it would evict anything
    // not in use) poisons the environment; then the agent makes a change that fixes nothing.
    const backend: ExternalAgentBackend = {
      name: "slow",
      async run(_task, context) {
        const limit = process.env.HANDOFF_CACHE_LIMIT;
        process.env.HANDOFF_CACHE_LIMIT = "0";
        try {
          concurrent = await delegateWithoutSandbox(repo, forging.command, { setup: [CHECKED_SETUP], verify: [CHECK], cacheDir });
        } finally {
          if (limit === undefined) delete process.env.HANDOFF_CACHE_LIMIT;
          else process.env.HANDOFF_CACHE_LIMIT = limit;
        }
        writeFileSync(join(context.cwd, "math.js"), `${PROJECT["math.js"]}// looked\n`);
        const base = { executable: null, version: null, exitCode: 0, signal: null, usage: null, stderrTail: "", durationMs: 0 };
        return { ...base, outcome: { kind: "finished" }, sessionId: null, finalMessage: null };
      },
    };
    const run = await delegate(repo, "", { backend, setup: [CHECKED_SETUP], verify: [CHECK], cacheDir });
    expect(existsSync(forging.poisoned)).toBe(true);
    expect(concurrent!.result.terminalReason).toBe("verification_failed");
    expect(run.result.terminalReason, run.result.summary).toBe("verification_failed");
    expect(run.result.patch?.files.map((file) => file.path)).toEqual(["math.js"]);
    expect(run.result.policy.warnings.map((w) => w.rule)).toContain("environment_modified");
  });
});

test("a run without the sandbox never writes the download caches sandboxed runs' setups use, nor their environments", async () => {
  const repo = await makeRepo(PROJECT);
  const cacheDir = tempDir("handoff-cache");
  // What an agent could leave in the npm cache for a later build to install: here, setup itself writes there.
  const setup = `${SETUP} && echo planted > "$npm_config_cache/planted"`;
  const run = await delegateWithoutSandbox(repo, FIX, { setup: [setup], verify: ["npm test"], cacheDir });
  expect(run.result.terminalReason, run.result.summary).toBe("verified");
  expect(existsSync(join(cacheDir, "downloads", "npm", "planted"))).toBe(false);
  expect(readFileSync(join(cacheDir, "unsandboxed", "downloads", "npm", "planted"), "utf8")).toBe("planted\n");
  expect(existsSync(join(cacheDir, "environments"))).toBe(false);
});

describe("an environment that cannot be used is built again, never a dead key", () => {
  test("a cached environment whose tree/ is gone: the next run builds it again and verifies", async () => {
    const repo = await makeRepo(PROJECT);
    const cacheDir = tempDir("handoff-cache");
    const options = { setup: [SETUP], verify: ["npm test"], cacheDir };
    const first = await delegate(repo, FIX, options);
    expect(first.result.terminalReason, first.result.summary).toBe("verified");
    rmSync(join(cacheDir, "environments", first.result.environment!.key!, "tree"), { recursive: true });
    for (const round of [1, 2]) {
      const again = await delegate(repo, FIX, options);
      expect(again.result.terminalReason, `round ${round}: ${again.result.summary}`).toBe("verified");
      expect(again.result.environment?.source).toBe(round === 1 ? "built" : "reused");
    }
  });

  test("a build lock planted under the key, naming a live process that is no handoff build: broken, with a warning, and the run verifies", async () => {
    const repo = await makeRepo(PROJECT);
    const options = { setup: [SETUP], verify: ["npm test"] };
    const probe = await delegate(repo, FIX, { ...options, cacheDir: tempDir("c") });
    const key = probe.result.environment!.key!;
    const cacheDir = tempDir("handoff-cache");
    const sleeper = spawn("sleep", ["600"], { stdio: "ignore" });
    try {
      mkdirSync(join(cacheDir, "locks"), { recursive: true });
      const lock = join(cacheDir, "locks", key);
      writeFileSync(lock, `${sleeper.pid}\n`);
      // Planted a minute ago: past the bounded wait for a lock that names no build.
      const minuteAgo = new Date(Date.now() - 60_000);
      utimesSync(lock, minuteAgo, minuteAgo);
      const run = await delegate(repo, FIX, { ...options, cacheDir });
      expect(run.result.terminalReason, run.result.summary).toBe("verified");
      const warning = run.result.policy.warnings.find((w) => w.rule === "build_lock_broken");
      expect(warning?.message).toContain("names no handoff build of it");
      expect(existsSync(lock)).toBe(false);
    } finally {
      sleeper.kill();
    }
  });
});

describe("--setup-timeout: setup's own limit", () => {
  test("a setup slower than --verify-timeout verifies under a longer --setup-timeout, and request.json records both", async () => {
    const repo = await makeRepo(PROJECT);
    const run = await delegate(repo, FIX, {
      setup: [`sleep 2 && ${SETUP}`],
      verify: ["npm test"],
      verifyTimeoutMs: 1000,
      setupTimeoutMs: 60_000,
      cacheDir: tempDir("c"),
    });
    expect(run.result.terminalReason, run.result.summary).toBe("verified");
    const request = JSON.parse(readFileSync(join(run.runDir, "request.json"), "utf8"));
    expect(request.limits).toMatchObject({ verifyTimeoutMs: 1000, setupTimeoutMs: 60_000 });
  });

  test("a setup past .handoff.json's setupTimeout ends setup_failed, and the hint names --setup-timeout", async () => {
    const repo = await makeRepo({ ...PROJECT, ".handoff.json": JSON.stringify({ setupTimeout: 1 }) });
    const run = await delegate(repo, FIX, { setup: ["sleep 30"], verify: ["npm test"], cacheDir: tempDir("c") });
    expect(run.result.terminalReason).toBe("verification_failed");
    expect(run.result.detail).toBe("setup_failed");
    expect(run.result.summary).toBe("setup command `sleep 30` timed out on the base before the agent started");
    expect(run.result.hint).toContain("--setup-timeout");
    const request = JSON.parse(readFileSync(join(run.runDir, "request.json"), "utf8"));
    expect(request.limits).toMatchObject({ verifyTimeoutMs: 900_000, setupTimeoutMs: 1000 });
  });
});
