// The real project of docs/performance.md#a-real-project-set-up-once: `handoff run --setup 'npm ci' --verify 'npm test'`
// on a bundled npm project (bench/fixtures/npm-project, a lockfile of a few hundred packages from the registry), a
// first run with an empty HANDOFF_CACHE_DIR and a second one on the same cache, against the physical floor (one
// `npm ci` + one `npm test`) and the peer's way (`git worktree add` + `npm ci` + `npm test`), interleaved round by round.
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { git, gitOut, run } from "./git.mjs";
import { interleave, summarize } from "./harness.mjs";
import { TARGETS } from "./report.mjs";

export const REAL_PROJECT = "npm-project";
const STDERR_TAIL_BYTES = 8 * 1024;
const REGISTRY_TIMEOUT_MS = 15_000;

/** The section could not be measured here (no registry, no npm): the bench says so in one line and goes on. */
export class RealProjectUnavailable extends Error {}

export async function benchRealProject({ root, workDir, rounds, log }) {
  const fixture = join(root, "bench", "fixtures", REAL_PROJECT);
  const agent = join(root, "bench", "fixtures", "agent-appends-a-comment.sh");
  await removeDir(workDir);
  mkdirSync(workDir, { recursive: true });
  // npm's own download cache, as a user has it: shared by the floor and the peer, warmed before the first sample.
  const npmCache = join(workDir, "npm-cache");
  const npmEnv = {
    ...process.env,
    npm_config_cache: npmCache,
    npm_config_audit: "false",
    npm_config_fund: "false",
    npm_config_update_notifier: "false",
  };
  await requireRegistry(npmEnv);

  const repo = join(workDir, "repo");
  const facts = await makeRepo(fixture, repo);
  log(`${REAL_PROJECT}: ${facts.packages} packages in package-lock.json, ${facts.trackedFiles} tracked files; ${rounds} rounds`);
  const npm = (cwd, args, env = npmEnv) => run("npm", args, { cwd, env });
  const checkout = (path) => git(workDir, ["clone", "--quiet", repo, path]);
  log(`  warming npm's download cache (${npmCache}): one untimed npm ci`);
  await checkout(join(workDir, "warm"));
  await npm(join(workDir, "warm"), ["ci"]);
  rmSync(join(workDir, "warm"), { recursive: true, force: true });

  const steps = { floorCi: [], floorTest: [], coldCi: [], add: [], peerCi: [], peerTest: [], remove: [] };
  const handoffRuns = { first: [], second: [] };
  const floorDir = join(workDir, "floor");
  const coldDir = join(workDir, "cold");
  const peerDir = join(workDir, "peer");
  const handoffDirs = {
    cache: join(workDir, "handoff-cache"),
    xdgCache: join(workDir, "xdg-cache"),
    runs: join(workDir, "runs"),
    workspaces: join(workDir, "workspaces"),
  };
  // The user's npm cache is the warm one: handoff is started as the user would start it, with npm_config_cache set.
  const handoffCommand = { root, repo, agent, dirs: handoffDirs, homes: join(workDir, "cli-homes"), userNpmCache: npmCache };
  await interleave(
    [
      {
        name: "floor",
        prep: async () => {
          rmSync(floorDir, { recursive: true, force: true });
          await checkout(floorDir);
        },
        run: async () => {
          steps.floorCi.push(await timed(() => npm(floorDir, ["ci"])));
          steps.floorTest.push(await timed(() => npm(floorDir, ["test"])));
          log(`  floor: npm ci ${seconds(steps.floorCi.at(-1))}, npm test ${seconds(steps.floorTest.at(-1))}`);
        },
      },
      {
        // What the first run's install costs any tool with nothing downloaded yet: `npm ci` on an empty npm cache.
        name: "cold",
        prep: async () => {
          for (const dir of [coldDir, `${coldDir}-npm-cache`]) rmSync(dir, { recursive: true, force: true });
          await checkout(coldDir);
        },
        run: async () => {
          steps.coldCi.push(await timed(() => npm(coldDir, ["ci"], { ...npmEnv, npm_config_cache: `${coldDir}-npm-cache` })));
          log(`  npm ci on an empty npm cache: ${seconds(steps.coldCi.at(-1))}`);
        },
      },
      {
        name: "peer",
        prep: async () => {
          rmSync(peerDir, { recursive: true, force: true });
          await git(repo, ["worktree", "prune"]);
        },
        run: async () => {
          steps.add.push(await timed(() => git(repo, ["worktree", "add", "--quiet", "--detach", peerDir, "HEAD"])));
          steps.peerCi.push(await timed(() => npm(peerDir, ["ci"])));
          steps.peerTest.push(await timed(() => npm(peerDir, ["test"])));
          steps.remove.push(await timed(() => git(repo, ["worktree", "remove", "--force", peerDir])));
          log(
            `  peer: worktree add ${seconds(steps.add.at(-1))}, npm ci ${seconds(steps.peerCi.at(-1))}, npm test ${seconds(steps.peerTest.at(-1))}, worktree remove ${seconds(steps.remove.at(-1))}`,
          );
        },
      },
      {
        // The second run must follow the first on the same cache, so both are one method of the interleave.
        name: "handoff",
        prep: async () => {
          for (const dir of Object.values(handoffDirs)) await removeDir(dir);
          mkdirSync(handoffDirs.cache, { recursive: true });
        },
        run: async () => {
          for (const which of ["first", "second"]) {
            const measured = await handoffRun(handoffCommand, which, log);
            handoffRuns[which].push(measured);
            log(
              `  handoff ${which} run: ${seconds(measured.wallMs)}, overhead ${seconds(measured.overheadMs)}; ${measured.installs.length} setup command(s) ${seconds(sum(measured.installs))}; phases ${formatPhases(measured.phases)}`,
            );
          }
        },
      },
    ],
    rounds,
  );
  for (const dir of [floorDir, coldDir, `${coldDir}-npm-cache`]) rmSync(dir, { recursive: true, force: true });

  const s = Object.fromEntries(Object.entries(steps).map(([name, values]) => [name, summarize(values)]));
  const handoff = Object.fromEntries(Object.entries(handoffRuns).map(([which, runs]) => [which, summarizeRuns(runs)]));
  const floor = summarize(steps.floorCi.map((ci, i) => ci + steps.floorTest[i]));
  const peer = summarize(steps.add.map((add, i) => add + steps.peerCi[i] + steps.peerTest[i] + steps.remove[i]));
  const ciAndCheckout = sumOfMedians(s.floorCi, s.add);
  const coldCiAndCheckout = sumOfMedians(s.coldCi, s.add);
  const rows = [
    row(
      "first run: handoff's overhead",
      handoff.first.overhead,
      ciAndCheckout,
      TARGETS.realFirstRunOverhead,
      "vs one npm ci (warm npm cache) + one git worktree add",
    ),
    row(
      "first run: handoff's overhead",
      handoff.first.overhead,
      coldCiAndCheckout,
      null,
      "vs one npm ci (empty npm cache) + one git worktree add",
    ),
    row(
      "second run: handoff's overhead",
      handoff.second.overhead,
      s.floorCi,
      TARGETS.realSecondRunOverhead,
      "vs one npm ci (warm npm cache)",
    ),
    // The install alone: with the user's npm cache copied in, the first run's `npm ci` should cost a warm one.
    row("first run: handoff's install (setup commands)", handoff.first.setupCommands.ms, s.floorCi, null, "vs one npm ci (warm npm cache)"),
    row("peer: worktree add + npm ci + npm test + remove", peer, floor, null, "vs the floor: one npm ci + one npm test"),
    row("handoff first run, wall", handoff.first.wall, floor, null, "vs the floor"),
    row("handoff second run, wall", handoff.second.wall, floor, null, "vs the floor"),
  ];
  await removeDir(workDir);
  return {
    name: REAL_PROJECT,
    facts,
    rounds,
    caches: {
      floorAndPeer: "npm's download cache, warm and shared (npm_config_cache, warmed by one untimed npm ci)",
      cold: "npm ci with an empty npm cache, each round",
      handoff:
        "its own: HANDOFF_CACHE_DIR empty before each first run, the same for the second; npm in its sandbox has a private HOME; the user's npm cache (npm_config_cache, the floor's warm one) is where the first run's setup copies the lockfile's tarballs from",
    },
    steps: { ...s, floor, peer },
    handoff,
    rows,
  };
}

