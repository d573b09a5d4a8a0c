import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";

/**
 * Where tests keep what a reviewer of the tests looks at afterwards (the HTML report's screenshots):
 * $HANDOFF_TEST_ARTIFACTS, else `.test-artifacts/` in this clone (ignored by git). Kept after the tests, unlike temp dirs.
 */
export function artifactPath(folder: string, name: string): string {
  const dir = join(process.env.HANDOFF_TEST_ARTIFACTS ?? resolve(import.meta.dirname, "../../.test-artifacts"), folder);
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}
