// Ingestion benchmark: a real `handoff run --backend codex` end to end, on a fake Codex that prints `bytes` of
// JSONL events and changes nothing. Measures how fast handoff takes the stream in, and handoff's own peak RSS.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { git } from "./git.mjs";

const GIB = 1024 ** 3;
const STDERR_TAIL_BYTES = 8 * 1024;

/** A repository with two files and one commit: the source the fake agent leaves untouched. */
async function makeRepo(dir) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "README.md"), "# bench\n\nA repository for handoff's ingestion benchmark.\n");
  writeFileSync(join(dir, "math.js"), "export function add(a, b) {\n  return a + b;\n}\n");
  await git(dir, ["init", "-q", "-b", "main"]);
  await git(dir, ["add", "-A"]);
  await git(dir, ["commit", "-q", "-m", "bench repository"]);
}

/** Runs `node <wrapper> <args>`; resolves with its exit code, stdout, the tail of its stderr and the wall time. */
function runMeasured(wrapper, args, { env, cwd, log }) {
  return new Promise((done, fail) => {
    const started = performance.now();
    const child = spawn(process.execPath, [wrapper, ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    const stdout = [];
    let stderr = "";
    let partial = "";
    child.stdout.on("data", (chunk) => stdout.push(chunk));
    child.stderr.setEncoding("utf8").on("data", (text) => {
      stderr = (stderr + text).slice(-STDERR_TAIL_BYTES);
      // handoff's progress lines, passed on as they come
      const lines = (partial + text).split("\n");
      partial = lines.pop();
      for (const line of lines) log(`  ${line}`);
    });
    child.on("error", fail);
    child.on("close", (code, signal) => {
      if (partial) log(`  ${partial}`);
      done({
        exitCode: code ?? (signal ? `signal ${signal}` : null),
        stdout: Buffer.concat(stdout).toString("utf8"),
        stderr,
        wallMs: performance.now() - started,
      });
    });
  });
}

/**
 * One end-to-end run of the real CLI on `bytes` of agent events. Returns throughput over the agent phase (MB =
 * 10^6 bytes), handoff's peak RSS, the run's wall time and the size of the events.jsonl it kept.
 */
export async function benchIngestion({ repoRoot, workDir, bytes, log = () => {} }) {
  const root = resolve(repoRoot);
  const fake = join(root, "bench/fixtures/codex-prints-a-gigabyte.mjs");
  const wrapper = join(root, "bench/lib/run-cli-measured.mjs");
  if (!existsSync(join(root, "dist/src/cli/cli.js"))) throw new Error(`${root}/dist/src/cli/cli.js is missing: run npm run build first`);

  const repo = join(workDir, "repo");
  const runsDir = join(workDir, "runs");
  const rssFile = join(workDir, "rss.json");
  // A second call on the same workDir starts over.
  for (const stale of [repo, runsDir, rssFile]) rmSync(stale, { recursive: true, force: true });
  await makeRepo(repo);

  const env = {
    ...process.env,
    HANDOFF_WORKSPACE_DIR: join(workDir, "workspaces"),
    HANDOFF_CLI_HOME_DIR: join(workDir, "cli-homes"),
    HANDOFF_BENCH_EVENT_BYTES: String(bytes),
    HANDOFF_BENCH_RSS_FILE: rssFile,
    HANDOFF_BENCH_REPO_ROOT: root,
  };
  // Generous limits: at a few MB/s a GiB takes minutes, and a slow run should be measured, not killed.
  const args = [
    "run",
    "-C",
    repo,
    "--yes",
    "--json",
    "--no-verify",
    "--backend",
    "codex",
    "--bin",
    fake,
    "--runs-dir",
    runsDir,
    "--timeout",
    "3600",
    "--idle-timeout",
    "600",
    "--env",
    "HANDOFF_BENCH_EVENT_BYTES", // the agent's environment is an allowlist
    "--",
    "bench task",
  ];
  log(`ingest: handoff run on ${bytes} bytes of codex events`);
  const ran = await runMeasured(wrapper, args, { env, cwd: workDir, log });

  let result;
  try {
    result = JSON.parse(ran.stdout);
  } catch {
    throw new Error(`handoff run exited ${ran.exitCode} without a result on stdout; stderr ends:\n${ran.stderr}`);
  }
  if (result.terminalReason !== "no_changes" || ran.exitCode !== 3) {
    throw new Error(
      `handoff run ended ${result.terminalReason}${result.detail ? ` (${result.detail})` : ""} with exit ${ran.exitCode}, not no_changes (3): ${result.summary}\nrun directory: ${result.runDir}\nstderr ends:\n${ran.stderr}`,
    );
  }
  const measured = existsSync(rssFile) ? JSON.parse(readFileSync(rssFile, "utf8")) : null;
  if (!measured) throw new Error(`the measuring wrapper wrote no ${rssFile}; stderr ends:\n${ran.stderr}`);

  const agentPhaseMs = result.timings.phases.agent;
  const seconds = agentPhaseMs / 1000;
  return {
    bytes,
    seconds,
    mbPerSecond: seconds > 0 ? bytes / 1e6 / seconds : null,
    agentPhaseMs,
    wallSeconds: ran.wallMs / 1000,
    peakRssBytes: measured.maxRssBytes,
    terminalReason: result.terminalReason,
    eventsJsonlBytes: statSync(join(result.runDir, "events.jsonl")).size,
    exitCode: ran.exitCode,
  };
}

// Standalone: node bench/lib/ingest.mjs [bytes]
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const bytes = process.argv[2] === undefined ? GIB : Number(process.argv[2]);
  if (!Number.isSafeInteger(bytes) || bytes < 0) {
    process.stderr.write("usage: node bench/lib/ingest.mjs [bytes]\n");
    process.exit(2);
  }
  const workDir = mkdtempSync(join(tmpdir(), "handoff-bench-ingest-"));
  const outcome = await benchIngestion({
    repoRoot: fileURLToPath(new URL("../..", import.meta.url)),
    workDir,
    bytes,
    log: (line) => process.stderr.write(`${line}\n`),
  }).catch((error) => {
    // Kept, so the run directory the error names can be read.
    process.stderr.write(`ingest: kept ${workDir}\n`);
    throw error;
  });
  rmSync(workDir, { recursive: true, force: true });
  process.stdout.write(`${JSON.stringify(outcome, null, 2)}\n`);
}