/** One `handoff run` of the bench's task; its wall time as the user waits for it, and what result.json says went where. */
async function handoffRun({ root, repo, agent, dirs, homes, userNpmCache }, which, log) {
  const args = [
    join(root, "bin", "handoff.js"),
    "run",
    "--repo",
    repo,
    "--backend",
    "command",
    "--agent-cmd",
    `sh ${agent}`,
    "--setup",
    "npm ci",
    "--verify",
    "npm test",
    "--yes",
    "--json",
    "--runs-dir",
    dirs.runs,
    "--workspace-dir",
    dirs.workspaces,
    "--",
    "edit",
  ];
  // XDG_CACHE_HOME too, so no environment the user's own cache holds can make a first run a second one.
  const env = {
    ...process.env,
    npm_config_cache: userNpmCache,
    HANDOFF_CACHE_DIR: dirs.cache,
    XDG_CACHE_HOME: dirs.xdgCache,
    HANDOFF_CLI_HOME_DIR: homes,
  };
  const ran = await runCaptured(process.execPath, args, env);
  let result;
  try {
    result = JSON.parse(ran.stdout);
  } catch {
    throw new Error(`handoff's ${which} run exited ${ran.exitCode} without a result on stdout; stderr ends:\n${ran.stderr}`);
  }
  if (ran.exitCode !== 0 || result.terminalReason !== "verified") {
    log(`  handoff's ${which} run: stderr ends:\n${ran.stderr}`);
    throw new Error(
      `handoff's ${which} run ended ${result.terminalReason}${result.detail ? ` (${result.detail})` : ""} with exit ${ran.exitCode}, not verified (0): ${result.summary}; run directory ${result.runDir}`,
    );
  }
  // result.json (src/verdict/result.ts): `verification.commands` holds the setup commands (phase `setup`) and the
  // verify commands (phase `verify`); the verify commands' own time and the agent's are the task's, not handoff's.
  const commands = result.verification.commands;
  const verifyMs = sum(commands.filter((c) => c.phase === "verify").map((c) => c.durationMs));
  const agentMs = result.timings.phases.agent ?? 0;
  return {
    wallMs: ran.wallMs,
    durationMs: result.timings.durationMs,
    overheadMs: ran.wallMs - agentMs - verifyMs,
    agentMs,
    verifyMs,
    installs: commands.filter((c) => c.phase === "setup").map((c) => c.durationMs),
    phases: result.timings.phases,
  };
}

