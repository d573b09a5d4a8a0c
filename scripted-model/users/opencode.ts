import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CliUser } from "./cli-user.js";

/** The provider id and model the user's config defines; handoff is told `-m mock/mock-model`. */
export const OPENCODE_MODEL = "mock/mock-model";
export const OPENCODE_KEY = "sk-handoff-conformance";

/**
 * The user's own `~/.config/opencode/opencode.json`: a custom OpenAI-compatible provider, as `opencode.ai/docs/providers`
 * describes it. OpenCode's own retries (5, with backoff, honouring retry-after) cannot be configured; the provider
 * timeouts are short but longer than the idle-timeout case's 5 s, so handoff's watchdog is what ends a hang.
 */
export function opencodeUserConfig(baseUrl: string): Record<string, unknown> {
  return {
    $schema: "https://opencode.ai/config.json",
    small_model: OPENCODE_MODEL,
    snapshot: false,
    autoupdate: false,
    share: "disabled",
    provider: {
      mock: {
        npm: "@ai-sdk/openai-compatible",
        name: "Scripted model",
        options: { baseURL: `${baseUrl}/v1`, timeout: 20_000, chunkTimeout: 20_000 },
        models: { "mock-model": { name: "Mock Model", tool_call: true, limit: { context: 128_000, output: 8192 } } },
      },
    },
  };
}

export const opencodeCli: CliUser = {
  name: "opencode",
  setupUserHome(home, modelUrl) {
    const config = join(home, ".config", "opencode");
    const data = join(home, ".local", "share", "opencode");
    mkdirSync(config, { recursive: true });
    mkdirSync(data, { recursive: true });
    writeFileSync(join(config, "opencode.json"), `${JSON.stringify(opencodeUserConfig(modelUrl), null, 2)}\n`);
    // What `opencode auth login` (provider "mock", API key) writes: the credential lives here, not in the config.
    writeFileSync(join(data, "auth.json"), `${JSON.stringify({ mock: { type: "api", key: OPENCODE_KEY } })}\n`, { mode: 0o600 });
  },
  model: OPENCODE_MODEL,
};

export const OPENCODE_ANTHROPIC_KEY = "sk-ant-handoff-opencode-conformance";

/**
 * OpenCode on its built-in `anthropic` provider, a model its bundled models.dev snapshot knows: no provider in the
 * user's config, the key and the base URL passed the way a user of an API key or a gateway passes them. The
 * `@ai-sdk/anthropic` base URL includes `/v1` (it posts to `<base>/messages`), where the scripted model serves Messages.
 * The user allows OpenCode's `external_directory` permission, so the agent's own search reaches outside the clone
 * (the sandbox, not OpenCode's asks, is what bounds it).
 */
export const opencodeAnthropicCli: CliUser = {
  name: "opencode",
  setupUserHome(home) {
    const config = join(home, ".config", "opencode");
    mkdirSync(config, { recursive: true });
    const settings = {
      $schema: "https://opencode.ai/config.json",
      snapshot: false,
      autoupdate: false,
      share: "disabled",
      // The key test's agent looks in /proc, $HOME and /tmp: OpenCode would ask (and, headless, refuse) for each.
      permission: { external_directory: "allow" },
    };
    writeFileSync(join(config, "opencode.json"), `${JSON.stringify(settings, null, 2)}\n`);
  },
  passEnv: (modelUrl) => ({ ANTHROPIC_API_KEY: OPENCODE_ANTHROPIC_KEY, ANTHROPIC_BASE_URL: `${modelUrl}/v1` }),
  model: "anthropic/claude-sonnet-4-5",
};
