import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./repo.js";

/**
 * Whether `pid` is a running process. A zombie is not: it has exited and only waits to be reaped, and this
 * machine's init reaps orphans lazily (up to ~2 s), so `kill(pid, 0)` alone would call a killed process alive.
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false; // gone between the two looks
  }
}

/** Polls until `path` exists (written atomically by the fixture), then returns its content. */
export async function waitForFile(path: string, timeoutMs = 30_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`${path} did not appear within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return readFileSync(path, "utf8");
}

/**
 * A directory fixture agents write their observations to (pid files, their environment), named to them by
 * `$HANDOFF_TEST_OUT`; pass "HANDOFF_TEST_OUT" in the run's `env` list so the agent sees it.
 */
export function agentOutputDir(): { readonly dir: string; readonly sleeperPid: () => Promise<number> } {
  const dir = tempDir("handoff-agent-out");
  process.env.HANDOFF_TEST_OUT = dir;
  return { dir, sleeperPid: async () => Number((await waitForFile(join(dir, "sleeper.pid"))).trim()) };
}

/** The env list `delegate` passes by default, plus the agent output directory. */
export const TEST_ENV_NAMES = ["HANDOFF_TEST_MARKERS", "HANDOFF_TEST_SOURCE", "HANDOFF_TEST_OUT"] as const;
