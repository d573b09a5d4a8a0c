import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CliUser } from "./cli-user.js";

/** The provider and model the user's pi config defines (and makes the default, so handoff needs no --model). */
export const PI_PROVIDER = "mock";
export const PI_MODEL_ID = "mock-model";
export const PI_KEY = "sk-handoff-conformance-pi";

/** `~/.pi/agent/models.json`: a custom OpenAI-compatible provider, as pi's docs/models.md describes it. */
export function piUserModels(baseUrl: string): Record<string, unknown> {
  return {
    providers: {
      [PI_PROVIDER]: {
        baseUrl: `${baseUrl}/v1`,
        api: "openai-completions",
        // An env var name (resolved when set) or a literal; auth.json below takes precedence over it.
        apiKey: "MOCK_API_KEY",
        models: [{ id: PI_MODEL_ID, name: "Mock Model", contextWindow: 128_000, maxTokens: 8192 }],
      },
    },
  };
}

/**
 * `~/.pi/agent/settings.json`: the default model, and retries off. pi retries a 429/5xx/broken stream 3 times at the
 * agent level (2 s, 4 s, 8 s) on top of the OpenAI SDK's own retries, so a failing provider would take ~30 s.
 */
export function piUserSettings(): Record<string, unknown> {
  return { defaultProvider: PI_PROVIDER, defaultModel: PI_MODEL_ID, retry: { enabled: false, maxRetries: 0, provider: { maxRetries: 0 } } };
}

export const piCli: CliUser = {
  name: "pi",
  setupUserHome(home, modelUrl) {
    const agent = join(home, ".pi", "agent");
    mkdirSync(agent, { recursive: true });
    writeFileSync(join(agent, "models.json"), `${JSON.stringify(piUserModels(modelUrl), null, 2)}\n`);
    writeFileSync(join(agent, "settings.json"), `${JSON.stringify(piUserSettings(), null, 2)}\n`);
    // What pi's /login stores for an API-key provider.
    writeFileSync(join(agent, "auth.json"), `${JSON.stringify({ [PI_PROVIDER]: { type: "api_key", key: PI_KEY } }, null, 2)}\n`, {
      mode: 0o600,
    });
  },
};

/** An Anthropic API key as a user passes it: `--env ANTHROPIC_API_KEY` (and here `--env ANTHROPIC_BASE_URL`, the scripted model). */
export const PI_ANTHROPIC_KEY = "sk-ant-handoff-conformance-pi";

/**
 * The same user with no custom provider and no /login: pi's built-in Anthropic provider is the default, its key from
 * `--env ANTHROPIC_API_KEY`, so handoff can keep the key out. pi ignores `ANTHROPIC_BASE_URL`; handoff reads it as
 * the forwarded key's upstream, which is how this user's requests reach the scripted model.
 */
export const piAnthropicKeyCli: CliUser = {
  name: "pi",
  setupUserHome(home) {
    const agent = join(home, ".pi", "agent");
    mkdirSync(agent, { recursive: true });
    const settings = { ...piUserSettings(), defaultProvider: "anthropic", defaultModel: "claude-sonnet-4-5" };
    writeFileSync(join(agent, "settings.json"), `${JSON.stringify(settings, null, 2)}\n`);
  },
  passEnv: (modelUrl) => ({ ANTHROPIC_API_KEY: PI_ANTHROPIC_KEY, ANTHROPIC_BASE_URL: modelUrl }),
};
