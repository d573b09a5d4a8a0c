import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

// Each test file gets its own cache of base environments: a run in one file never reuses another file's.
const cacheDir = mkdtempSync(join(tmpdir(), "handoff-test-cache-"));
process.env.HANDOFF_CACHE_DIR = cacheDir;
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));
