#!/usr/bin/env node
// `npm run demo`: a real delegation with no key and no network. Claude Code (installed from the npm registry into
// test/agent-clis/claude on first use) fixes a failing test in a bundled demo repository, talking to handoff's
// scripted model on 127.0.0.1; handoff runs all four gates and prints its report.
// `npm run demo -- --backend NAME`: the same with any of the agent CLIs (codex, gemini, copilot, …), set up as a user
// of it would have it pointed at the scripted model (scripted-model/users/<name>.ts).
// `npm run demo -- --repair`: the model gets it wrong once (it multiplies); handoff's verification fails, handoff sends
// its feedback into the same session (--attempts 3), and the second attempt is verified.
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const say = (text) => process.stderr.write(`demo: ${text}\n`);

function run(command, args, options = {}) {
  const outcome = spawnSync(command, args, { stdio: ["ignore", "inherit", "inherit"], ...options });
  if (outcome.status !== 0) throw new Error(`${command} ${args.join(" ")} failed (${outcome.status ?? outcome.signal})`);
}

const { values: flags } = parseArgs({ options: { backend: { type: "string", short: "b" }, repair: { type: "boolean" } } });
if (!existsSync(join(root, "dist", "src", "cli", "cli.js"))) run("npm", ["run", "build"], { cwd: root });
const { CLI_USERS } = await import(join(root, "dist", "scripted-model", "users", "index.js"));
const backend = flags.backend ?? "claude";
const user = CLI_USERS[backend];
if (!user) {
  say(`--backend must be one of ${Object.keys(CLI_USERS).join(", ")}, not '${backend}'`);
  process.exit(2);
}
const cliDir = join(root, "test", "agent-clis", backend);
const bin = join(cliDir, "node_modules", ".bin", backend);
if (!existsSync(bin)) {
  say(`installing ${backend} (pinned) into test/agent-clis/${backend}, from the npm registry…`);
  // npm ci refuses the opencode and omp lockfiles (they name other platforms' builds); install keeps the locked versions.
  const how = backend === "opencode" || backend === "omp" ? "install" : "ci";
  run("npm", [how, "--no-audit", "--no-fund", "--loglevel=error"], { cwd: cliDir });
}

const { startScriptedModel } = await import(join(root, "dist", "scripted-model", "index.js"));
const scratch = mkdtempSync(join(tmpdir(), "handoff-demo-"));
const repo = join(scratch, "demo-repo");
cpSync(join(root, "demo", "repo"), repo, { recursive: true });
const git = (...args) => run("git", ["-C", repo, "-c", "user.name=handoff demo", "-c", "user.email=demo@example.invalid", ...args]);
git("init", "-q", "-b", "main");
git("add", "-A");
git("commit", "-q", "-m", "add() subtracts");

const repair = flags.repair === true;
const scriptFile = join(root, "demo", repair ? "model-script-repair.json" : "model-script.json");
const model = await startScriptedModel({ script: JSON.parse(readFileSync(scriptFile, "utf8")) });
say(
  repair
    ? `scripted model listening on ${model.url} (it plays ${backend}'s model: a wrong fix first, then the right one once handoff's feedback arrives)`
    : `scripted model listening on ${model.url} (it plays ${backend}'s model: run the tests, fix math.js, claim success)`,
);
say(`demo repository with a failing test: ${repo}`);

const runsDir = join(scratch, "runs");
// HOME is a scratch dir with only the demo user's config for this CLI: the demo never sees, links or uses your own
// login, and none of your CLIs' config variables reach it.
const home = join(scratch, "home");
mkdirSync(home);
user.setupUserHome(home, model.url);
const passed = user.passEnv?.(model.url) ?? {};
// Codex will not install its sandbox helpers under the temp dir: its private homes go in the checkout, removed at the end.
const cliHomes = join(root, ".demo-homes", basename(scratch));
const env = {
  PATH: process.env.PATH,
  LANG: process.env.LANG ?? "C.UTF-8",
  HOME: home,
  TMPDIR: process.env.TMPDIR ?? tmpdir(),
  XDG_STATE_HOME: join(scratch, "state"),
  HANDOFF_CLI_HOME_DIR: cliHomes,
  HANDOFF_WORKSPACE_DIR: join(scratch, "workspaces"),
  HANDOFF_CACHE_DIR: join(scratch, "cache"),
  ...passed,
};
const handoff = join(root, "bin", "handoff.js");
const args = [
  handoff,
  "run",
  "-C",
  repo,
  "--backend",
  backend,
  "--bin",
  bin,
  ...Object.keys(passed).flatMap((name) => ["--env", name]),
  ...(user.model ? ["--model", user.model] : []),
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
rmSync(cliHomes, { recursive: true, force: true });
say(`handoff exited ${code}; the report:\n`);
spawnSync(process.execPath, [handoff, "show", join(runsDir, "demo")], { env, stdio: "inherit" });
say(`run directory kept at ${join(runsDir, "demo")} (remove ${scratch} when done)`);
process.exitCode = code;
