#!/usr/bin/env node
// `npm run demo`: a real delegation with no key and no network. Claude Code (installed from the npm registry into
// test/agent-clis/claude on first use) fixes a failing test in a bundled demo repository, talking to handoff's
// scripted model on 127.0.0.1; handoff runs all four gates and prints its report.
// `npm run demo -- --repair`: the model gets it wrong once (it multiplies); handoff's verification fails, handoff sends
// its feedback into the same Claude session (--attempts 3), and the second attempt is verified.
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const say = (text) => process.stderr.write(`demo: ${text}\n`);
const cliDir = join(root, "test", "agent-clis", "claude");
const claude = join(cliDir, "node_modules", ".bin", "claude");

function run(command, args, options = {}) {
  const outcome = spawnSync(command, args, { stdio: ["ignore", "inherit", "inherit"], ...options });
  if (outcome.status !== 0) throw new Error(`${command} ${args.join(" ")} failed (${outcome.status ?? outcome.signal})`);
}

if (!existsSync(join(root, "dist", "src", "cli", "cli.js"))) run("npm", ["run", "build"], { cwd: root });
if (!existsSync(claude)) {
  say("installing Claude Code (pinned) into test/agent-clis/claude, from the npm registry…");
  run("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: cliDir });
}

const { startScriptedModel } = await import(join(root, "dist", "scripted-model", "index.js"));
const scratch = mkdtempSync(join(tmpdir(), "handoff-demo-"));
const repo = join(scratch, "demo-repo");
cpSync(join(root, "demo", "repo"), repo, { recursive: true });
const git = (...args) => run("git", ["-C", repo, "-c", "user.name=handoff demo", "-c", "user.email=demo@example.invalid", ...args]);
git("init", "-q", "-b", "main");
git("add", "-A");
git("commit", "-q", "-m", "add() subtracts");

const repair = process.argv.includes("--repair");
const scriptFile = join(root, "demo", repair ? "model-script-repair.json" : "model-script.json");
const model = await startScriptedModel({ script: JSON.parse(readFileSync(scriptFile, "utf8")) });
say(
  repair
    ? `scripted model listening on ${model.url} (it plays Claude: a wrong fix first, then the right one once handoff's feedback arrives)`
    : `scripted model listening on ${model.url} (it plays Claude: run the tests, fix math.js, claim success)`,
);
say(`demo repository with a failing test: ${repo}`);

const runsDir = join(scratch, "runs");
// HOME points at an empty scratch dir: the demo never sees, links or uses your own Claude login.
const env = {
  ...process.env,
  HOME: join(scratch, "home"),
  XDG_STATE_HOME: join(scratch, "state"),
  HANDOFF_CLI_HOME_DIR: join(scratch, "cli-homes"),
  HANDOFF_WORKSPACE_DIR: join(scratch, "workspaces"),
  CLAUDE_CONFIG_DIR: "",
  ANTHROPIC_BASE_URL: model.url,
  ANTHROPIC_API_KEY: "demo-key-for-the-scripted-model",
  CLAUDE_CODE_MAX_RETRIES: "0",
};
const handoff = join(root, "bin", "handoff.js");
const args = [
  handoff,
  "run",
  "-C",
  repo,
  "--backend",
  "claude",
  "--bin",
  claude,
  "--env",
  "ANTHROPIC_BASE_URL",
  "--env",
  "ANTHROPIC_API_KEY",
  "--env",
  "CLAUDE_CODE_MAX_RETRIES",
  "--verify",
  "npm test",
  "--yes",
  ...(repair ? ["--attempts", "3"] : []),
  "--runs-dir",
  runsDir,
  "--run-id",
  "demo",
  "--",
  "The test in test.js fails: make add() in math.js return the sum. Run npm test to check.",
];
say(`handoff ${args.slice(1).join(" ")}`);
const code = await new Promise((resolvePromise) => {
  const child = spawn(process.execPath, args, { env, stdio: ["ignore", "inherit", "inherit"] });
  child.on("close", (status) => resolvePromise(status ?? 1));
});
await model.close();
say(`handoff exited ${code}; the report:\n`);
spawnSync(process.execPath, [handoff, "show", join(runsDir, "demo")], { env, stdio: "inherit" });
say(`run directory kept at ${join(runsDir, "demo")} (remove ${scratch} when done)`);
process.exitCode = code;