function summarizeRuns(runs) {
  const phaseNames = [...new Set(runs.flatMap((r) => Object.keys(r.phases)))];
  return {
    wall: summarize(runs.map((r) => r.wallMs)),
    durationMs: summarize(runs.map((r) => r.durationMs)),
    // What the user waits for beyond result.json's own clock: node's start-up, and teardown where it comes after.
    outsideTimings: summarize(runs.map((r) => r.wallMs - r.durationMs)),
    overhead: summarize(runs.map((r) => r.overheadMs)),
    agent: summarize(runs.map((r) => r.agentMs)),
    verifyCommands: summarize(runs.map((r) => r.verifyMs)),
    setupCommands: { count: Math.max(...runs.map((r) => r.installs.length)), ms: summarize(runs.map((r) => sum(r.installs))) },
    // The median of each phase over the rounds (a phase a round did not have counts as 0 there).
    phases: Object.fromEntries(phaseNames.map((name) => [name, summarize(runs.map((r) => r.phases[name] ?? 0)).median])),
  };
}

/** A git repository of the fixture, one commit; node_modules left out if someone installed in the fixture itself. */
async function makeRepo(fixture, repo) {
  cpSync(fixture, repo, { recursive: true, filter: (path) => !path.split("/").includes("node_modules") });
  await git(repo, ["init", "--quiet", "--initial-branch=main"]);
  await git(repo, ["add", "-A"]);
  await git(repo, ["commit", "--quiet", "-m", "the bench's npm project"]);
  const lock = JSON.parse(readFileSync(join(repo, "package-lock.json"), "utf8"));
  return {
    packages: Object.keys(lock.packages).filter(Boolean).length,
    trackedFiles: (await gitOut(repo, ["ls-files", "-z"])).split("\0").filter(Boolean).length,
    baseCommit: (await gitOut(repo, ["rev-parse", "HEAD"])).trim(),
  };
}

