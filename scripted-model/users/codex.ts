import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CliUser } from "./cli-user.js";

/** The variable the user's provider config names as its key; handoff passes it through with --env. */
export const CODEX_KEY_VAR = "HANDOFF_TEST_CODEX_KEY";
export const CODEX_TEST_KEY = "sk-handoff-conformance";

/**
 * The user's own `~/.codex/config.toml` as a user of a custom Responses-API provider writes it. `gpt-5.5` is a model
 * of Codex's bundled catalog, so Codex offers its apply_patch tool (an unknown name gets no apply_patch). Retries
 * off, so a 429 or a 500 fails at once instead of after five backoffs.
 */
export function codexUserConfig(modelUrl: string): string {
  return [
    'model_provider = "scripted"',
    'model = "gpt-5.5"',
    "",
    "[model_providers.scripted]",
    'name = "scripted model"',
    `base_url = ${JSON.stringify(`${modelUrl}/v1`)}`,
    'wire_api = "responses"',
    `env_key = "${CODEX_KEY_VAR}"`,
    "request_max_retries = 0",
    "stream_max_retries = 0",
    "",
  ].join("\n");
}

export const codexCli: CliUser = {
  name: "codex",
  setupUserHome(home, modelUrl) {
    const dir = join(home, ".codex");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "config.toml"), codexUserConfig(modelUrl));
  },
  passEnv: () => ({ [CODEX_KEY_VAR]: CODEX_TEST_KEY }),
};

/** A user of Codex's built-in OpenAI provider with a key: `openai_base_url` names their gateway, CODEX_API_KEY the key. */
export const CODEX_BUILTIN_KEY = "sk-handoff-conformance-builtin";

export const codexBuiltinCli: CliUser = {
  name: "codex",
  setupUserHome(home, modelUrl) {
    const dir = join(home, ".codex");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "config.toml"), ['model = "gpt-5.5"', `openai_base_url = ${JSON.stringify(`${modelUrl}/v1`)}`, ""].join("\n"));
  },
  passEnv: () => ({ CODEX_API_KEY: CODEX_BUILTIN_KEY }),
};
