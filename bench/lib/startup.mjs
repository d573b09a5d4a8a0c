// Start-up: `handoff --version`, `handoff --help` and `handoff list` against `node -e 0`, the floor any Node CLI
// pays, in the same bench run (interleaved rounds), and a whole `handoff run` from its process's start to its first
// phase. bin/handoff.js starts the bundled CLI (dist/cli/, scripts/bundle-cli.mjs), each command its own chunk.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git, run } from "./git.mjs";
import { interleave, summarize } from "./harness.mjs";

/** `handoff --version` may take at most this many times `node -e 0` (issue 28); the others' ratios are reported. */
export const VERSION_TARGET = 1.5;
/** Issue 32: `handoff --version` and `handoff list` within this many ms (median), whatever node -e 0 takes. */
export const COMMAND_TARGET_MS = 200;
/** Issue 32: a run's first phase starts at most this many ms after its process did (median). */
export const FIRST_PHASE_TARGET_MS = 250;

const AGENT_CMD = "sed -i 's/a - b/a + b/' math.js";
const VERIFY_CMD = "sh check.sh";

export async function benchStartup({ root, workDir, rounds, log }) {
  const bin = join(root, "bin/handoff.js");
  if (!existsSync(join(root, "dist/cli/cli.js"))) throw new Error(`${root}/dist/cli/cli.js is missing: run npm run build first`);
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const repo = join(workDir, "repo");
  await makeRepo(repo);
  // An empty runs directory outside any repository: `list` reads the index, not a history of runs.
  const env = {
    ...process.env,
    XDG_STATE_HOME: join(workDir, "state"),
    XDG_CACHE_HOME: join(workDir, "cache"),
    HANDOFF_WORKSPACE_DIR: join(workDir, "ws"),
    HANDOFF_CLI_HOME_DIR: join(workDir, "homes"),
  };
  const node = (args) => () => run(process.execPath, args, { env, cwd: workDir });
  const commands = { version: ["--version"], help: ["--help"], list: ["list", "--all"] };
  log(
    `start-up: handoff ${Object.values(commands)
      .map((args) => args.join(" "))
      .join(", ")} against node -e 0, and a run's start to its first phase; ${rounds} rounds`,
  );
  const firstPhaseMs = [];
  let round = 0;
  const measured = await interleave(
    [
      { name: "node", run: node(["-e", "0"]) },
      ...Object.entries(commands).map(([name, args]) => ({ name, run: node([bin, ...args]) })),
      { name: "run", run: async () => firstPhaseMs.push(await startToFirstPhase(bin, repo, join(workDir, "runs", String(round++)), env)) },
    ],
    rounds,
  );
  const rows = Object.entries(commands).map(([name, args]) => ({
    command: `handoff ${args.join(" ")}`,
    ms: measured[name],
    ratio: Math.round((measured[name].median / measured.node.median) * 100) / 100,
    target: name === "version" ? VERSION_TARGET : null,
    targetMs: name === "help" ? null : COMMAND_TARGET_MS,
  }));
  const firstPhase = { ms: summarize(firstPhaseMs), targetMs: FIRST_PHASE_TARGET_MS, wholeRun: measured.run };
  for (const row of rows)
    log(`start-up: ${row.command} ${Math.round(row.ms.median)} ms, ${row.ratio}× node -e 0 (${Math.round(measured.node.median)} ms)`);
  log(
    `start-up: handoff run, process start to first phase ${Math.round(firstPhase.ms.median)} ms (the whole run ${Math.round(measured.run.median)} ms)`,
  );
  return { rounds, node: measured.node, rows, firstPhase };
}

/**
 * One `handoff run` (command backend, bubblewrap where there is one, as a user's run): the time from just before its
 * process is spawned to its first `phase.started` event in events.jsonl (both the same wall clock, to the ms).
 */
async function startToFirstPhase(bin, repo, runsDir, env) {
  const args = [bin, "run", "-C", repo, "-b", "command", "--agent-cmd", AGENT_CMD, "--verify", VERIFY_CMD, "--yes", "--json"];
  const started = Date.now();
  const out = await run(process.execPath, [...args, "--runs-dir", runsDir, "--", "fix add"], { env, cwd: repo, keep: true });
  const result = JSON.parse(out.toString("utf8"));
  if (result.terminalReason !== "verified") throw new Error(`the start-up run ended ${result.terminalReason}: ${result.summary}`);
  const events = readFileSync(join(result.runDir, "events.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
  const first = events.find((event) => event.type === "phase.started");
  if (!first) throw new Error(`${result.runDir}: no phase.started event`);
  return Date.parse(first.time) - started;
}

async function makeRepo(dir) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "math.js"), "export function add(a, b) {\n  return a - b;\n}\n");
  writeFileSync(join(dir, "check.sh"), "grep -q 'a + b' math.js\n");
  await git(dir, ["init", "-q", "-b", "main"]);
  await git(dir, ["add", "-A"]);
  await git(dir, ["commit", "-q", "-m", "bench repository"]);
}
