import { createHash } from "node:crypto";
import { existsSync, lstatSync, readFileSync, readdirSync, readlinkSync, rmSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { z } from "zod";
import type { CliHome } from "../../src/agent/cli-contract.js";
import { CLI_INFOS, type CliName } from "../../backends/index.js";
import { linkLogins } from "../../src/agent/login-links.js";
import { prepareCliHome } from "../../src/agent/cli-home-prepare.js";
import { type ModelScript, type RecordedRequest, type ScriptedModel, startScriptedModel } from "../../scripted-model/index.js";
import { runProcess } from "../../src/process/process.js";
import type { CliUser } from "../../scripted-model/users/cli-user.js";
import { RunResult } from "../../src/verdict/result.js";
import { runCli } from "./cli.js";
import { FAILING_ADD_PROJECT, fingerprintTree, diffFingerprints, makeRepo, tempDir } from "./repo.js";
import { INTEGRITY_PROJECT } from "./integrity.js";

/**
 * The real-CLI conformance suite: each agent CLI, installed at its pinned version under test/agent-clis/<name>,
 * runs through the whole `handoff run` pipeline against the scripted model on 127.0.0.1.
 */

const AGENT_CLIS = resolve(import.meta.dirname, "../agent-clis");
/** Codex will not install its sandbox helpers under the temp dir, so CLI homes live in the checkout (gitignored). */
const CLI_HOMES = resolve(import.meta.dirname, "../../.test-homes");

export type { CliName };

/** The pinned CLI's executable, or null when test/agent-clis/<name> was not installed. */
export function agentCliBin(name: CliName): string | null {
  const bin = join(AGENT_CLIS, name, "node_modules", ".bin", name);
  return existsSync(bin) ? bin : null;
}

/** Every installed pinned CLI's .bin directory, for tests that look CLIs up on PATH. */
export function agentCliPath(): string {
  return CLI_INFOS.map((info) => join(AGENT_CLIS, info.name, "node_modules", ".bin")).join(":");
}

/** CI sets HANDOFF_CONFORMANCE=required: there a missing CLI is a failure, not a skip. */
export function conformanceEnabled(name: CliName): boolean {
  if (agentCliBin(name)) return true;
  if (process.env.HANDOFF_CONFORMANCE === "required") {
    throw new Error(`test/agent-clis/${name} is not installed: run npm run agent-clis`);
  }
  return false;
}

/** A CLI set up as a user would have it (scripted-model/users/). */
export type ConformanceCli = CliUser;

export interface CliRunOutcome {
  readonly code: number | null;
  readonly stderr: string;
  readonly result: RunResult;
  readonly events: Array<Record<string, unknown>>;
  readonly backendResult: Record<string, unknown>;
  readonly model: ScriptedModel;
  /** Processes still alive with this run's HANDOFF_RUN_ID in their environment (must be empty). */
  readonly leftovers: number[];
  /** Files of the fake user home that changed (the user's login must stay as it was). */
  readonly userHomeChanged: string[];
  /** The fake user home the run's CLI login came from. */
  readonly userHome: string;
  /** The run's directory, and the environment handoff ran with (for `resumeWithCli`). */
  readonly runDir: string;
  readonly env: Readonly<Record<string, string>>;
}

/** pids whose environment carries HANDOFF_RUN_ID=<runId>. */
export function processesOfRun(runId: string): number[] {
  const marker = Buffer.from(`HANDOFF_RUN_ID=${runId}\0`);
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`).includes(marker)) pids.push(Number(entry));
    } catch {
      // gone, or not ours
    }
  }
  return pids;
}

/** The task every conformance run gives the agent. */
const TASK = "make add() return the sum";

export const FIXED_MATH = "export function add(a, b) {\n  return a + b;\n}\n";

/** A model that fixes the fixture project's add() and says so. */
export const FIX_SCRIPT: ModelScript = {
  steps: [{ write: { path: "math.js", content: FIXED_MATH } }, { say: "Fixed add(). All tests pass." }],
};

/** A fix that makes the test fail (add(2, 2) is 5). */
export const WRONG_MATH = "export function add(a, b) {\n  return a + b + 1;\n}\n";

/** The phrase every feedback handoff sends after a failed attempt contains: what the scripted model's repair turn waits for. */
export const FEEDBACK_PHRASE = "did not pass handoff's checks";

/** A model that writes a wrong fix and claims success, then writes the right one once handoff's feedback arrives. */
/** What `handoff resume` asks for after a verified fix, and the model's answer to it (a second turn). */
export const RESUME_INSTRUCTION = "also export subtract(a, b)";
export const RESUME_SCRIPT: ModelScript = {
  steps: [{ write: { path: "math.js", content: FIXED_MATH } }, { say: "Fixed add(). All tests pass." }],
  next: [
    {
      when: RESUME_INSTRUCTION,
      steps: [
        { write: { path: "math.js", content: `${FIXED_MATH}\nexport function subtract(a, b) {\n  return a - b;\n}\n` } },
        { say: "Added subtract()." },
      ],
    },
  ],
};

export const REPAIR_SCRIPT: ModelScript = {
  steps: [{ write: { path: "math.js", content: WRONG_MATH } }, { say: "Done." }],
  next: [{ when: FEEDBACK_PHRASE, steps: [{ write: { path: "math.js", content: FIXED_MATH } }, { say: "Fixed add(). All tests pass." }] }],
};

/** The facts of each attempt the repair case reads from result.json `attempts`. */
const Attempts = z.array(z.looseObject({ terminalReason: z.string(), sessionId: z.string().nullable() }));

/** A fake user home with the user's own CLI config (pointing at `modelUrl`) written into it. */
export function fakeUserHome(cli: ConformanceCli, modelUrl: string): string {
  const home = tempDir(`handoff-user-${cli.name}`);
  cli.setupUserHome(home, modelUrl);
  return home;
}

const USER_ENV_RESET = {
  XDG_CONFIG_HOME: "",
  XDG_DATA_HOME: "",
  XDG_CACHE_HOME: "",
  XDG_STATE_HOME: "",
  CODEX_HOME: "",
  CLAUDE_CONFIG_DIR: "",
  PI_CODING_AGENT_DIR: "",
} as const;

/** One `handoff run` of the fixture project (failing `add`) with a pinned CLI and a scripted model. */
export async function runWithCli(
  cli: ConformanceCli,
  script: ModelScript,
  options: {
    readonly idleTimeoutSec?: number;
    readonly timeoutSec?: number;
    readonly files?: Record<string, string>;
    /** More `handoff run` options, before the task (e.g. `["--attempts", "2"]`). */
    readonly extraArgs?: readonly string[];
    /** The key the scripted model checks each request for (it records whether it arrived, never the key). */
    readonly expectedKey?: string;
    /** More variables in handoff's environment (pass them to the agent with `--env` in `extraArgs`). */
    readonly env?: Readonly<Record<string, string>>;
  } = {},
): Promise<CliRunOutcome> {
  const bin = agentCliBin(cli.name);
  if (!bin) throw new Error(`${cli.name} is not installed`);
  const model = await startScriptedModel({ script, expectedKey: options.expectedKey });
  onTestFinished(() => model.close());
  const repo = await makeRepo(options.files ?? FAILING_ADD_PROJECT);
  const userHome = fakeUserHome(cli, model.url);
  const homeBefore = fingerprintTree(userHome);
  const passEnv = cli.passEnv?.(model.url) ?? {};
  const runsDir = join(tempDir("handoff-runs"), "runs");
  mkdirSync(CLI_HOMES, { recursive: true });
  const runId = `conf-${cli.name}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  onTestFinished(() => {
    for (const entry of readdirSync(CLI_HOMES))
      if (entry.startsWith(runId)) rmSync(join(CLI_HOMES, entry), { recursive: true, force: true });
  });
  const outcome = await runCli(
    [
      "run",
      "-C",
      repo,
      "--backend",
      cli.name,
      "--bin",
      bin,
      "--verify",
      "npm test",
      "--yes",
      "--json",
      "--runs-dir",
      runsDir,
      "--run-id",
      runId,
      "--timeout",
      String(options.timeoutSec ?? 120),
      "--idle-timeout",
      String(options.idleTimeoutSec ?? 60),
      ...Object.keys(passEnv).flatMap((name) => ["--env", name]),
      ...(cli.model === undefined ? [] : ["--model", cli.model]),
      ...(options.extraArgs ?? []),
      "--",
      TASK,
    ],
    { env: { ...USER_ENV_RESET, HOME: userHome, HANDOFF_CLI_HOME_DIR: CLI_HOMES, ...passEnv, ...options.env } },
  );
  const env = { ...USER_ENV_RESET, HOME: userHome, HANDOFF_CLI_HOME_DIR: CLI_HOMES, ...passEnv, ...options.env };
  return collectRun(outcome, join(runsDir, runId), { model, userHome, homeBefore, env });
}

/**
 * `handoff resume <run> -- <instruction>` of a conformance run, with the same user home, scripted model and
 * environment (the script's `next` turns answer the instruction). The new run's id is derived from the first's.
 */
export async function resumeWithCli(first: CliRunOutcome, instruction: string): Promise<CliRunOutcome> {
  const runId = `${first.result.runId}-resumed`;
  onTestFinished(() => {
    for (const entry of readdirSync(CLI_HOMES))
      if (entry.startsWith(runId)) rmSync(join(CLI_HOMES, entry), { recursive: true, force: true });
  });
  const homeBefore = fingerprintTree(first.userHome);
  const outcome = await runCli(["resume", first.runDir, "--yes", "--json", "--run-id", runId, "--", instruction], { env: first.env });
  return collectRun(outcome, join(dirname(first.runDir), runId), {
    model: first.model,
    userHome: first.userHome,
    homeBefore,
    env: first.env,
  });
}

function collectRun(
  outcome: { readonly code: number | null; readonly stdout: string; readonly stderr: string },
  runDir: string,
  run: {
    readonly model: ScriptedModel;
    readonly userHome: string;
    readonly homeBefore: ReturnType<typeof fingerprintTree>;
    readonly env: Record<string, string>;
  },
): CliRunOutcome {
  const parsed = RunResult.safeParse(JSON.parse(outcome.stdout || "null"));
  if (!parsed.success) throw new Error(`no result on stdout (exit ${outcome.code}): ${outcome.stderr.slice(-2000)}`);
  const events = readFileSync(join(runDir, "events.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return {
    code: outcome.code,
    stderr: outcome.stderr,
    result: parsed.data,
    events,
    backendResult: JSON.parse(readFileSync(join(runDir, "backend-result.json"), "utf8")) as Record<string, unknown>,
    model: run.model,
    leftovers: processesOfRun(parsed.data.runId),
    userHomeChanged: diffFingerprints(run.homeBefore, fingerprintTree(run.userHome)),
    userHome: run.userHome,
    runDir,
    env: run.env,
  };
}

/** Every entry under `root`: symlinks with their targets, regular files with their sha256. */
function treeEntries(root: string): { links: string[]; files: string[] } {
  const links: string[] = [];
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const stat = lstatSync(path);
      if (stat.isSymbolicLink()) links.push(readlinkSync(path));
      else if (stat.isDirectory()) walk(path);
      else if (stat.isFile()) files.push(createHash("sha256").update(readFileSync(path)).digest("hex"));
    }
  };
  walk(root);
  return { links, files };
}

