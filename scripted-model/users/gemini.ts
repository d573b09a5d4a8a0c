import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CliUser } from "./cli-user.js";

/** The model the user's settings name (an explicit model: no routing side request to a flash model first). */
export const GEMINI_MODEL = "gemini-2.5-pro";
export const GEMINI_TEST_KEY = "AIza-handoff-conformance-gemini";

/**
 * The user's own `~/.gemini/settings.json` as `gemini` writes it after "Use Gemini API key" is chosen, plus a model and
 * retries off: Gemini retries a 429 or 5xx up to 10 times with a 5 s backoff by default (`general.maxAttempts`).
 */
export function geminiUserSettings(): Record<string, unknown> {
  return { security: { auth: { selectedType: "gemini-api-key" } }, model: { name: GEMINI_MODEL }, general: { maxAttempts: 1 } };
}

/** The key and the gateway come the way a user of an API key passes them: `--env GEMINI_API_KEY --env GOOGLE_GEMINI_BASE_URL`. */
export const geminiCli: CliUser = {
  name: "gemini",
  setupUserHome(home) {
    const dir = join(home, ".gemini");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "settings.json"), `${JSON.stringify(geminiUserSettings(), null, 2)}\n`);
  },
  passEnv: (modelUrl) => ({ GEMINI_API_KEY: GEMINI_TEST_KEY, GOOGLE_GEMINI_BASE_URL: modelUrl }),
};
