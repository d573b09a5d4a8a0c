#!/usr/bin/env node
// `npm run bench`: the cost of every gate, measured against git's own primitives (docs/performance.md).
// Progress goes to stderr; the table to stdout; the full results to bench/results/<date>.json (resultsFile).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, statfsSync, writeFileSync } from "node:fs";
import { cpus, release, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { REPO_SPECS, ensureRepo } from "./lib/generate.mjs";
import { benchBatch } from "./lib/batch.mjs";
import { benchStartup } from "./lib/startup.mjs";
import { benchEgress } from "./lib/egress.mjs";
import { benchIngestion } from "./lib/ingest.mjs";
import { benchRepo } from "./lib/phases.mjs";
import { REAL_PROJECT, RealProjectUnavailable, benchRealProject } from "./lib/real-project.mjs";
import { formatTable, judgeRows } from "./lib/report.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DEFAULT_ROUNDS = { small: 7, medium: 5, large: 3, real: 3, ingest: 3, batch: 2, startup: 21, egress: 5 };
// What `--only` can name: the synthetic repositories, the real npm project, the ingestion benchmark, the batch, start-up.
const SECTIONS = [...Object.keys(REPO_SPECS), "real", "ingest", "batch", "startup", "egress"];
const FS_TYPES = { 16914836: "tmpfs", 61267: "ext4", 1481003842: "xfs", 2435016766: "btrfs", 2035054128: "overlayfs" };
const USAGE =
  "usage: npm run bench -- [--sizes small,medium,large] [--no-real] [--only small,medium,large,real,ingest,batch,startup,egress] [--rounds N] [--ingest-bytes N] [--dir DIR]";

const log = (line) => process.stderr.write(`bench: ${line}\n`);

function options() {
  const { values } = parseArgs({
    options: {
      sizes: { type: "string", default: "small,medium,large" },
      "no-real": { type: "boolean", default: false },
      only: { type: "string" },
      rounds: { type: "string" },
      "ingest-bytes": { type: "string", default: String(1024 ** 3) },
      dir: { type: "string" },
      help: { type: "boolean" },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const only = values.only?.split(",").filter(Boolean) ?? null;
  const sizes = only ? only.filter((name) => name in REPO_SPECS) : values.sizes.split(",").filter(Boolean);
  const unknownSection = only?.find((name) => !SECTIONS.includes(name));
  if (unknownSection) throw new UsageError(`unknown section ${unknownSection} (${SECTIONS.join(", ")})`);
  const unknown = sizes.find((size) => !(size in REPO_SPECS));
  const rounds = values.rounds === undefined ? null : Number(values.rounds);
  const ingestBytes = Number(values["ingest-bytes"]);
  if (
    unknown ||
    (rounds !== null && !(Number.isInteger(rounds) && rounds > 0)) ||
    !(Number.isSafeInteger(ingestBytes) && ingestBytes >= 0)
  ) {
    throw new UsageError(unknown ? `unknown size ${unknown} (small, medium, large)` : USAGE);
  }
  return {
    sizes,
    real: only === null ? !values["no-real"] : only.includes("real"),
    rounds,
    ingestBytes: only === null || only.includes("ingest") ? ingestBytes : 0,
    batch: only === null || only.includes("batch"),
    startup: only === null || only.includes("startup"),
    egress: only === null || only.includes("egress"),
    dir: values.dir ?? process.env.HANDOFF_BENCH_DIR ?? defaultDir(),
    only,
  };
}

/**
 * bench/results/<date>.json for a whole bench, <date>-<sections>.json for `--only`; never over an earlier file (a
 * partial rerun once replaced a whole day's results): -2, -3… instead.
 */
function resultsFile(dir, date, only) {
  const stem = `${date}${only ? `-${only.join("+")}` : ""}`;
  for (let n = 1; ; n++) {
    const file = join(dir, `${stem}${n === 1 ? "" : `-${n}`}.json`);
    if (!existsSync(file)) return file;
  }
}

class UsageError extends Error {}

/**
 * tmpfs when it has room: file creation on this kind of VM's root disk costs 0.3–0.7 ms a file and drifts between
 * runs (docs/performance.md), which would drown the phases in noise. Both sides of every ratio use the same disk.
 */
function defaultDir() {
  try {
    const shm = statfsSync("/dev/shm");
    if (shm.type === 0x01021994 && shm.bavail * shm.bsize > 8 * 1024 ** 3) return "/dev/shm/handoff-bench";
  } catch {
    // no /dev/shm here
  }
  return join(tmpdir(), "handoff-bench");
}

function machine(dir) {
  const fsType = statfsSync(dir).type;
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? "unknown",
    memoryGiB: Math.round(totalmem() / 1024 ** 3),
    kernel: release(),
    node: process.version,
    git: execFileSync("git", ["--version"]).toString().trim(),
    benchDir: dir,
    filesystem: FS_TYPES[fsType] ?? `0x${fsType.toString(16)}`,
    loadAverage: loadAverage(),
  };
}

function loadAverage() {
  try {
    return execFileSync("cat", ["/proc/loadavg"]).toString().split(" ").slice(0, 3).join(" ");
  } catch {
    return null;
  }
}

async function main() {
  const started = Date.now();
  const opts = options();
  mkdirSync(join(opts.dir, "repos"), { recursive: true });
  const results = {
    date: new Date().toISOString(),
    machine: machine(opts.dir),
    repos: [],
    real: null,
    ingestion: null,
    batch: null,
    startup: null,
    egress: null,
  };
  log(`working in ${opts.dir} (${results.machine.filesystem}); ${results.machine.cpus} cores, ${results.machine.git}`);

  for (const name of opts.sizes) {
    const repo = await ensureRepo(name, join(opts.dir, "repos"), log);
    const rounds = opts.rounds ?? DEFAULT_ROUNDS[name];
    log(`${name}: ${repo.trackedFiles} tracked files, ${(repo.trackedBytes / 1e6).toFixed(0)} MB; ${rounds} rounds per phase`);
    const measured = await benchRepo({ name, root: ROOT, repo, workDir: join(opts.dir, "work", name), rounds, log });
    if (!measured.samePatch) log(`  WARNING: handoff's patch differs from git's own diff of the same change`);
    results.repos.push({
      name,
      spec: REPO_SPECS[name],
      facts: { trackedFiles: repo.trackedFiles, trackedBytes: repo.trackedBytes, baseCommit: repo.baseCommit },
      rounds,
      samePatch: measured.samePatch,
      patchBytes: measured.patchBytes,
      rows: measured.rows,
    });
  }

  if (opts.real) results.real = await realProject(opts);

  if (opts.ingestBytes > 0) {
    const workDir = join(opts.dir, "work", "ingest");
    mkdirSync(workDir, { recursive: true });
    results.ingestion = await benchIngestion({
      repoRoot: ROOT,
      workDir,
      bytes: opts.ingestBytes,
      rounds: opts.rounds ?? DEFAULT_ROUNDS.ingest,
      log: (line) => log(line),
    });
  }

  if (opts.batch) {
    const workDir = join(opts.dir, "work", "batch");
    results.batch = await benchBatch({ root: ROOT, workDir, rounds: opts.rounds ?? DEFAULT_ROUNDS.batch, log });
  }

  if (opts.startup) {
    const workDir = join(opts.dir, "work", "startup");
    results.startup = await benchStartup({ root: ROOT, workDir, rounds: opts.rounds ?? DEFAULT_ROUNDS.startup, log });
  }

  if (opts.egress) {
    const workDir = join(opts.dir, "work", "egress");
    results.egress = await benchEgress({ root: ROOT, workDir, rounds: opts.rounds ?? DEFAULT_ROUNDS.egress, log });
  }

  const missed = judgeRows(results);
  results.missed = missed;
  results.seconds = Math.round((Date.now() - started) / 1000);
  const resultsDir = join(ROOT, "bench", "results");
  mkdirSync(resultsDir, { recursive: true });
  const file = resultsFile(resultsDir, results.date.slice(0, 10), opts.only);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);

  process.stdout.write(`${formatTable(results)}\n\n`);
  process.stdout.write(missed.length === 0 ? "targets: all met\n" : `targets MISSED:\n${missed.map((m) => `  ${m}`).join("\n")}\n`);
  log(`done in ${results.seconds} s; results in ${file}`);
  return missed.length === 0 ? 0 : 1;
}

/** The real npm project; a failure (no registry, a run that did not verify) is this section's one line, not the bench's end. */
async function realProject(opts) {
  try {
    return await benchRealProject({
      root: ROOT,
      workDir: join(opts.dir, "work", REAL_PROJECT),
      rounds: opts.rounds ?? DEFAULT_ROUNDS.real,
      log,
    });
  } catch (error) {
    const message =
      error instanceof RealProjectUnavailable ? error.message : `${REAL_PROJECT}: not measured: ${error.message.split("\n")[0]}`;
    if (!(error instanceof RealProjectUnavailable)) log(error.stack);
    log(message);
    return { name: REAL_PROJECT, error: message };
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`bench: ${error instanceof UsageError ? error.message : error.stack}\n`);
    process.exit(error instanceof UsageError ? 2 : 1);
  },
);