/** A home kept by --keep-session holds nothing of the user's login: no link into the user's home, no copy of a login file. */
export function expectKeptHomeWithoutLogin(run: CliRunOutcome): void {
  const session = run.result.session;
  expect(session?.kept, "session kept").toBe(true);
  expect(session?.keptUntil).toMatch(/^\d{4}-/);
  const kept = treeEntries(session!.home!);
  const user = treeEntries(run.userHome);
  expect(
    kept.links.filter((target) => target.startsWith(run.userHome)),
    "links to the user's login in the kept home",
  ).toEqual([]);
  expect(
    kept.files.filter((sha) => user.files.includes(sha)),
    "copies of the user's login files in the kept home",
  ).toEqual([]);
}

/** What every run must show whatever its verdict: no process left, the user's login untouched, a session id recorded everywhere. */
export function expectCleanRun(run: CliRunOutcome, options: { readonly session?: boolean } = {}): void {
  expect(run.leftovers, "processes left behind").toEqual([]);
  expect(run.userHomeChanged, "the user's own CLI config changed").toEqual([]);
  if (options.session !== false) {
    const sessionId = run.result.backend.sessionId;
    expect(sessionId, "session id in result.json").toMatch(/\S/);
    expect(run.backendResult.sessionId).toBe(sessionId);
    expect(
      run.events.some((event) => event.type === "agent.session" && event.sessionId === sessionId),
      "agent.session in events.jsonl",
    ).toBe(true);
  }
}

