import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { collectKeptSessions, sweepExpiredSessions } from "../src/repair/session-gc.js";
import { type CliOutcome, commandRunArgs, runCli } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent } from "./helpers/run.js";

/**
 * Issue 14: a kept session (`--keep-session`) lives 7 days. `handoff gc` removes the expired ones now (all with
 * --all), every `run`/`resume` start removes the expired ones, and neither ever removes anything but the exact home
 * handoff made for that run.
 */

function makeState() {
  const root = tempDir("handoff-gc");
  const env = { XDG_STATE_HOME: join(root, "xdg"), HANDOFF_WORKSPACE_DIR: join(root, "ws"), HANDOFF_CLI_HOME_DIR: join(root, "homes") };
  return { root, env, runsDir: join(root, "xdg", "handoff", "runs") };
}
type State = ReturnType<typeof makeState>;

/** A verified command run `runId` with --keep-session; returns its kept home. */
async function keptRun(state: State, repo: string, runId: string, extra: readonly string[] = ["--keep-session"]): Promise<string> {
  const args = commandRunArgs(
    repo,
    agent("fixes-add.sh"),
    ["--verify", "npm test", "--yes", "--run-id", runId, ...extra],
    "fix the failing test",
  );
  const outcome = await runCli(args, { env: state.env });
  expect(outcome.code, outcome.stderr).toBe(0);
  const { session } = readResult(state, runId);
  if (session.kept) expect(existsSync(session.home)).toBe(true);
  return session.home;
}

function readResult(state: State, runId: string): Record<string, any> {
  return JSON.parse(readFileSync(join(state.runsDir, runId, "result.json"), "utf8"));
}

/** What `keptUntil` says, as if the 7 days were over (the test's stand-in for a week passing). */
function expire(state: State, runId: string, until = "2020-01-01T00:00:00.000Z"): void {
  editSession(state, runId, (session) => (session.keptUntil = until));
}

function editSession(state: State, runId: string, edit: (session: Record<string, any>) => void): void {
  const path = join(state.runsDir, runId, "result.json");
  const result = JSON.parse(readFileSync(path, "utf8"));
  edit(result.session);
  rmSync(path);
  writeFileSync(path, JSON.stringify(result), { mode: 0o644 });
}

async function gc(state: State, args: readonly string[] = []): Promise<CliOutcome> {
  return await runCli(["gc", "--runs-dir", state.runsDir, ...args], { env: state.env });
}