/** `npm ci` needs the registry: without it the section stops here, in one line, instead of npm retrying for minutes. */
async function requireRegistry(env) {
  try {
    await run("npm", ["ping", "--fetch-retries=0", `--fetch-timeout=${REGISTRY_TIMEOUT_MS}`], { env });
  } catch (error) {
    const reason = /reason: ([^|]+)/.exec(error.message)?.[1].trim() ?? lastLine(error.message);
    const why = error.code === "ENOENT" ? "npm is not on PATH" : `the npm registry is unreachable (${reason})`;
    throw new RealProjectUnavailable(`${REAL_PROJECT}: not measured: ${why}`);
  }
}

/** Runs a process to its end whatever its exit code: stdout, the tail of stderr, the wall time. */
function runCaptured(file, args, env) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(file, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    const stdout = [];
    let stderr = "";
    child.stdout.on("data", (chunk) => stdout.push(chunk));
    child.stderr.setEncoding("utf8").on("data", (text) => {
      stderr = (stderr + text).slice(-STDERR_TAIL_BYTES);
    });
    child.on("error", reject);
    child.on("close", (code, signal) =>
      resolve({
        exitCode: code ?? `signal ${signal}`,
        stdout: Buffer.concat(stdout).toString("utf8"),
        stderr,
        wallMs: performance.now() - started,
      }),
    );
  });
}

/** rm -rf, also of a tree made read-only (a base environment is never written again): a user who is not root cannot unlink there. */
async function removeDir(path) {
  try {
    rmSync(path, { recursive: true, force: true });
  } catch (error) {
    if (error.code !== "EACCES" && error.code !== "EPERM") throw error;
    await run("chmod", ["-R", "u+w", path]);
    rmSync(path, { recursive: true, force: true });
  }
}

async function timed(action) {
  const started = performance.now();
  await action();
  return performance.now() - started;
}

function row(phase, measured, anchor, target, note) {
  return { phase, measured, anchor, ratio: Math.round((measured.median / anchor.median) * 100) / 100, target, note };
}

function sumOfMedians(...parts) {
  return { median: Math.round(parts.reduce((total, part) => total + part.median, 0) * 10) / 10, min: null, max: null, n: null };
}

/** "clone 47, setup 3,434, …": where a run's time went, in ms. */
function formatPhases(phases) {
  return Object.entries(phases)
    .map(([name, ms]) => `${name} ${Math.round(ms).toLocaleString("en-US")}`)
    .join(", ");
}

function sum(values) {
  return values.reduce((total, value) => total + value, 0);
}

function seconds(ms) {
  return `${(ms / 1000).toFixed(2)} s`;
}

function lastLine(text) {
  return (
    text
      .split(/\n| \| /)
      .filter(Boolean)
      .at(-1) ?? text
  );
}