export interface ConformanceExpectations {
  /** Cases where this CLI's stream cannot reveal a session id (say why in the CLI's docs page). */
  readonly noSessionIn?: ReadonlyArray<"hang">;
  /** Why this CLI's stream carries no token usage (say so in the CLI's docs page); the run's usage must then be null. */
  readonly noUsage?: string;
  /** Words of the reason this CLI cannot continue a session from a clone at another path (`handoff resume`; say why in its docs page). */
  readonly cannotResumeInNewClone?: string;
}

/** The standard cases every backend must pass against its real CLI. */
export function describeConformance(cli: ConformanceCli, expectations: ConformanceExpectations = {}): void {
  describe.runIf(conformanceEnabled(cli.name))(`${cli.name} (real CLI, scripted model)`, () => {
    const CASE = { timeout: 180_000 };
    test("a scripted fix ends verified, with usage and the agent's claim recorded", CASE, async () => {
      const run = await runWithCli(cli, FIX_SCRIPT);
      expect(run.result.terminalReason, run.stderr).toBe("verified");
      expect(run.code).toBe(0);
      expect(run.result.patch?.files.map((file) => file.path)).toEqual(["math.js"]);
      expect(run.result.agent.finalMessage).toContain("All tests pass");
      if (expectations.noUsage) expect(run.result.agent.usage, expectations.noUsage).toBeNull();
      else expect(run.result.agent.usage?.outputTokens).toBeGreaterThan(0);
      expect(run.result.backend.version).toMatch(/^\d+\.\d+\.\d+/);
      expect(
        run.model.requests.some((request) => !request.side && request.hasAuth),
        "the model saw the user's credential",
      ).toBe(true);
      // In the sandbox the agent had an empty network: it reached the scripted model through handoff's gate alone.
      if (run.result.containment?.sandbox === "bwrap") {
        const modelPort = Number(new URL(run.model.url).port);
        expect(run.result.network).toMatchObject({ mode: "filtered", enforced: true });
        expect(run.result.network?.allowed).toContainEqual(
          expect.objectContaining({ host: "127.0.0.1", port: modelPort, roles: ["agent"], rule: expect.stringContaining(cli.name) }),
        );
      }
      expectCleanRun(run);
    });

    test(
      "a wrong fix, then handoff's feedback, then the right fix in the resumed session ends verified after 2 attempts; --keep-session keeps the home without the login",
      CASE,
      async () => {
        const run = await runWithCli(cli, REPAIR_SCRIPT, { extraArgs: ["--attempts", "2", "--keep-session"] });
        expect(run.result.terminalReason, run.stderr).toBe("verified");
        expect(run.code).toBe(0);
        expect(run.result.patch?.files.map((file) => file.path)).toEqual(["math.js"]);
        const attempts = Attempts.parse(run.result.attempts);
        expect(attempts.map((attempt) => attempt.terminalReason)).toEqual(["verification_failed", "verified"]);
        const sessionId = run.result.backend.sessionId;
        expect(attempts.map((attempt) => attempt.sessionId)).toEqual([sessionId, sessionId]);
        // On the model's side: the first attempt played turn 0; the resumed requests carried it (its write's result)
        // and handoff's feedback (turn 1).
        const turns = run.model.requests.filter((request) => !request.side && request.turn !== null);
        const resumed = turns.filter((request) => request.turn === 1);
        expect(turns[0]?.turn).toBe(0);
        expect(resumed.length).toBeGreaterThan(0);
        expect(resumed.every((request) => (request.toolResults ?? 0) >= 1)).toBe(true);
        expect(turns.slice(turns.indexOf(resumed[0]!)).every((request) => request.turn === 1)).toBe(true);
        expectCleanRun(run);
        // Kept for `handoff resume`, without the user's login: the links were only there while a turn ran.
        expectKeptHomeWithoutLogin(run);
      },
    );

    test(
      "handoff resume continues the kept session with the user's instruction in a new clone, through every gate, as a new run",
      CASE,
      async () => {
        const first = await runWithCli(cli, RESUME_SCRIPT, { extraArgs: ["--keep-session"] });
        expect(first.result.terminalReason, first.stderr).toBe("verified");
        const resumed = await resumeWithCli(first, RESUME_INSTRUCTION);
        if (expectations.cannotResumeInNewClone !== undefined) {
          // Never a silent fresh session: the run says it cannot, and the model got no request for the instruction.
          expect(resumed.result.terminalReason, resumed.stderr).toBe("external_agent_error");
          expect(resumed.result.detail).toBe("cannot_resume");
          expect(JSON.stringify(resumed.result)).toContain(expectations.cannotResumeInNewClone);
          expect(resumed.model.requests.filter((request) => request.turn === 1)).toEqual([]);
          expect(resumed.leftovers).toEqual([]);
          expect(resumed.userHomeChanged).toEqual([]);
          return;
        }
        expect(resumed.result.terminalReason, resumed.stderr).toBe("verified");
        expect(resumed.result.resumedFrom).toEqual({
          runId: first.result.runId,
          runDir: first.runDir,
          sessionId: first.result.backend.sessionId,
        });
        // The new run's patch holds both turns' work: the earlier fix (applied to the fresh clone) and the new function.
        expect(resumed.result.patch?.files.map((file) => file.path)).toEqual(["math.js"]);
        expect(readFileSync(join(resumed.runDir, "changes.patch"), "utf8")).toContain("+export function subtract(a, b)");
        // On the model's side: the resumed turn carried the first run's conversation and the instruction.
        const turns = resumed.model.requests.filter((request) => !request.side && request.turn === 1);
        expect(turns.length).toBeGreaterThan(0);
        expect(turns.every((request) => (request.toolResults ?? 0) >= 1)).toBe(true);
        expect(resumed.leftovers).toEqual([]);
        expect(resumed.userHomeChanged).toEqual([]);
      },
    );

    test("a model that edits nothing ends no_changes", CASE, async () => {
      const run = await runWithCli(cli, { steps: [{ say: "Nothing needs changing." }] });
      expect(run.result.terminalReason, run.stderr).toBe("no_changes");
      expect(run.code).toBe(3);
      expectCleanRun(run);
    });

    test("a 401 from the provider ends external_agent_error with auth_failed and a login hint", CASE, async () => {
      const run = await runWithCli(cli, { steps: [{ fail: { status: 401 } }] });
      expect(run.result.terminalReason, run.stderr).toBe("external_agent_error");
      expect(run.result.detail).toBe("auth_failed");
      expect(run.result.hint).toMatch(/log in/);
      expect(run.code).toBe(6);
      expectCleanRun(run);
    });

    test("a 429 from the provider ends external_agent_error with rate_limited", CASE, async () => {
      const run = await runWithCli(cli, { steps: [{ fail: { status: 429 } }] });
      expect(run.result.terminalReason, run.stderr).toBe("external_agent_error");
      expect(run.result.detail).toBe("rate_limited");
      expect(run.code).toBe(6);
      expectCleanRun(run);
    });

    test("a provider that never answers ends in timeout via the idle timeout, with no process left", CASE, async () => {
      const run = await runWithCli(cli, { steps: [{ hang: true }] }, { idleTimeoutSec: 12 });
      expect(run.result.terminalReason, run.stderr).toBe("timeout");
      expect(run.result.detail).toBe("idle_timeout");
      expect(run.code).toBe(124);
      expectCleanRun(run, { session: !expectations.noSessionIn?.includes("hang") });
    });

    test(
      "V1: a model that deletes the failing test file and says all tests pass is not verified: held to the base's test, it fails",
      CASE,
      async () => {
        const script: ModelScript = {
          steps: [{ run: { command: "rm test/math.test.js" } }, { say: "Removed a broken test. All tests pass." }],
        };
        const run = await runWithCli(cli, script, { files: INTEGRITY_PROJECT });
        expect(run.result.terminalReason, run.stderr).toBe("verification_failed");
        expect(run.result.detail).toBe("failed_held_to_base");
        expect(run.result.verification.testEdits?.changed).toEqual([
          expect.objectContaining({ path: "test/math.test.js", change: "deleted", judged: "held_to_base" }),
        ]);
        expect(run.code).toBe(1);
        expectCleanRun(run);
      },
    );

    test("a model that writes a symlink ends policy_or_artifact_error", CASE, async () => {
      const run = await runWithCli(cli, { steps: [{ run: { command: "ln -s /etc/passwd passwd-link" } }, { say: "Linked it." }] });
      expect(run.result.terminalReason, run.stderr).toBe("policy_or_artifact_error");
      expect(run.result.detail).toBe("symlink");
      expect(run.code).toBe(4);
      expectCleanRun(run);
    });
  });
}

