import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, onTestFinished, test } from "vitest";
import type { ModelScript } from "../scripted-model/index.js";
import { startScriptedModel } from "../scripted-model/index.js";
import { runBackend } from "./helpers/backend-fixtures.js";
import { type ConformanceCli, FIX_SCRIPT, agentCliBin, cliTestHome, fakeUserHome } from "./helpers/conformance.js";
import { TRANSCRIPTS } from "./helpers/golden.js";
import { CONFORMANCE_CLIS } from "./conformance/clis.js";

/**
 * Records real stdout of each pinned CLI into fixtures/transcripts/<cli>/<case>.jsonl, through the backend's own
 * argv and private home. Runs only on request: CAPTURE_TRANSCRIPTS=codex,claude (or "all") npx vitest run test/capture-transcripts.test.ts
 */
const wanted = (process.env.CAPTURE_TRANSCRIPTS ?? "").split(",").filter(Boolean);
const CASES: Record<string, ModelScript> = {
  "fix-verified": FIX_SCRIPT,
  "no-changes": { steps: [{ say: "Nothing needs changing." }] },
  "shell-command": { steps: [{ run: { command: "echo hi > shell.txt && ls" } }, { say: "Ran it." }] },
  "auth-401": { steps: [{ fail: { status: 401 } }] },
  "rate-limit-429": { steps: [{ fail: { status: 429 } }] },
  "server-error-500": { steps: [{ fail: { status: 500 } }] },
  "stream-cut": { steps: [{ cut: true }] },
};

async function capture(cli: ConformanceCli, name: string, script: ModelScript): Promise<void> {
  const model = await startScriptedModel({ script });
  onTestFinished(() => model.close());
  const userHome = fakeUserHome(cli, model.url);
  const chunks: Buffer[] = [];
  await runBackend(cli.name, {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...cli.passEnv?.(model.url) },
    model: cli.model ?? null,
    executable: agentCliBin(cli.name),
    homeDir: cliTestHome(`capture-${cli.name}-${name}`),
    userEnv: { HOME: userHome },
    timeoutMs: 180_000,
    idleTimeoutMs: 120_000,
    onStdout: (chunk) => chunks.push(chunk),
  });
  const dir = join(TRANSCRIPTS, cli.name);
  mkdirSync(dir, { recursive: true });
  // Paths of the temp dirs vary per run; the transcript keeps them as recorded.
  writeFileSync(join(dir, `${name}.jsonl`), Buffer.concat(chunks));
}

describe.runIf(wanted.length > 0)("capture transcripts", () => {
  for (const cli of CONFORMANCE_CLIS) {
    if (!wanted.includes("all") && !wanted.includes(cli.name)) continue;
    for (const [name, script] of Object.entries(CASES)) {
      test.runIf(agentCliBin(cli.name) !== null)(`${cli.name}: ${name}`, () => capture(cli, name, script), 240_000);
    }
  }
});
