import { existsSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { expect } from "vitest";
import { ExternalCodingRunner } from "../../src/run/runner.js";
import type { RunOptions } from "../../src/run/options.js";
import type { RunResult } from "../../src/verdict/result.js";
import { ARTIFACTS } from "../../src/run-dir/run-dir.js";
import { diffFingerprints, fingerprintTree, tempDir } from "./repo.js";

export const FIXTURE_AGENTS = resolve(import.meta.dirname, "../../fixtures/agents");

/** Path of a fixture agent script in fixtures/agents/. */
export function agent(name: string): string {
  return join(FIXTURE_AGENTS, name);
}

export interface Harness {
  readonly runsDir: string;
  readonly workspacesDir: string;
  readonly cliHomesDir: string;
  /** Payloads planted by hostile agents touch files here; it must stay empty. */
  readonly markerDir: string;
}

export function makeHarness(): Harness {
  const root = tempDir("handoff-harness");
  const harness = {
    runsDir: join(root, "runs"),
    workspacesDir: join(root, "ws"),
    cliHomesDir: join(root, "homes"),
    markerDir: join(root, "markers"),
  };
  mkdirSync(harness.markerDir);
  return harness;
}

export interface DelegateOutcome {
  readonly result: RunResult;
  readonly runDir: string;
  readonly patch: string;
  readonly sourceChanged: string[];
  /** Names of payload markers that appeared (must be empty: nothing ran inside handoff's git calls). */
  readonly payloadsRan: string[];
}

/**
 * Runs the full pipeline through the library with the `command` backend, approval given, and checks what
 * every run must satisfy: the artifacts exist, and the source is byte-identical (returned, so tests about a
 * changing source can assert the opposite).
 */
export async function delegate(
  repo: string,
  agentCmd: string,
  options: Partial<RunOptions> & { harness?: Harness } = {},
): Promise<DelegateOutcome> {
  const harness = options.harness ?? makeHarness();
  // Hostile fixture agents read these (passed through with --env) to aim at the source or report a payload.
  process.env.HANDOFF_TEST_MARKERS = harness.markerDir;
  process.env.HANDOFF_TEST_SOURCE = repo;
  const before = fingerprintTree(repo);
  const runner = new ExternalCodingRunner();
  const result = await runner.run({
    repo,
    task: "fix the failing test",
    backend: "command",
    agentCmd,
    yes: true,
    runsDir: harness.runsDir,
    workspacesDir: harness.workspacesDir,
    cliHomesDir: harness.cliHomesDir,
    env: ["HANDOFF_TEST_MARKERS", "HANDOFF_TEST_SOURCE"],
    ...options,
  });
  for (const artifact of ARTIFACTS) expect(existsSync(join(result.runDir, artifact)), artifact).toBe(true);
  return {
    result,
    runDir: result.runDir,
    patch: readFileSync(join(result.runDir, "changes.patch"), "utf8"),
    sourceChanged: diffFingerprints(before, fingerprintTree(repo)),
    payloadsRan: readdirSync(harness.markerDir),
  };
}

/**
 * The gates' own defences, tested against an agent with the run of the machine, as with `--sandbox none`: the
 * hostile fixture can reach its git metadata, the source and the host, and handoff must still catch it.
 */
export function delegateWithoutSandbox(
  repo: string,
  agentCmd: string,
  options: Partial<RunOptions> & { harness?: Harness } = {},
): Promise<DelegateOutcome> {
  return delegate(repo, agentCmd, { sandbox: "none", ...options });
}

/** A JSON file of a run directory (result.json, checkpoint.json…), parsed. */
export function readJson(path: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
}

/** Every line of a run directory's events.jsonl, parsed. */
export function readEvents(runDir: string): Array<Record<string, unknown>> {
  return readFileSync(join(runDir, "events.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