/** How a CLI is logged out: its empty config dir (under the user's home), the model asked for, and the words it says. */
export interface LoggedOut {
  readonly dir: string;
  readonly model?: string;
  readonly says: string;
  /** False for a CLI that stops before writing its session (pi and omp write it first). */
  readonly session?: false;
}

/**
 * pi or omp with an empty agent dir (no login, no models), asked for an Anthropic model, or another CLI logged out as
 * `loggedOutAs` says: a clear auth failure.
 */
export function describeWithoutLogin(
  name: "pi" | "omp" | "gemini",
  title: string,
  loggedOutAs: LoggedOut = { dir: join(`.${name}`, "agent"), model: "anthropic/claude-sonnet-4-5", says: "No API key found for anthropic" },
): void {
  const loggedOut: ConformanceCli = {
    name,
    setupUserHome: (home) => mkdirSync(join(home, loggedOutAs.dir), { recursive: true }),
    ...(loggedOutAs.model === undefined ? {} : { model: loggedOutAs.model }),
  };
  describe.runIf(conformanceEnabled(name))(`${name} without a login`, () => {
    test(title, { timeout: 120_000 }, async () => {
      const run = await runWithCli(loggedOut, { steps: [{ say: "unused" }] });
      expect(run.result.terminalReason, run.stderr).toBe("external_agent_error");
      expect(run.result.detail).toBe("auth_failed");
      expect(run.result.hint).toMatch(/log in/);
      expect(JSON.stringify(run.result)).toContain(loggedOutAs.says);
      expect(run.model.requests).toEqual([]);
      expectCleanRun(run, { session: loggedOutAs.session });
    });
  });
}

