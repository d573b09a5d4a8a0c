import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CliUser } from "./cli-user.js";

/** The provider and model the user's omp config defines (and makes the default role, so handoff needs no --model). */
export const OMP_PROVIDER = "mock";
export const OMP_MODEL_ID = "mock-model";
export const OMP_KEY = "sk-handoff-conformance-omp";

/**
 * `~/.omp/agent/models.yml`: a custom OpenAI-compatible provider with its key inline, as omp's models docs allow.
 * Not agent.db: omp writes into it on every run (see docs/backends/omp.md), and the suite checks that the user's
 * home is left byte-identical. (With `api: anthropic-messages` the 429 case took 51 s: omp's Anthropic path sent
 * 11 requests, backing off to ~8 s, whatever config.yml says; the OpenAI path honours `retry-after: 0`.)
 */
export function ompUserModels(baseUrl: string): string {
  return [
    "providers:",
    `  ${OMP_PROVIDER}:`,
    `    baseUrl: ${baseUrl}/v1`,
    "    api: openai-completions",
    `    apiKey: ${OMP_KEY}`,
    "    models:",
    `      - id: ${OMP_MODEL_ID}`,
    "        contextWindow: 128000",
    "        maxTokens: 8192",
    "",
  ].join("\n");
}

/**
 * `~/.omp/agent/config.yml`: the default model, and omp's session-level retries off (default 10, backoff up to 8 s,
 * so a 429 took ~54 s). The transport's own retries cannot be configured (they honour `retry-after: 0`).
 */
export function ompUserConfig(): string {
  return [`modelRoles:`, `  default: ${OMP_PROVIDER}/${OMP_MODEL_ID}`, "retry:", "  enabled: false", "  maxRetries: 0", ""].join("\n");
}

export const ompCli: CliUser = {
  name: "omp",
  setupUserHome(home, modelUrl) {
    const agent = join(home, ".omp", "agent");
    mkdirSync(agent, { recursive: true });
    writeFileSync(join(agent, "models.yml"), ompUserModels(modelUrl), { mode: 0o600 });
    writeFileSync(join(agent, "config.yml"), ompUserConfig());
  },
};

/** An Anthropic API key as a user passes it: `--env ANTHROPIC_API_KEY` (and here `--env ANTHROPIC_BASE_URL`, the scripted model). */
export const OMP_ANTHROPIC_KEY = "sk-ant-handoff-conformance-omp";

/**
 * The same user with no custom provider: omp's built-in Anthropic provider is the default role, its key and base URL
 * come from the environment (`--env ANTHROPIC_API_KEY --env ANTHROPIC_BASE_URL`), so handoff can keep the key out.
 */
export const ompAnthropicKeyCli: CliUser = {
  name: "omp",
  setupUserHome(home) {
    const agent = join(home, ".omp", "agent");
    mkdirSync(agent, { recursive: true });
    writeFileSync(
      join(agent, "config.yml"),
      ["modelRoles:", "  default: anthropic/claude-sonnet-4-5", "retry:", "  enabled: false", "  maxRetries: 0", ""].join("\n"),
    );
  },
  passEnv: (modelUrl) => ({ ANTHROPIC_API_KEY: OMP_ANTHROPIC_KEY, ANTHROPIC_BASE_URL: modelUrl }),
};
