import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { listRuns } from "../src/run-dir/run-index.js";
import { type CliOutcome, HANDOFF_BIN, commandRunArgs, expectUsageError, runCli } from "./helpers/cli.js";
import { gitIn, makeRepo } from "./helpers/repo.js";

// Counts the result.json files opened, to show that a listing reads only the runs it shows.
const opened = vi.hoisted(() => ({ results: 0 }));
vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  const openSync = ((path: Parameters<typeof fs.openSync>[0], ...rest: unknown[]) => {
    if (String(path).endsWith("result.json")) opened.results++;
    return (fs.openSync as (...args: unknown[]) => number)(path, ...rest);
  }) as typeof fs.openSync;
  return { ...fs, default: { ...fs, openSync }, openSync };
});

interface Entry {
  kind: string;
  id: string;
  dir: string;
  startedAt: string;
  repos: string[];
  backends: string[];
  status: { state: string; verdict?: string; why?: string; phase?: string | null };
}

let root: string;
let runsDir: string;
let repoA: string;
let repoB: string;
let elsewhere: string;

/** `handoff run` of the command backend, approved, verified by `true`, into the shared runs directory (in beforeAll: no runCli, whose temp dir is a test's). */
function cliRun(repo: string, runId: string, agentCmd: string): void {
  const args = commandRunArgs(repo, agentCmd, ["--yes", "--verify", "true", "--runs-dir", runsDir, "--run-id", runId], "edit");
  const state = join(root, "state");
  const env = {
    ...process.env,
    XDG_STATE_HOME: state,
    HANDOFF_WORKSPACE_DIR: join(state, "ws"),
    HANDOFF_CLI_HOME_DIR: join(state, "homes"),
  };
  const outcome = spawnSync(process.execPath, [HANDOFF_BIN, ...args], {
    cwd: root,
    env,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  expect(outcome.status === 0 || outcome.status === 3, outcome.stderr).toBe(true);
}

function list(args: readonly string[], cwd: string): Promise<CliOutcome> {
  return runCli(["list", "--runs-dir", runsDir, ...args], { cwd });
}

async function listJson(args: readonly string[], cwd: string): Promise<Entry[]> {
  const outcome = await list([...args, "--json"], cwd);
  expect(outcome.code, outcome.stderr).toBe(0);
  return JSON.parse(outcome.stdout) as Entry[];
}

/** A run directory made by hand from run `from`'s request.json, started `ageSeconds` ago by the clock of its request.json. */
function runDirFrom(from: string, id: string, ageSeconds: number): string {
  const dir = join(runsDir, id);
  mkdirSync(dir, { mode: 0o700 });
  copyFileSync(join(runsDir, from, "request.json"), join(dir, "request.json"));
  const when = new Date(Date.now() - ageSeconds * 1000);
  utimesSync(join(dir, "request.json"), when, when);
  return dir;
}

function writeCheckpoint(dir: string, owner: { pid: number; startTime: null }, phase: string): void {
  writeFileSync(join(dir, "checkpoint.json"), JSON.stringify({ runId: "x", phase, owner }), { mode: 0o600 });
}

describe("handoff list", () => {
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "handoff-list-"));
    runsDir = join(root, "runs");
    repoA = realpathSync(await makeRepo({ "a.txt": "a\n" }, { dir: join(root, "repo-a") }));
    repoB = realpathSync(await makeRepo({ "b.txt": "b\n" }, { dir: join(root, "repo-b") }));
    elsewhere = join(root, "not-a-repo");
    mkdirSync(elsewhere);
    // Oldest first: a run of A with no change, a verified run of B, a verified run of A.
    cliRun(repoA, "a-nothing", "true");
    cliRun(repoB, "b-verified", "echo more >> b.txt");
    cliRun(repoA, "a-verified", "echo more >> a.txt");
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  test("inside a repository, lists that repository's runs newest first, and the header says whose they are", async () => {
    const outcome = await list([], join(repoA));
    expect(outcome.code, outcome.stderr).toBe(0);
    const [header, columns, ...rows] = outcome.stdout.trimEnd().split("\n");
    expect(header).toBe(`runs of ${repoA} in ${runsDir}, newest first, at most 20 (--all: every repository)`);
    expect(columns).toMatch(/^ID +STARTED +BACKEND +VERDICT +REPOSITORY$/);
    expect(rows.map((line) => line.split(/ +/).slice(2, 5))).toEqual([
      ["command", "verified", repoA],
      ["command", "no_changes", repoA],
    ]);
    expect(rows.map((line) => line.split(" ")[0])).toEqual(["a-verified", "a-nothing"]);
  });

  test("--all and a directory outside any repository list every repository's runs; --limit keeps the newest", async () => {
    const all = await listJson(["--all"], repoA);
    expect(all.map((entry) => entry.id)).toEqual(["a-verified", "b-verified", "a-nothing"]);
    expect(all[1]).toMatchObject({
      kind: "run",
      repos: [repoB],
      backends: ["command"],
      status: { state: "finished", verdict: "verified" },
    });
    expect((await listJson([], elsewhere)).map((entry) => entry.id)).toEqual(["a-verified", "b-verified", "a-nothing"]);
    expect((await listJson(["--all", "--limit", "1"], repoA)).map((entry) => entry.id)).toEqual(["a-verified"]);
    const text = await list([], elsewhere);
    expect(text.stdout.split("\n")[0]).toBe(
      `runs of every repository (not inside a git repository) in ${runsDir}, newest first, at most 20`,
    );
  });

  test("--json prints only the array on stdout", async () => {
    const outcome = await list(["--json"], repoB);
    expect(outcome.stderr).toBe("");
    expect(JSON.parse(outcome.stdout)).toHaveLength(1);
  });

  test("a running run and a crashed one say so instead of failing the listing", async () => {
    const running = runDirFrom("a-verified", "z-running", 0);
    writeCheckpoint(running, { pid: process.pid, startTime: null }, "agent");
    const crashed = runDirFrom("a-verified", "z-crashed", 1);
    const gone = spawnSync("true").pid!;
    writeCheckpoint(crashed, { pid: gone, startTime: null }, "verify");
    try {
      const entries = await listJson([], repoA);
      expect(entries.slice(0, 2)).toMatchObject([
        { id: "z-running", repos: [repoA], status: { state: "running", phase: "agent" } },
        { id: "z-crashed", repos: [repoA], status: { state: "crashed", phase: "verify" } },
      ]);
      const text = (await list([], repoA)).stdout;
      expect(text).toMatch(/z-running .* running \(agent\) /);
      expect(text).toMatch(/z-crashed .* crashed in verify \(the next handoff run ends it\) /);
    } finally {
      rmSync(running, { recursive: true });
      rmSync(crashed, { recursive: true });
    }
  });

  test("a symlinked or a huge result.json is neither followed nor read whole: the run is listed as unknown", async () => {
    const linked = runDirFrom("a-verified", "z-linked", 0);
    symlinkSync(join(runsDir, "a-verified", "result.json"), join(linked, "result.json"));
    const huge = runDirFrom("a-verified", "z-huge", 1);
    writeFileSync(join(huge, "result.json"), "", { mode: 0o600 });
    truncateSync(join(huge, "result.json"), 64 * 1024 * 1024);
    try {
      const entries = await listJson([], repoA);
      expect(entries.slice(0, 2)).toMatchObject([
        { id: "z-linked", status: { state: "unknown", why: "result.json is a symbolic link" } },
        { id: "z-huge", status: { state: "unknown", why: "result.json cannot be read (too_large)" } },
      ]);
    } finally {
      rmSync(linked, { recursive: true });
      rmSync(huge, { recursive: true });
    }
  });

  test("a batch is one line: its worst outcome and its counts", async () => {
    const file = join(root, "tasks.jsonl");
    writeFileSync(file, `${JSON.stringify({ task: "edit", repo: repoB, agentCmd: "echo again >> b.txt", verify: ["true"] })}\n`);
    const batch = await runCli(["batch", file, "--yes", "--runs-dir", runsDir, "--batch-id", "the-batch"]);
    expect(batch.code, batch.stderr).toBe(0);
    try {
      const [entry] = await listJson([], repoB);
      expect(entry).toMatchObject({
        kind: "batch",
        id: "the-batch",
        repos: [repoB],
        status: { state: "finished", verdict: "verified", summary: "1 task(s): 1 verified" },
      });
      expect((await list([], repoB)).stdout).toMatch(/the-batch \(batch\) .* verified /);
      expect((await listJson([], repoA)).map((run) => run.id)).not.toContain("the-batch");
    } finally {
      rmSync(join(runsDir, "the-batch"), { recursive: true });
    }
  });

  test("with a thousand runs, the newest are listed in order and only their result.json files are read", () => {
    const many = join(root, "many");
    mkdirSync(many);
    const result = readFileSync(join(runsDir, "a-verified", "result.json"));
    for (let k = 0; k < 1000; k++) {
      const dir = join(many, `run-${String(k).padStart(4, "0")}`);
      mkdirSync(dir);
      writeFileSync(join(dir, "request.json"), readFileSync(join(runsDir, "a-verified", "request.json")), { mode: 0o600 });
      writeFileSync(join(dir, "result.json"), result, { mode: 0o600 });
      // Started in the reverse order of their names: the order comes from the clock, not the id.
      const when = new Date(Date.UTC(2026, 0, 1) + (1000 - k) * 1000);
      utimesSync(join(dir, "request.json"), when, when);
    }
    opened.results = 0;
    const entries = listRuns(many, { repo: null, limit: 5 });
    expect(entries.map((entry) => entry.id)).toEqual(["run-0000", "run-0001", "run-0002", "run-0003", "run-0004"]);
    expect(opened.results).toBe(5);
  });
});

