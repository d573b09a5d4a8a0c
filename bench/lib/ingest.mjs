// Ingestion benchmark: a real `handoff run --backend codex` end to end, on a fake Codex that prints `bytes` of
// JSONL events and changes nothing. Measures how fast handoff takes the stream in, and handoff's own peak RSS,
// against an anchor run in the same rounds: the same fake agent piped into a Node process that only counts bytes.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { git } from "./git.mjs";
import { summarize } from "./harness.mjs";

const GIB = 1024 ** 3;
/** handoff must read its agent's stream at least this fraction as fast as the byte-counting anchor (issue 32). */
export const INGEST_RATIO_TARGET = 0.5;
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
 * The anchor: the fake agent's stdout piped straight into bench/lib/count-stdin-bytes.mjs. Resolves with the reader's
 * own time from its first byte to the end, and the time from starting the agent to the reader's end.
 */
function runAnchor({ fake, reader: readerScript, bytes, cwd }) {
  return new Promise((done, fail) => {
    const started = performance.now();
    const env = { ...process.env, HANDOFF_BENCH_EVENT_BYTES: String(bytes) };
    const agent = spawn(process.execPath, [fake], { cwd, env, stdio: ["ignore", "pipe", "inherit"] });
    const reader = spawn(process.execPath, [readerScript], { cwd, stdio: [agent.stdout, "pipe", "inherit"] });
    const out = [];
    reader.stdout.on("data", (chunk) => out.push(chunk));
    agent.on("error", fail);
    reader.on("error", fail);
    // The agent's exit, not its close: its stdout belongs to the reader, and this process never sees that pipe end.
    const agentExited = new Promise((resolve) => agent.on("exit", resolve));
    agent.stdout.destroy(); // the reader has its own copy
    reader.on("close", async (code) => {
      const totalMs = performance.now() - started;
      const agentCode = await agentExited;
      let counted = null;
      try {
        counted = JSON.parse(Buffer.concat(out).toString("utf8"));
      } catch {
        // reported below
      }
      if (code !== 0 || agentCode !== 0 || counted?.bytes !== bytes)
        fail(new Error(`the anchor read ${counted?.bytes} of ${bytes} bytes (reader exit ${code}, agent exit ${agentCode})`));
      else done({ readingMs: counted.readingMs, totalMs });
    });
  });
}

/**
 * handoff's reading of the stream, timed as the anchor's is: from its first agent event (the stream's first line) to
 * the end of the agent phase, as events.jsonl records them.
 */
function readingMsOf(eventsJsonl) {
  const lines = readFileSync(eventsJsonl, "utf8").split("\n");
  let first = null;
  let end = null;
  for (const line of lines) {
    if (line === "") continue;
    const event = JSON.parse(line);
    if (first === null && event.type.startsWith("agent.")) first = Date.parse(event.time);
    if (event.type === "phase.finished" && event.phase === "agent") end = Date.parse(event.time);
  }
  if (first === null || end === null) throw new Error(`${eventsJsonl} holds no agent event or no end of the agent phase`);
  return end - first;
}

/** One end-to-end run of the real CLI on `bytes` of agent events: the agent phase's duration, peak RSS, events.jsonl's size. */
async function runHandoff({ root, wrapper, fake, repo, workDir, bytes, log }) {
  const runsDir = join(workDir, "runs");
  const rssFile = join(workDir, "rss.json");
  // Every round starts over.
  for (const stale of [runsDir, rssFile]) rmSync(stale, { recursive: true, force: true });
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
  const eventsJsonl = join(result.runDir, "events.jsonl");
  return {
    readingMs: readingMsOf(eventsJsonl),
    agentPhaseMs: result.timings.phases.agent,
    wallMs: ran.wallMs,
    peakRssBytes: measured.maxRssBytes,
    cpuMs: measured.cpuMs,
    eventsJsonlBytes: statSync(eventsJsonl).size,
  };
}

const mbPerSecond = (bytes, ms) => (ms > 0 ? Math.round((bytes / 1e6 / (ms / 1000)) * 10) / 10 : null);

/**
 * `rounds` runs of the real CLI on `bytes` of agent events, interleaved with as many runs of the anchor and of a
 * reader that only splits the lines and parses them as JSON (the start rotating each round). Throughput is MB (10^6 bytes) over the reading, from the first byte to the end, on both
 * sides (the fake agent's own start, about half a second, would otherwise count on both and flatter the ratio); the
 * ratio is of the medians. Also given: handoff over its whole agent phase, the anchor from starting the agent. Peak
 * RSS is the highest of handoff's runs.
 */
