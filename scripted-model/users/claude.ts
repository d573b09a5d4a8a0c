import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CliUser } from "./cli-user.js";

/**
 * The user's own `~/.claude/settings.json`: retries off (Claude's default is 10 retries with backoff, so a 401 or a
 * connection refused takes minutes), as a user can set it in the `env` of their settings. The key and the gateway
 * URL come the way a user of an API key or a gateway passes them: `--env ANTHROPIC_API_KEY --env ANTHROPIC_BASE_URL`.
 */
export function claudeUserSettings(): string {
  return `${JSON.stringify({ env: { CLAUDE_CODE_MAX_RETRIES: "0" } }, null, 2)}\n`;
}

export const CLAUDE_TEST_KEY = "sk-ant-handoff-conformance";

export const claudeCli: CliUser = {
  name: "claude",
  setupUserHome(home) {
    const dir = join(home, ".claude");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "settings.json"), claudeUserSettings());
  },
  passEnv: (modelUrl) => ({ ANTHROPIC_API_KEY: CLAUDE_TEST_KEY, ANTHROPIC_BASE_URL: modelUrl }),
};