describe("show and apply without a run id", () => {
  let base: string;
  let runs: string;
  beforeAll(() => {
    base = mkdtempSync(join(tmpdir(), "handoff-latest-"));
    runs = join(base, "runs");
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  test("mean the latest finished run of the current repository, and say which on stderr", async () => {
    const repo = realpathSync(await makeRepo({ "a.txt": "a\n" }, { dir: join(base, "repo") }));
    const other = realpathSync(await makeRepo({ "b.txt": "b\n" }, { dir: join(base, "other") }));
    const run = (target: string, id: string, agentCmd: string) =>
      runCli(commandRunArgs(target, agentCmd, ["--yes", "--verify", "true", "--runs-dir", runs, "--run-id", id], "edit"));
    expect((await run(repo, "first", "echo one >> a.txt")).code).toBe(0);
    expect((await run(repo, "second", "echo two >> a.txt")).code).toBe(0);
    expect((await run(other, "of-other", "echo three >> b.txt")).code).toBe(0);
    mkdirSync(join(repo, "sub"));

    const shown = await runCli(["show", "--runs-dir", runs, "--json"], { cwd: join(repo, "sub") });
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout).runId).toBe("second");
    expect(shown.stderr).toMatch(new RegExp(`^handoff: the latest run of ${repo}: second \\(verified, started \\S+\\)\\n$`));

    const applied = await runCli(["apply", "--runs-dir", runs], { cwd: repo });
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stderr).toContain(`handoff: the latest run of ${repo}: second`);
    expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("a\ntwo\n");
    gitIn(repo, "checkout", "--", "a.txt");

    // -C names the repository whose latest run apply takes.
    const appliedC = await runCli(["apply", "--runs-dir", runs, "-C", other], { cwd: repo });
    expect(appliedC.code, appliedC.stderr).toBe(0);
    expect(readFileSync(join(other, "b.txt"), "utf8")).toBe("b\nthree\n");
  });

  test("outside a repository, or with no finished run of it, is a usage error that says so", async () => {
    const outside = join(base, "outside");
    mkdirSync(outside, { recursive: true });
    expectUsageError(await runCli(["show", "--runs-dir", runs], { cwd: outside }), /is not inside a git repository.*handoff list --all/);
    const fresh = realpathSync(await makeRepo({ "c.txt": "c\n" }, { dir: join(base, "fresh") }));
    expectUsageError(await runCli(["show", "--runs-dir", runs], { cwd: fresh }), `no finished run of ${fresh} in ${runs}`);
    const refused = await runCli(["apply", "--runs-dir", runs], { cwd: fresh });
    expectUsageError(refused, "no finished run of");
  });
});
