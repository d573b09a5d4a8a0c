import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "vitest";
import { resolveBackend } from "../backends/index.js";
import type { ModelScript } from "../scripted-model/index.js";
import { startScriptedModel } from "../scripted-model/index.js";
import type { AgentEvent } from "../src/events.js";
import { type CliName, type ConformanceCli, FIXED_MATH, agentCliBin } from "./helpers/conformance.js";
import { TRANSCRIPTS } from "./helpers/golden.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { CONFORMANCE_CLIS } from "./conformance/clis.js";

/**
 * Records real stdout of each pinned CLI into fixtures/transcripts/<cli>/<case>.jsonl, through the backend's own
 * argv and private home. Runs only on request: CAPTURE_TRANSCRIPTS=codex,claude (or "all") npx vitest run test/capture-transcripts.test.ts
 */
const wanted = (process.env.CAPTURE_TRANSCRIPTS ?? "").split(",").filter(Boolean);
const CASES: Record<string, ModelScript> = {
  "fix-verified": { steps: [{ write: { path: "math.js", content: FIXED_MATH } }, { say: "Fixed add(). All tests pass." }] },
  "no-changes": { steps: [{ say: "Nothing needs changing." }] },
  "shell-command": { steps: [{ run: { command: "echo hi > shell.txt && ls" } }, { say: "Ran it." }] },
  "auth-401": { steps: [{ fail: { status: 401 } }] },
  "rate-limit-429": { steps: [{ fail: { status: 429 } }] },
  "server-error-500": { steps: [{ fail: { status: 500 } }] },
  "stream-cut": { steps: [{ cut: true }] },
};

async function capture(cli: ConformanceCli, name: string, script: ModelScript): Promise<void> {
  const model = await startScriptedModel({ script });
  const userHome = tempDir(`capture-user-${cli.name}`);
  cli.setupUserHome(userHome, model.url);
  const repo = await makeRepo(FAILING_ADD_PROJECT);
  const homeDir = resolve(import.meta.dirname, `../.test-homes/capture-${cli.name}-${name}-${Date.now()}`);
  mkdirSync(homeDir, { recursive: true });
  const chunks: Buffer[] = [];
  const events: AgentEvent[] = [];
  const passed = Object.fromEntries((cli.args ?? []).flatMap((arg, i, all) => (all[i - 1] === "--env" ? [[arg, cli.env?.[arg] ?? ""]] : [])));
  const modelArg = (cli.args ?? []).findIndex((arg) => arg === "--model" || arg === "-m");
  try {
    const backend = resolveBackend({ name: cli.name });
    await backend.run("make add() return the sum", {
      cwd: repo,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(userHome, "agent-home"), TMPDIR: tempDir("capture-tmp"), ...passed },
      signal: new AbortController().signal,
      deadline: Date.now() + 180_000,
      idleTimeoutMs: 120_000,
      model: modelArg >= 0 ? cli.args![modelArg + 1]! : null,
      executable: agentCliBin(cli.name),
      homeDir,
      userEnv: { HOME: userHome },
      onStdout: (chunk) => chunks.push(chunk),
      emit: (event) => events.push(event),
    });
  } finally {
    await model.close();
    rmSync(homeDir, { recursive: true, force: true });
  }
  const dir = join(TRANSCRIPTS, cli.name);
  mkdirSync(dir, { recursive: true });
  // Paths of the temp dirs vary per run; the transcript keeps them as recorded.
  writeFileSync(join(dir, `${name}.jsonl`), Buffer.concat(chunks));
}

describe.runIf(wanted.length > 0)("capture transcripts", () => {
  for (const cli of CONFORMANCE_CLIS) {
    if (!wanted.includes("all") && !wanted.includes(cli.name)) continue;
    for (const [name, script] of Object.entries(CASES)) {
      test.runIf(agentCliBin(cli.name as CliName) !== null)(`${cli.name}: ${name}`, () => capture(cli, name, script), 240_000);
    }
  }
});