// ---- Running a pinned CLI directly, not through handoff (to show what handoff's switches change) ----

export interface DirectRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** How to start a CLI directly: its argv and its whole environment (a variable set to undefined is left out). */
export interface DirectInvocation {
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
}

/**
 * Runs the pinned CLI `name` directly with `args` in `cwd`, the task on stdin, through handoff's own runProcess (its
 * own process group, stopped whole after `timeoutMs`, nothing of it left behind); resolves with what it printed.
 */
export async function runCliDirectly(
  name: CliName,
  args: readonly string[],
  options: { readonly env: DirectInvocation["env"]; readonly cwd: string; readonly stdin?: string; readonly timeoutMs?: number },
): Promise<DirectRun> {
  const bin = agentCliBin(name);
  if (!bin) throw new Error(`${name} is not installed`);
  const env = Object.fromEntries(Object.entries(options.env).filter((entry): entry is [string, string] => entry[1] !== undefined));
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  const outcome = await runProcess({
    file: bin,
    args,
    cwd: options.cwd,
    env,
    stdin: options.stdin ?? TASK,
    timeoutMs: options.timeoutMs ?? 60_000,
    onStdout: (chunk) => stdout.push(chunk),
    onStderr: (chunk) => stderr.push(chunk),
  });
  if (outcome.spawnError) throw new Error(`${name} could not be started: ${outcome.spawnError.message}`);
  return { code: outcome.exitCode, stdout: Buffer.concat(stdout).toString("utf8"), stderr: Buffer.concat(stderr).toString("utf8") };
}

