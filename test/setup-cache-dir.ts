import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

// Each test file gets its own cache of base environments: a run in one file never reuses another file's.
const cacheDir = mkdtempSync(join(tmpdir(), "handoff-test-cache-"));
process.env.HANDOFF_CACHE_DIR = cacheDir;
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

// No agent CLI from handoff's own install dir (test/agent-clis, src/agent/executable.ts) unless a test names one: a test
// that puts no CLI on PATH means none, whatever `npm run agent-clis` installed in this clone.
process.env.HANDOFF_AGENT_CLIS_DIR ??= "";