describe("handoff gc", () => {
  test("removes an expired kept session and keeps a fresh one, saying which with run id and expiry; result.json is not rewritten", async () => {
    const state = makeState();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const old = await keptRun(state, repo, "old");
    const fresh = await keptRun(state, repo, "fresh");
    expire(state, "old");
    const before = readFileSync(join(state.runsDir, "old", "result.json"));

    const outcome = await gc(state);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(fresh)).toBe(true);
    const keptUntil = readResult(state, "fresh").session.keptUntil;
    expect(outcome.stdout).toBe(`removed   old  2020-01-01T00:00:00.000Z  ${old}\nkept      fresh  ${keptUntil}  ${fresh}\n`);
    expect(readFileSync(join(state.runsDir, "old", "result.json"))).toEqual(before);

    // Again: nothing left to remove; the removed one is not listed.
    expect((await gc(state)).stdout).toBe(`kept      fresh  ${keptUntil}  ${fresh}\n`);
  });

  test("--all removes every kept session, and --json says what it removed", async () => {
    const state = makeState();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const fresh = await keptRun(state, repo, "fresh");
    const outcome = await gc(state, ["--all", "--json"]);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(JSON.parse(outcome.stdout)).toEqual({
      removed: [
        { runId: "fresh", runDir: join(state.runsDir, "fresh"), home: fresh, keptUntil: readResult(state, "fresh").session.keptUntil },
      ],
      kept: [],
      leftAlone: [],
    });
    expect(existsSync(fresh)).toBe(false);
  });

  test("--all removes the kept sessions of a candidates run's candidates too, and lists each by its own run", async () => {
    const state = makeState();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    await keptRun(state, repo, "best", ["--keep-session", "--candidates", "2"]);
    const homes = [1, 2].map(
      (k) => JSON.parse(readFileSync(join(state.runsDir, "best", "candidates", String(k), "result.json"), "utf8")).session.home as string,
    );
    for (const home of homes) expect(existsSync(home)).toBe(true);
    const outcome = await gc(state, ["--all", "--json"]);
    expect(outcome.code, outcome.stderr).toBe(0);
    const collection = JSON.parse(outcome.stdout);
    expect(collection.removed.map((entry: { runDir: string }) => entry.runDir)).toEqual(
      [1, 2].map((k) => join(state.runsDir, "best", "candidates", String(k))),
    );
    expect(collection.leftAlone).toEqual([]);
    for (const home of homes) expect(existsSync(home)).toBe(false);
  });

  test("with no kept session it says so", async () => {
    const state = makeState();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    await keptRun(state, repo, "plain", []);
    const outcome = await gc(state, ["--all"]);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stdout).toBe("no kept sessions\n");
  });

  test("a result.json whose session.home names another directory: left alone, never removed", async () => {
    const state = makeState();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const home = await keptRun(state, repo, "doctored");
    const victim = join(state.root, "victim");
    mkdirSync(victim);
    writeFileSync(join(victim, "precious"), "keep me");
    editSession(state, "doctored", (session) => (session.home = victim));
    expire(state, "doctored");

    const outcome = await gc(state, ["--all"]);
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(readFileSync(join(victim, "precious"), "utf8")).toBe("keep me");
    expect(outcome.stdout).toMatch(/^left {6}doctored .*victim {2}\(it is not .*-home, the home handoff made for the run\)\n$/);
    // The real home is not what result.json names: gc does not go looking for it either.
    expect(existsSync(home)).toBe(true);
  });

  test("a link planted where the kept home was: neither it nor its target is removed", async () => {
    const state = makeState();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const home = await keptRun(state, repo, "linked");
    const victim = join(state.root, "victim");
    mkdirSync(victim);
    writeFileSync(join(victim, "precious"), "keep me");
    renameSync(home, `${home}.moved`);
    symlinkSync(victim, home);
    expire(state, "linked");

    const outcome = await gc(state, ["--all"]);
    expect(outcome.stdout).toMatch(/^left {6}linked .*\(it is a symbolic link\)\n$/);
    expect(readFileSync(join(home, "precious"), "utf8")).toBe("keep me");
  });

  test("collectKeptSessions: the same home is kept today and removed once its 7 days are over", async () => {
    const state = makeState();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const home = await keptRun(state, repo, "week");
    expect(collectKeptSessions(state.runsDir).kept.map((entry) => entry.home)).toEqual([home]);
    expect(existsSync(home)).toBe(true);
    const inEightDays = Date.now() + 8 * 86_400_000;
    expect(collectKeptSessions(state.runsDir, { now: inEightDays }).removed.map((entry) => entry.home)).toEqual([home]);
    expect(existsSync(home)).toBe(false);
  });
});

describe("the age limit at every start", () => {
  test("handoff run removes an expired kept session before it starts, and leaves a fresh one", async () => {
    const state = makeState();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const old = await keptRun(state, repo, "old");
    const fresh = await keptRun(state, repo, "fresh");
    expire(state, "old");
    await keptRun(state, repo, "next", []);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(fresh)).toBe(true);
  });

  test("a run that kept no session is not read again at each start, until its result.json changes", async () => {
    const state = makeState();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const home = await keptRun(state, repo, "kept");
    editSession(state, "kept", (session) => (session.kept = false));
    expect(sweepExpiredSessions(state.runsDir)).toEqual([]);
    expect(Object.keys(JSON.parse(readFileSync(join(state.runsDir, ".settled-sessions.json"), "utf8")).runs)).toEqual(["kept"]);
    editSession(state, "kept", (session) => {
      session.kept = true;
      session.keptUntil = "2020-01-01T00:00:00.000Z";
    });
    expect(sweepExpiredSessions(state.runsDir).map((entry) => entry.home)).toEqual([home]);
    expect(existsSync(home)).toBe(false);
  });

  test("a keptUntil that is not a date counts as passed: nothing is kept for ever by mistake", async () => {
    const state = makeState();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const home = await keptRun(state, repo, "odd");
    expire(state, "odd", "next tuesday");
    await keptRun(state, repo, "next", []);
    expect(existsSync(home)).toBe(false);
  });
});