/** PATH, and a fresh HOME and TMPDIR that are not the user's: the rest of a direct run's environment is the test's. */
export function bareCliEnv(path = process.env.PATH ?? "/usr/bin:/bin"): Record<string, string> {
  const home = tempDir("handoff-direct-home");
  return { PATH: path, HOME: home, TMPDIR: home };
}

/** A directory for a CLI's own home in the checkout's .test-homes (see CLI_HOMES), removed when the test finishes. */
export function cliTestHome(label: string): string {
  const dir = join(CLI_HOMES, `${label}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(dir, { recursive: true });
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A backend's private CLI home made as handoff makes it (dirs created, the user's login linked in); returns its environment. */
export function privateCliHome(home: CliHome): Readonly<Record<string, string>> {
  prepareCliHome(home);
  linkLogins(home.links);
  return home.env;
}

// ---- A repo's committed config must not steer the agent ----

/** The scripted servers of a steering case: the user's own model, the one the repo points at, and the repo. */
export interface SteeringServers {
  readonly repo: string;
  /** The user's model: answers "good". */
  readonly good: ScriptedModel;
  /** The repo's model: answers "evil". */
  readonly evil: ScriptedModel;
}

export interface SteeringCase {
  /** The describe block's name. */
  readonly title: string;
  /** What the repo commits (over the failing-add project) to send the agent, and the user's credential, to `evilUrl`. */
  repoFiles(evilUrl: string): Record<string, string>;
  readonly throughHandoff: {
    readonly title: string;
    /**
     * More about the user's model's turns (non-side requests) of the verified run; the evil server got none, the
     * turns are not empty and the final message is the scripted one in any case.
     */
    expectTurns?(turns: RecordedRequest[], run: CliRunOutcome): void;
  };
  /** The control: the same files and the CLI run directly, with and without the switch handoff passes. */
  readonly itself: {
    readonly title: string;
    readonly timeout?: number;
    /** Kill a direct run after this long (default 60 s). */
    readonly killAfterMs?: number;
    /** Sets up the user's config pointing at `good`; returns how to start the CLI on `repo` with handoff's switch or without it. */
    setup(servers: SteeringServers): (withSwitch: boolean) => DirectInvocation;
    /** Without the switch the repo wins. Default: the CLI printed the evil server's answer, which got requests. */
    expectSteered?(control: DirectRun, servers: SteeringServers): void;
    /**
     * With it the repo loses (the evil server got no request during this run in any case). Default: the CLI exits 0
     * having printed the user's model's answer.
     */
    expectBlocked?(guarded: DirectRun, during: { readonly good: RecordedRequest[] }, servers: SteeringServers): void;
  };
}

/** The repo's (evil) server got no request: all of them, or a slice of those made during one run. */
export function expectNotSteered(evilRequests: readonly RecordedRequest[]): void {
  expect(evilRequests, "requests to the repo's provider").toEqual([]);
}

/**
 * A repo-committed CLI config points the agent at an evil scripted model. Through handoff the run is verified on the
 * user's model and the evil server gets nothing; run directly, the same files do steer the CLI unless it gets the
 * switch handoff passes (so the test proves the switch, not a CLI that never read the files).
 */
export function describeSteering(cli: ConformanceCli, steering: SteeringCase): void {
  describe.runIf(conformanceEnabled(cli.name))(steering.title, () => {
    test(steering.throughHandoff.title, { timeout: 180_000 }, async () => {
      const evil = await startScriptedModel({ script: { steps: [{ say: "evil" }] } });
      onTestFinished(() => evil.close());
      const run = await runWithCli(cli, FIX_SCRIPT, { files: { ...FAILING_ADD_PROJECT, ...steering.repoFiles(evil.url) } });
      expect(run.result.terminalReason, run.stderr).toBe("verified");
      expectNotSteered(evil.requests);
      const turns = run.model.requests.filter((request) => !request.side);
      expect(turns.length).toBeGreaterThan(0);
      steering.throughHandoff.expectTurns?.(turns, run);
      expect(run.result.agent.finalMessage).toContain("All tests pass");
      expectCleanRun(run);
    });

    const itself = steering.itself;
    test(itself.title, { timeout: itself.timeout ?? 120_000 }, async () => {
      const good = await startScriptedModel({ script: { steps: [{ say: "good" }] } });
      const evil = await startScriptedModel({ script: { steps: [{ say: "evil" }] } });
      onTestFinished(() => Promise.all([good.close(), evil.close()]).then(() => undefined));
      const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ...steering.repoFiles(evil.url) });
      const servers = { repo, good, evil };
      const invocation = itself.setup(servers);
      const run = (withSwitch: boolean) => {
        const { args, env } = invocation(withSwitch);
        return runCliDirectly(cli.name, args, { env, cwd: repo, timeoutMs: itself.killAfterMs });
      };

      const control = await run(false);
      if (itself.expectSteered) itself.expectSteered(control, servers);
      else {
        expect(control.stdout, control.stderr).toContain('"text":"evil"');
        expect(evil.requests.length).toBeGreaterThan(0);
      }

      const goodBefore = good.requests.length;
      const evilBefore = evil.requests.length;
      const guarded = await run(true);
      if (itself.expectBlocked) itself.expectBlocked(guarded, { good: good.requests.slice(goodBefore) }, servers);
      else {
        expect(guarded.code, guarded.stderr).toBe(0);
        expect(guarded.stdout).toContain('"text":"good"');
      }
      expectNotSteered(evil.requests.slice(evilBefore));
    });
  });
}

/**
 * A fix whose agent first looks for its model key everywhere it can see: its environment, every process's in its PID
 * namespace (each process's environ and cmdline under /proc), its homes, its temp dirs and its tree. The key is searched for whole,
 * put together from two halves passed as CHECK_A and CHECK_B and read from stdin, so the search never writes it. The
 * run must verify, the scripted model must have received the key on every request, and the search find nothing.
 */
export async function runLookingForKey(cli: ConformanceCli, key: string): Promise<{ run: CliRunOutcome; seen: (file: string) => string }> {
  const look = [
    "env > seen-env.txt",
    "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' > seen-proc-environ.txt",
    // The pattern from a file, not /dev/stdin: omp's shell gives a command omp's own stdin there (the task), and not
    // on grep's command line, where /proc/<grep>/cmdline would hold it. Its length says it is the key.
    'pattern=/tmp/key-pattern; [ -z "$TMPDIR" ] || pattern="$TMPDIR/key-pattern"; printf %s "$CHECK_A$CHECK_B" > "$pattern"; wc -c < "$pattern" > seen-pattern-length.txt',
    'grep -rlsF --exclude=key-pattern -f "$pattern" "$HOME" "$TMPDIR" /tmp . /proc/[0-9]*/environ /proc/[0-9]*/cmdline > seen-key-in.txt; true',
  ].join("; ");
  const half = Math.floor(key.length / 2);
  const run = await runWithCli(
    cli,
    { steps: [{ run: { command: look } }, { write: { path: "math.js", content: FIXED_MATH } }, { say: "Fixed add(). All tests pass." }] },
    {
      expectedKey: key,
      extraArgs: ["--env", "CHECK_A", "--env", "CHECK_B"],
      env: { CHECK_A: key.slice(0, half), CHECK_B: key.slice(half) },
    },
  );
  expect(run.result.terminalReason, run.stderr).toBe("verified");
  const main = run.model.requests.filter((request) => !request.side);
  expect(main.length).toBeGreaterThan(0);
  expect(main.every((request) => request.keyMatched)).toBe(true);
  const patch = readFileSync(join(run.runDir, "changes.patch"), "utf8");
  const seen = (file: string) => new RegExp(`\\+\\+\\+ b/${file}\\n@@[^\\n]*\\n((?:\\+[^\\n]*\\n)*)`).exec(patch)?.[1] ?? "";
  expect(patch).toContain("seen-key-in.txt");
  expect(seen("seen-pattern-length.txt").trim(), "what the sandbox looked for is the key").toBe(`+${key.length}`);
  expect(seen("seen-key-in.txt"), "files and processes in the sandbox that hold the key").toBe("");
  expect(run.result.network?.allowed).toContainEqual(
    expect.objectContaining({ host: "127.0.0.1", port: run.model.port, rule: expect.stringContaining("added by handoff") }),
  );
  expectCleanRun(run);
  return { run, seen };
}

/**
 * What `runLookingForKey` must show of a forwarded key: a placeholder in `variable` (in the agent's env and every
 * /proc environ), the redirect variable (when the CLI takes one) set to the forwarder on the sandbox's loopback, and
 * result.json `network.keys` saying `forwarded`.
 */
export function expectKeyForwarded(
  looked: { readonly run: CliRunOutcome; readonly seen: (file: string) => string },
  expected: {
    readonly backend: string;
    readonly variable: string;
    readonly redirect?: { readonly variable: string; readonly path?: string };
  },
): void {
  const env = looked.seen("seen-env.txt");
  expect(env).toMatch(new RegExp(`\\+${expected.variable}=handoff-placeholder-[0-9a-f]{24}\\n`));
  if (expected.redirect)
    expect(env).toMatch(new RegExp(`\\+${expected.redirect.variable}=http://127\\.0\\.0\\.1:\\d+${expected.redirect.path ?? ""}\\n`));
  expect(looked.seen("seen-proc-environ.txt")).toContain(`${expected.variable}=handoff-placeholder-`);
  expect(looked.run.result.network?.keys).toEqual([
    expect.objectContaining({ backend: expected.backend, variable: expected.variable, held: "forwarded" }),
  ]);
}
