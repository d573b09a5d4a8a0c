import { cpSync, existsSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { CLI_BACKEND_ROWS, CLI_BACKENDS } from "../backends/index.js";
import type { ModelScript, RecordedRequest } from "../scripted-model/index.js";
import { startScriptedModel } from "../scripted-model/index.js";
import type { ExternalAgentResult, ResumeOutcome } from "../src/agent/backend.js";
import { unlinkLogins } from "../src/agent/login-links.js";
import { type BackendRunOverrides, resumeBackend, runBackend } from "./helpers/backend-fixtures.js";
import {
  type ConformanceCli,
  FEEDBACK_PHRASE,
  FIXED_MATH,
  REPAIR_SCRIPT,
  WRONG_MATH,
  agentCliBin,
  cliTestHome,
  conformanceEnabled,
  fakeUserHome,
} from "./helpers/conformance.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { CONFORMANCE_CLIS } from "./conformance/clis.js";

/**
 * Each pinned CLI continues its own session through the backend's `resume`, against the scripted model: as a repair
 * attempt (the same clone, the same private home, right after the first turn) and as `handoff resume` (the home
 * renamed, its login links removed and made again, the clone at a new path and the old one gone).
 */

const EXTENDED_MATH = 'export function add(a, b) {\n  if (a === "" || b === "") return 0;\n  return a + b;\n}\n';
const FEEDBACK = `Attempt 1 ${FEEDBACK_PHRASE}: npm test failed with FAIL: add(2, 2) = 5. Fix the code, not the test.`;
const INSTRUCTION = "Also handle the empty string.";

const FIRST_TURN: ModelScript["steps"] = [{ write: { path: "math.js", content: WRONG_MATH } }, { say: "Done." }];

/** A first turn, then what the user asks for in `handoff resume`. */
const LATER_SCRIPT: ModelScript = {
  steps: FIRST_TURN,
  next: [{ when: INSTRUCTION, steps: [{ write: { path: "math.js", content: EXTENDED_MATH } }, { say: "Handled the empty string." }] }],
};

/** CLIs whose session in a new clone is a fork with its own id (`--fork`), reported by the stream's header line. */
const FORKS = new Set(["pi", "omp"]);

/** CLIs that cannot continue a session from a clone at another path: they say so and start nothing (docs/backends/<cli>.md). */
const NO_NEW_CLONE = new Set(["gemini"]);

/** The model's requests that played a step (not side requests such as titles). */
function turns(requests: readonly RecordedRequest[]): RecordedRequest[] {
  return requests.filter((request) => !request.side && request.turn !== null);
}

function resumed(outcome: ResumeOutcome): ExternalAgentResult {
  if (outcome.kind !== "resumed") throw new Error(`cannot resume: ${outcome.reason}`);
  return outcome.result;
}

function expectFinished(result: ExternalAgentResult): void {
  expect(result.outcome, result.stderrTail).toEqual({ kind: "finished" });
}

for (const cli of CONFORMANCE_CLIS) {
  describe.runIf(conformanceEnabled(cli.name))(`${cli.name} resumes its session (real CLI, scripted model)`, () => {
    const CASE = { timeout: 300_000 };

    /** The scripted model, and the overrides of one turn: the CLI's private home, the clone, the agent's HOME. */
    async function setup(script: ModelScript) {
      const model = await startScriptedModel({ script });
      onTestFinished(() => model.close());
      const userHome = fakeUserHome(cli as ConformanceCli, model.url);
      const options = (homeDir: string, cwd: string, agentHome: string): BackendRunOverrides => ({
        cwd,
        homeDir,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: agentHome, ...cli.passEnv?.(model.url) },
        model: cli.model ?? null,
        executable: agentCliBin(cli.name),
        // What the user passes with --env is in their own environment too, as for `handoff run`.
        userEnv: { HOME: userHome, ...cli.passEnv?.(model.url) },
        timeoutMs: 180_000,
        idleTimeoutMs: 120_000,
      });
      return { options, model };
    }

    test("a repair attempt: handoff's feedback in the same clone and home gets the right fix, in the same session", CASE, async () => {
      const { options, model } = await setup(REPAIR_SCRIPT);
      const home = cliTestHome(`resume-${cli.name}`);
      const clone = await makeRepo(FAILING_ADD_PROJECT);
      const agentHome = tempDir(`resume-${cli.name}-agent-home`);

      const first = await runBackend(cli.name, options(home, clone, agentHome));
      expectFinished(first.result);
      expect(readFileSync(join(clone, "math.js"), "utf8")).toBe(WRONG_MATH);
      const sessionId = first.result.sessionId;
      expect(sessionId).toMatch(/\S/);
      const before = model.requests.length;

      const second = resumed(
        (await resumeBackend(cli.name, { sessionId, cwd: clone, attempt: 2 }, FEEDBACK, options(home, clone, agentHome))).outcome,
      );
      expectFinished(second);
      expect(readFileSync(join(clone, "math.js"), "utf8").trimEnd()).toBe(FIXED_MATH.trimEnd());
      expect(second.sessionId).toBe(sessionId);
      expect(second.finalMessage).toContain("Fixed add()");
      const resumedTurns = turns(model.requests.slice(before));
      expect(resumedTurns.length).toBeGreaterThan(0);
      // The resumed requests carried the first turn (its write's result) and handoff's feedback (turn 1).
      expect(resumedTurns.every((request) => request.turn === 1 && (request.toolResults ?? 0) >= 1)).toBe(true);
    });

    test("handoff resume: the home renamed and the clone at a new path, the user's instruction lands in the new clone", CASE, async () => {
      const { options, model } = await setup(LATER_SCRIPT);
      const parent = cliTestHome(`resume-later-${cli.name}`);
      const home = join(parent, "run-1-home");
      const clone = join(tempDir(`resume-${cli.name}-old`), "ws");
      await makeRepo(FAILING_ADD_PROJECT, { dir: clone });

      const first = await runBackend(cli.name, options(home, clone, tempDir(`resume-${cli.name}-agent-home`)));
      expectFinished(first.result);
      const sessionId = first.result.sessionId;
      expect(sessionId).toMatch(/\S/);

      // What --keep-session and `handoff resume` do between the runs: the login unlinked, the home moved, a new clone.
      const row = CLI_BACKEND_ROWS.find((candidate) => candidate.name === cli.name);
      if (!row) throw new Error(`no registry row for ${cli.name}`);
      unlinkLogins(row.definition.home(home, options(home, clone, "/").userEnv ?? {}).links);
      const keptHome = join(parent, "kept-home");
      renameSync(home, keptHome);
      // `_` and `.` in the new path: Claude's folder for a cwd turns every character but a letter or digit into `-`.
      const newClone = join(tempDir(`resume-${cli.name}-new`), "ws_2.resumed");
      cpSync(clone, newClone, { recursive: true });
      rmSync(clone, { recursive: true, force: true });
      const before = model.requests.length;

      const { outcome } = await resumeBackend(
        cli.name,
        { sessionId, cwd: clone, attempt: 1 },
        INSTRUCTION,
        options(keptHome, newClone, tempDir("agent-home")),
      );
      if (NO_NEW_CLONE.has(cli.name)) {
        expect(outcome).toEqual({ kind: "cannot_resume", reason: expect.stringMatching(/\S/) });
        expect(model.requests.length, "requests after the refusal").toBe(before);
        return;
      }
      const later = resumed(outcome);
      expectFinished(later);
      expect(readFileSync(join(newClone, "math.js"), "utf8").trimEnd()).toBe(EXTENDED_MATH.trimEnd());
      expect(existsSync(clone), "the old clone was written to").toBe(false);
      // pi and omp fork the session into the new clone (a new id); the others keep theirs.
      if (FORKS.has(cli.name)) expect(later.sessionId).not.toBe(sessionId);
      else expect(later.sessionId).toBe(sessionId);
      expect(later.sessionId).toMatch(/\S/);
      const laterTurns = turns(model.requests.slice(before));
      expect(laterTurns.length).toBeGreaterThan(0);
      expect(laterTurns.every((request) => request.turn === 1 && (request.toolResults ?? 0) >= 1)).toBe(true);
    });
  });
}

describe("a CLI backend cannot resume without a session id", () => {
  for (const row of CLI_BACKEND_ROWS) {
    test(`${row.name}: says it reported no session id, and starts nothing`, async () => {
      const backend = CLI_BACKENDS[row.name].backend;
      const { outcome } = await resumeBackend(backend, { sessionId: null, cwd: "/nowhere", attempt: 2 }, FEEDBACK, {
        executable: "/nonexistent/cli",
      });
      expect(outcome).toEqual({ kind: "cannot_resume", reason: `${row.name} reported no session id in the earlier turn` });
    });
  }
});