export async function benchIngestion({ repoRoot, workDir, bytes, rounds = 3, log = () => {} }) {
  const root = resolve(repoRoot);
  const fake = join(root, "bench/fixtures/codex-prints-a-gigabyte.mjs");
  const counter = join(root, "bench/lib/count-stdin-bytes.mjs");
  const parser = join(root, "bench/lib/parse-stdin-lines.mjs");
  const wrapper = join(root, "bench/lib/run-cli-measured.mjs");
  if (!existsSync(join(root, "dist/src/cli/cli.js"))) throw new Error(`${root}/dist/src/cli/cli.js is missing: run npm run build first`);

  const repo = join(workDir, "repo");
  // A second call on the same workDir starts over.
  rmSync(repo, { recursive: true, force: true });
  await makeRepo(repo);

  log(`ingest: handoff run on ${bytes} bytes of codex events against the same stream piped into a byte counter; ${rounds} rounds`);
  const handoff = [];
  const anchor = [];
  const jsonFloor = [];
  const sides = ["handoff", "anchor", "json"];
  for (let round = 0; round < rounds; round++) {
    const order = sides.map((_, k) => sides[(round + k) % sides.length]);
    for (const side of order) {
      if (side === "handoff") {
        const run = await runHandoff({ root, wrapper, fake, repo, workDir, bytes, log });
        handoff.push(run);
        log(
          `ingest: handoff ${mbPerSecond(bytes, run.readingMs)} MB/s reading (${mbPerSecond(bytes, run.agentPhaseMs)} over the agent phase), ${run.cpuMs} ms of CPU for the whole run, peak RSS ${Math.round(run.peakRssBytes / 1024 ** 2)} MiB`,
        );
      } else if (side === "anchor") {
        const run = await runAnchor({ fake, reader: counter, bytes, cwd: repo });
        anchor.push(run);
        log(`ingest: anchor ${mbPerSecond(bytes, run.readingMs)} MB/s reading (${mbPerSecond(bytes, run.totalMs)} from the agent's start)`);
      } else {
        const run = await runAnchor({ fake, reader: parser, bytes, cwd: repo });
        jsonFloor.push(run);
        log(`ingest: split + JSON.parse alone ${mbPerSecond(bytes, run.readingMs)} MB/s reading`);
      }
    }
  }
  const handoffMs = summarize(handoff.map((run) => run.readingMs));
  const anchorMs = summarize(anchor.map((run) => run.readingMs));
  const handoffRate = mbPerSecond(bytes, handoffMs.median);
  const anchorRate = mbPerSecond(bytes, anchorMs.median);
  const agentPhaseMs = summarize(handoff.map((run) => run.agentPhaseMs));
  const anchorTotalMs = summarize(anchor.map((run) => run.totalMs));
  const jsonMs = summarize(jsonFloor.map((run) => run.readingMs));
  return {
    bytes,
    rounds,
    seconds: handoffMs.median / 1000,
    mbPerSecond: handoffRate,
    ms: handoffMs,
    agentPhase: { seconds: agentPhaseMs.median / 1000, mbPerSecond: mbPerSecond(bytes, agentPhaseMs.median), ms: agentPhaseMs },
    anchor: {
      seconds: anchorMs.median / 1000,
      mbPerSecond: anchorRate,
      ms: anchorMs,
      fromStart: { mbPerSecond: mbPerSecond(bytes, anchorTotalMs.median), ms: anchorTotalMs },
    },
    // Reported, not judged: what a reader that only splits and parses the lines reaches in the same rounds.
    jsonFloor: { seconds: jsonMs.median / 1000, mbPerSecond: mbPerSecond(bytes, jsonMs.median), ms: jsonMs },
    ratio: handoffRate !== null && anchorRate ? Math.round((handoffRate / anchorRate) * 100) / 100 : null,
    ratioTarget: INGEST_RATIO_TARGET,
    peakRssBytes: Math.max(...handoff.map((run) => run.peakRssBytes)),
    // handoff's own CPU time over the whole run (user + system): on a loaded machine, steadier than its wall time.
    cpuMs: summarize(handoff.map((run) => run.cpuMs)),
    eventsJsonlBytes: handoff.at(-1).eventsJsonlBytes,
  };
}

// Standalone: node bench/lib/ingest.mjs [bytes [rounds]]
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const bytes = process.argv[2] === undefined ? GIB : Number(process.argv[2]);
  const rounds = process.argv[3] === undefined ? 1 : Number(process.argv[3]);
  if (!Number.isSafeInteger(bytes) || bytes < 0 || !(Number.isInteger(rounds) && rounds > 0)) {
    process.stderr.write("usage: node bench/lib/ingest.mjs [bytes [rounds]]\n");
    process.exit(2);
  }
  const workDir = mkdtempSync(join(tmpdir(), "handoff-bench-ingest-"));
  const outcome = await benchIngestion({
    repoRoot: fileURLToPath(new URL("../..", import.meta.url)),
    workDir,
    bytes,
    rounds,
    log: (line) => process.stderr.write(`${line}\n`),
  }).catch((error) => {
    // Kept, so the run directory the error names can be read.
    process.stderr.write(`ingest: kept ${workDir}\n`);
    throw error;
  });
  rmSync(workDir, { recursive: true, force: true });
  process.stdout.write(`${JSON.stringify(outcome, null, 2)}\n`);
}
