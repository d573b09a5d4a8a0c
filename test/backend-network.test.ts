import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, test } from "vitest";
import { CLI_BACKEND_ROWS } from "../backends/index.js";
import type { CliNetworkNeeds, CliTranslator } from "../src/agent/cli-contract.js";
import type { ConformanceCli } from "./helpers/conformance.js";
import { claudeCli } from "../scripted-model/users/claude.js";
import { codexCli } from "../scripted-model/users/codex.js";
import { ompCli, ompUserConfig, ompUserModels } from "../scripted-model/users/omp.js";
import { opencodeCli, opencodeUserConfig } from "../scripted-model/users/opencode.js";
import { piAnthropicKeyCli, piCli } from "../scripted-model/users/pi.js";
import { tempDir } from "./helpers/repo.js";

/** Where the scripted model would listen: what a user's config names instead of the provider's API. */
const MODEL_URL = "http://127.0.0.1:43210";

function translator(name: string): CliTranslator {
  const row = CLI_BACKEND_ROWS.find((candidate) => candidate.name === name);
  if (!row) throw new Error(`no backend ${name}`);
  return row.definition;
}

function userHome(files: Readonly<Record<string, string>> = {}): string {
  const home = tempDir("handoff-network-home");
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(home, path)), { recursive: true });
    writeFileSync(join(home, path), text);
  }
  return home;
}

function network(name: string, home: string, agentEnv: Readonly<Record<string, string>> = {}): CliNetworkNeeds {
  return translator(name).network({ HOME: home }, agentEnv);
}

function urls(needs: CliNetworkNeeds): string[] {
  return needs.endpoints.map((endpoint) => endpoint.url);
}

/** The user's home as the conformance suite builds it, and the environment it passes with --env. */
function conformanceNeeds(cli: ConformanceCli): CliNetworkNeeds {
  const home = userHome();
  cli.setupUserHome(home, MODEL_URL);
  return network(cli.name, home, cli.passEnv?.(MODEL_URL) ?? {});
}

const CONFORMANCE: readonly { readonly cli: ConformanceCli; readonly defaultHost: string }[] = [
  { cli: claudeCli, defaultHost: "api.anthropic.com" },
  { cli: codexCli, defaultHost: "api.openai.com" },
  { cli: opencodeCli, defaultHost: "opencode.ai" },
  { cli: piCli, defaultHost: "api.anthropic.com" },
  { cli: ompCli, defaultHost: "api.anthropic.com" },
];

describe("each CLI's model endpoints, as the user set it up", () => {
  test.each(CONFORMANCE)("$cli.name: the scripted model's URL from the conformance home, not the default API", ({ cli, defaultHost }) => {
    const needs = conformanceNeeds(cli);
    expect(needs.endpoints.length).toBeGreaterThan(0);
    for (const url of urls(needs)) expect(url.startsWith(MODEL_URL), `${cli.name}: ${url}`).toBe(true);
    expect(urls(needs)).not.toContain(defaultHost);
    for (const endpoint of needs.endpoints) expect(endpoint.why).not.toBe("");
  });

  test("every CLI reads an unreadable, malformed or wrongly shaped config as absent, and never throws", () => {
    const garbage = "{ not: [valid\n\t= json, toml or yaml";
    const home = userHome({
      ".claude/settings.json": garbage,
      ".claude/.credentials.json": garbage,
      ".codex/config.toml": garbage,
      ".codex/auth.json": garbage,
      ".config/opencode/opencode.json": garbage,
      ".config/opencode/opencode.jsonc": "[1, 2]",
      ".local/share/opencode/auth.json": garbage,
      ".pi/agent/models.json": '{"providers": {"x": {"baseUrl": 42}}}',
      ".pi/agent/settings.json": garbage,
      ".pi/agent/auth.json": "null",
      ".omp/agent/models.yml": garbage,
      ".omp/agent/config.yml": "modelRoles: [1, 2",
    });
    for (const row of CLI_BACKEND_ROWS) {
      expect(urls(network(row.name, home)), row.name).toEqual(urls(network(row.name, userHome())));
    }
  });
});

describe("claude", () => {
  test("no config: api.anthropic.com, and the token host of the claude.ai login", () => {
    expect(network("claude", userHome()).endpoints).toEqual([
      { url: "api.anthropic.com", why: "its model API" },
      { url: "platform.claude.com", why: "token refresh of the claude.ai login (.credentials.json)" },
    ]);
  });

  test("a key in the environment needs no token refresh", () => {
    expect(urls(network("claude", userHome(), { ANTHROPIC_API_KEY: "sk-ant-x" }))).toEqual(["api.anthropic.com"]);
  });

  test("ANTHROPIC_BASE_URL in settings.json's env wins over the passed variable, as Claude applies it", () => {
    const home = userHome({ ".claude/settings.json": JSON.stringify({ env: { ANTHROPIC_BASE_URL: "https://gateway.corp.example" } }) });
    const needs = network("claude", home, { ANTHROPIC_BASE_URL: MODEL_URL, ANTHROPIC_AUTH_TOKEN: "t" });
    expect(needs.endpoints).toEqual([
      { url: "https://gateway.corp.example", why: `ANTHROPIC_BASE_URL in the env of ${join(home, ".claude", "settings.json")}` },
    ]);
  });

  test("CLAUDE_CONFIG_DIR names the settings read", () => {
    const home = userHome({ "elsewhere/settings.json": JSON.stringify({ env: { ANTHROPIC_BASE_URL: MODEL_URL }, apiKeyHelper: "k" }) });
    expect(urls(translator("claude").network({ HOME: home, CLAUDE_CONFIG_DIR: join(home, "elsewhere") }, {}))).toEqual([MODEL_URL]);
  });
});

describe("codex", () => {
  test("no config: api.openai.com", () => {
    expect(network("codex", userHome()).endpoints).toEqual([{ url: "api.openai.com", why: "its model API" }]);
  });

  test("the custom provider's base_url, named with its file and key", () => {
    const needs = conformanceNeeds(codexCli);
    expect(needs.endpoints).toHaveLength(1);
    expect(needs.endpoints[0]?.url).toBe(`${MODEL_URL}/v1`);
    expect(needs.endpoints[0]?.why).toMatch(/^base_url of model provider "scripted" in .*\.codex\/config\.toml$/);
  });

  test("a ChatGPT login: the ChatGPT backend and auth.openai.com; CODEX_API_KEY makes it a key login again", () => {
    const home = userHome({
      ".codex/auth.json": JSON.stringify({ auth_mode: "chatgpt", OPENAI_API_KEY: null, tokens: { refresh_token: "r" } }),
    });
    expect(urls(network("codex", home))).toEqual(["chatgpt.com", "auth.openai.com"]);
    expect(urls(network("codex", home, { CODEX_API_KEY: "sk-x" }))).toEqual(["api.openai.com"]);
  });

  test("openai_base_url moves the built-in provider; the OPENAI_BASE_URL variable does not (Codex 0.171.0 ignores it)", () => {
    const home = userHome({ ".codex/config.toml": `openai_base_url = "https://gateway.corp.example/v1"\n` });
    expect(urls(network("codex", home, { OPENAI_BASE_URL: MODEL_URL }))).toEqual(["https://gateway.corp.example/v1"]);
    expect(urls(network("codex", userHome(), { OPENAI_BASE_URL: MODEL_URL }))).toEqual(["api.openai.com"]);
  });

  test("the selected profile's provider, and CODEX_HOME", () => {
    const config = [
      'profile = "local"',
      "[profiles.local]",
      'model_provider = "gw"',
      "[model_providers.gw]",
      `base_url = "${MODEL_URL}/v1"`,
      "[model_providers.other]",
      'base_url = "https://other.example/v1"',
    ].join("\n");
    const home = userHome({ "codex-home/config.toml": config });
    expect(urls(translator("codex").network({ HOME: home, CODEX_HOME: join(home, "codex-home") }, {}))).toEqual([`${MODEL_URL}/v1`]);
  });
});

describe("codex: the keys kept out of the sandbox", () => {
  const keys = (home: string, agentEnv: Readonly<Record<string, string>>) => translator("codex").keys?.({ HOME: home }, agentEnv) ?? [];

  test("CODEX_API_KEY for the built-in provider: a bearer token, redirected by -c openai_base_url, to config.toml's base URL or OpenAI's", () => {
    expect(keys(userHome(), { CODEX_API_KEY: "sk-x" })).toEqual([
      {
        variable: "CODEX_API_KEY",
        header: "bearer",
        upstream: "https://api.openai.com/v1",
        redirect: { kind: "leading_args", args: ["-c", "openai_base_url={base_url}"] },
      },
    ]);
    const gateway = userHome({ ".codex/config.toml": `openai_base_url = "https://gateway.corp.example/v1"\n` });
    expect(keys(gateway, { CODEX_API_KEY: "sk-x" }).map((route) => route.upstream)).toEqual(["https://gateway.corp.example/v1"]);
  });

  test("no route without the key, for OPENAI_API_KEY (Codex does not read it), or when the selected profile sets its own base URL", () => {
    expect(keys(userHome(), {})).toEqual([]);
    expect(keys(userHome(), { OPENAI_API_KEY: "sk-x" })).toEqual([]);
    const profiled = userHome({ ".codex/config.toml": 'profile = "p"\n[profiles.p]\nopenai_base_url = "https://p.example/v1"\n' });
    expect(keys(profiled, { CODEX_API_KEY: "sk-x" })).toEqual([]);
  });

  test("a custom provider's env_key, redirected by -c model_providers.<id>.base_url; CODEX_API_KEY is not its key", () => {
    const home = userHome();
    codexCli.setupUserHome(home, MODEL_URL);
    const routes = keys(home, { ...codexCli.passEnv?.(MODEL_URL), CODEX_API_KEY: "sk-x" });
    expect(routes.map((route) => [route.variable, route.upstream, route.redirect])).toEqual([
      ["HANDOFF_TEST_CODEX_KEY", `${MODEL_URL}/v1`, { kind: "leading_args", args: ["-c", "model_providers.scripted.base_url={base_url}"] }],
    ]);
  });
});

describe("opencode", () => {
  test("no config: OpenCode's own free provider", () => {
    expect(urls(network("opencode", userHome()))).toEqual(["opencode.ai"]);
  });

  test("JSONC (comments, trailing commas) in opencode.jsonc, and {env:NAME} from the agent's environment", () => {
    const jsonc = `// my gateway\n{ "model": "gw/m", "provider": { "gw": { "options": { "baseURL": "{env:GW_URL}", }, }, }, }\n`;
    const home = userHome({ ".config/opencode/opencode.jsonc": jsonc });
    expect(urls(network("opencode", home, { GW_URL: MODEL_URL }))).toEqual([MODEL_URL]);
  });

  test("the model's provider only, when the config names one", () => {
    const config = opencodeUserConfig(MODEL_URL);
    const other = { other: { options: { baseURL: "https://other.example/v1" } } };
    const home = userHome({
      ".config/opencode/opencode.json": JSON.stringify({
        ...config,
        model: "mock/mock-model",
        provider: { ...(config.provider as object), ...other },
      }),
    });
    expect(urls(network("opencode", home))).toEqual([`${MODEL_URL}/v1`]);
  });

  test("no model named: each configured provider", () => {
    const provider = { a: { options: { baseURL: "https://a.example/v1" } }, b: { options: { baseURL: "https://b.example/v1" } } };
    const needs = network("opencode", userHome({ ".config/opencode/opencode.json": JSON.stringify({ provider }) }));
    expect(urls(needs)).toEqual(["https://a.example/v1", "https://b.example/v1"]);
    expect(needs.endpoints[0]?.why).toContain("one of the configured providers");
  });

  test("a built-in provider: ANTHROPIC_BASE_URL, as its SDK reads it, else its API; logins in auth.json and keys choose", () => {
    const home = userHome({ ".config/opencode/opencode.json": JSON.stringify({ model: "anthropic/claude-x" }) });
    expect(urls(network("opencode", home))).toEqual(["api.anthropic.com"]);
    expect(urls(network("opencode", home, { ANTHROPIC_BASE_URL: MODEL_URL }))).toEqual([MODEL_URL]);
    expect(urls(network("opencode", userHome(), { OPENAI_API_KEY: "sk" }))).toEqual(["api.openai.com"]);
    const chatgpt = userHome({ ".local/share/opencode/auth.json": JSON.stringify({ openai: { type: "oauth", refresh: "r" } }) });
    expect(urls(network("opencode", chatgpt))).toEqual(["chatgpt.com", "auth.openai.com"]);
  });
});

describe("opencode keys", () => {
  const keys = (home: string, agentEnv: Readonly<Record<string, string>>) => translator("opencode").keys?.({ HOME: home }, agentEnv);
  const anthropic = {
    variable: "ANTHROPIC_API_KEY",
    header: "x-api-key",
    upstream: "https://api.anthropic.com/v1",
    redirect: { kind: "variable", variable: "ANTHROPIC_BASE_URL" },
  };
  const openai = {
    variable: "OPENAI_API_KEY",
    header: "bearer",
    upstream: "https://api.openai.com/v1",
    redirect: { kind: "variable", variable: "OPENAI_BASE_URL" },
  };
  const config = (value: unknown) => userHome({ ".config/opencode/opencode.json": JSON.stringify(value) });

  test("ANTHROPIC_API_KEY: x-api-key to Anthropic's API, redirected with ANTHROPIC_BASE_URL", () => {
    expect(keys(userHome(), { ANTHROPIC_API_KEY: "sk-ant" })).toEqual([anthropic]);
    expect(keys(config({ model: "anthropic/claude-x" }), { ANTHROPIC_API_KEY: "sk-ant" })).toEqual([anthropic]);
  });

  test("OPENAI_API_KEY: bearer to OpenAI's API, redirected with OPENAI_BASE_URL", () => {
    expect(keys(userHome(), { OPENAI_API_KEY: "sk" })).toEqual([openai]);
  });

  test("the passed base URL variable is the upstream", () => {
    expect(keys(userHome(), { ANTHROPIC_API_KEY: "sk-ant", ANTHROPIC_BASE_URL: `${MODEL_URL}/v1` })).toEqual([
      { ...anthropic, upstream: `${MODEL_URL}/v1` },
    ]);
    expect(keys(userHome(), { OPENAI_API_KEY: "sk", OPENAI_BASE_URL: `${MODEL_URL}/openai/v1` })).toEqual([
      { ...openai, upstream: `${MODEL_URL}/openai/v1` },
    ]);
  });

  test("none when the key is not passed, or its provider is not the run's", () => {
    expect(keys(userHome(), {})).toEqual([]);
    expect(keys(config({ model: "anthropic/claude-x", small_model: "openai/gpt-x" }), { ANTHROPIC_BASE_URL: MODEL_URL })).toEqual([]);
    expect(keys(userHome(), { ANTHROPIC_BASE_URL: MODEL_URL, GOOGLE_API_KEY: "g" })).toEqual([]);
    expect(keys(config({ model: "openai/gpt-x" }), { ANTHROPIC_API_KEY: "sk-ant", OPENAI_API_KEY: "sk" })).toEqual([openai]);
  });

  test("none when the user's config sets the provider's baseURL or apiKey (they win over the variables)", () => {
    const env = { ANTHROPIC_API_KEY: "sk-ant", OPENAI_API_KEY: "sk" };
    const model = { model: "anthropic/claude-x", small_model: "openai/gpt-x" };
    expect(keys(config(model), env)).toEqual([anthropic, openai]);
    expect(keys(config({ ...model, provider: { anthropic: { options: { baseURL: MODEL_URL } } } }), env)).toEqual([openai]);
    expect(keys(config({ ...model, provider: { anthropic: { options: { apiKey: "sk-other" } } } }), env)).toEqual([openai]);
    expect(keys(config({ ...model, provider: { openai: { options: { baseURL: MODEL_URL } } } }), env)).toEqual([anthropic]);
    expect(keys(config({ ...model, provider: { openai: { options: { apiKey: "sk-other" } } } }), env)).toEqual([anthropic]);
  });

  test("none when auth.json logs in to the provider: OpenCode sends that login, not the variable", () => {
    const home = userHome({ ".local/share/opencode/auth.json": JSON.stringify({ anthropic: { type: "api", key: "k" } }) });
    expect(keys(home, { ANTHROPIC_API_KEY: "sk-ant" })).toEqual([]);
  });

  test("none when another reader of the key would get the placeholder: {env:NAME} in the config, or a provider on the same SDK", () => {
    const env = { ANTHROPIC_API_KEY: "sk-ant" };
    const model = { model: "anthropic/claude-x" };
    expect(keys(config({ ...model, provider: { gw: { options: { headers: { k: "{env:ANTHROPIC_API_KEY}" } } } } }), env)).toEqual([]);
    expect(keys(config({ ...model, provider: { gw: { npm: "@ai-sdk/anthropic", options: { baseURL: MODEL_URL } } } }), env)).toEqual([]);
    expect(
      keys(config({ ...model, provider: { gw: { npm: "@ai-sdk/openai-compatible", options: { baseURL: MODEL_URL } } } }), env),
    ).toEqual([anthropic]);
  });
});

describe("pi", () => {
  test("no config: Anthropic's API", () => {
    expect(urls(network("pi", userHome()))).toEqual(["api.anthropic.com"]);
  });

  test("defaultProvider picks one of several providers in models.json", () => {
    const providers = {
      a: { baseUrl: "https://a.example/v1" },
      b: { baseUrl: `${MODEL_URL}/v1`, models: [{ baseUrl: `${MODEL_URL}/alt` }] },
    };
    const home = userHome({
      ".pi/agent/models.json": JSON.stringify({ providers }),
      ".pi/agent/settings.json": JSON.stringify({ defaultProvider: "b" }),
    });
    expect(urls(network("pi", home))).toEqual([`${MODEL_URL}/v1`, `${MODEL_URL}/alt`]);
    const undecided = userHome({ ".pi/agent/models.json": JSON.stringify({ providers }) });
    expect(urls(network("pi", undecided))).toEqual(["https://a.example/v1", `${MODEL_URL}/v1`, `${MODEL_URL}/alt`]);
  });

  test("a /login adds its token host; a key variable chooses a built-in provider", () => {
    const home = userHome({ ".pi/agent/auth.json": JSON.stringify({ anthropic: { type: "oauth", refresh: "r" } }) });
    expect(urls(network("pi", home))).toEqual(["api.anthropic.com", "platform.claude.com"]);
    expect(urls(network("pi", userHome(), { OPENAI_API_KEY: "sk" }))).toEqual(["api.openai.com"]);
  });
});

describe("omp", () => {
  test("no config: Anthropic's API", () => {
    expect(urls(network("omp", userHome()))).toEqual(["api.anthropic.com"]);
  });

  test("the roles' providers from config.yml, with the base URL from models.yml", () => {
    const home = userHome({ ".omp/agent/models.yml": ompUserModels(MODEL_URL), ".omp/agent/config.yml": ompUserConfig() });
    const needs = network("omp", home);
    expect(needs.endpoints).toHaveLength(1);
    expect(needs.endpoints[0]?.why).toMatch(/^providers\.mock\.baseUrl in .*models\.yml \(modelRoles\.default in .*config\.yml\)$/);
  });

  test("ANTHROPIC_BASE_URL moves the Anthropic provider; a ChatGPT role adds its token host", () => {
    const anthropic = userHome({ ".omp/agent/config.yml": "modelRoles:\n  default: anthropic/claude-x\n" });
    expect(urls(network("omp", anthropic, { ANTHROPIC_BASE_URL: MODEL_URL }))).toEqual([MODEL_URL]);
    const codex = userHome({ ".omp/agent/config.yaml": "modelRoles:\n  default: openai-codex/gpt-5.5\n" });
    expect(urls(network("omp", codex))).toEqual(["chatgpt.com", "auth.openai.com"]);
  });
});

describe("pi: the keys handoff keeps out of the sandbox", () => {
  const keys = (home: string, agentEnv: Readonly<Record<string, string>>) => translator("pi").keys?.({ HOME: home }, agentEnv) ?? [];
  const route = (variable: string, header: string, upstream: string, provider: string) => ({
    variable,
    header,
    upstream,
    redirect: { kind: "variable", variable: `HANDOFF_PI_BASE_URL_${provider}` },
  });
  const anthropic = (upstream = "https://api.anthropic.com") => route("ANTHROPIC_API_KEY", "x-api-key", upstream, "ANTHROPIC");

  test("each built-in provider's key in the agent's environment, redirected by handoff's extension, to the provider's API", () => {
    expect(keys(userHome(), { ANTHROPIC_API_KEY: "sk-ant-x" })).toEqual([anthropic()]);
    expect(keys(userHome(), { OPENAI_API_KEY: "sk-x", XAI_API_KEY: "xai", GEMINI_API_KEY: "g", MISTRAL_API_KEY: "m" })).toEqual([
      route("OPENAI_API_KEY", "bearer", "https://api.openai.com/v1", "OPENAI"),
      route("XAI_API_KEY", "bearer", "https://api.x.ai/v1", "XAI"),
    ]);
    expect(keys(userHome(), { GROQ_API_KEY: "g", OPENROUTER_API_KEY: "o", DEEPSEEK_API_KEY: "d" })).toEqual([
      route("GROQ_API_KEY", "bearer", "https://api.groq.com/openai/v1", "GROQ"),
      route("OPENROUTER_API_KEY", "bearer", "https://openrouter.ai/api/v1", "OPENROUTER"),
      route("DEEPSEEK_API_KEY", "bearer", "https://api.deepseek.com", "DEEPSEEK"),
    ]);
    // The conformance user's custom provider (models.json, auth.json for "mock") changes nothing for anthropic.
    const custom = userHome();
    piCli.setupUserHome(custom, MODEL_URL);
    expect(keys(custom, { ANTHROPIC_API_KEY: "sk-ant-x" })).toEqual([anthropic()]);
  });

  test("ANTHROPIC_BASE_URL (OPENAI_BASE_URL) passed with --env is the upstream: pi ignores it, handoff reads it", () => {
    expect(keys(userHome(), { ANTHROPIC_API_KEY: "sk-ant-x", ANTHROPIC_BASE_URL: `${MODEL_URL}/gw/` })).toEqual([
      anthropic(`${MODEL_URL}/gw`),
    ]);
    expect(keys(userHome(), { OPENAI_API_KEY: "sk-x", OPENAI_BASE_URL: `${MODEL_URL}/v1` })).toEqual([
      route("OPENAI_API_KEY", "bearer", `${MODEL_URL}/v1`, "OPENAI"),
    ]);
    // The conformance variant: its key and the scripted model as upstream, both from --env.
    const home = userHome();
    piAnthropicKeyCli.setupUserHome(home, MODEL_URL);
    expect(keys(home, piAnthropicKeyCli.passEnv!(MODEL_URL))).toEqual([anthropic(MODEL_URL)]);
  });

  test("none without the key, or with an OAuth token, where pi would send it otherwise", () => {
    expect(keys(userHome(), {})).toEqual([]);
    expect(keys(userHome(), { ANTHROPIC_API_KEY: "sk-ant-oat01-x" })).toEqual([]);
    expect(keys(userHome(), { ANTHROPIC_API_KEY: "sk-ant-x", ANTHROPIC_OAUTH_TOKEN: "sk-ant-oat01-x" })).toEqual([]);
  });

  test("none for a provider whose base URL models.json sets, or whose credential auth.json holds; none when either cannot be read", () => {
    const env = { ANTHROPIC_API_KEY: "sk-ant-x", OPENAI_API_KEY: "sk-x" };
    const openai = route("OPENAI_API_KEY", "bearer", "https://api.openai.com/v1", "OPENAI");
    const own = userHome({ ".pi/agent/models.json": JSON.stringify({ providers: { anthropic: { baseUrl: MODEL_URL } } }) });
    expect(keys(own, env)).toEqual([openai]);
    const model = userHome({
      ".pi/agent/models.json": JSON.stringify({ providers: { anthropic: { models: [{ id: "m", baseUrl: MODEL_URL }] } } }),
    });
    expect(keys(model, env)).toEqual([openai]);
    const login = userHome({ ".pi/agent/auth.json": JSON.stringify({ anthropic: { type: "oauth", refresh: "r" } }) });
    expect(keys(login, env)).toEqual([openai]);
    expect(keys(userHome({ ".pi/agent/models.json": "{" }), env)).toEqual([]);
    expect(keys(userHome({ ".pi/agent/auth.json": "null" }), env)).toEqual([]);
    // $PI_CODING_AGENT_DIR is where pi reads them.
    const elsewhere = userHome({ "pi-dir/models.json": JSON.stringify({ providers: { openai: { baseUrl: MODEL_URL } } }) });
    expect(translator("pi").keys?.({ HOME: elsewhere, PI_CODING_AGENT_DIR: join(elsewhere, "pi-dir") }, env)).toEqual([anthropic()]);
  });

  test("none for a key that a custom provider of models.json reads itself (its apiKey, or a header, names the variable)", () => {
    const models = (apiKey: string) =>
      JSON.stringify({ providers: { gw: { baseUrl: `${MODEL_URL}/v1`, api: "openai-completions", apiKey, models: [{ id: "m" }] } } });
    expect(keys(userHome({ ".pi/agent/models.json": models("OPENAI_API_KEY") }), { OPENAI_API_KEY: "sk-x" })).toEqual([]);
    const header = JSON.stringify({ providers: { gw: { baseUrl: MODEL_URL, headers: { "x-key": "$OPENAI_API_KEY" }, models: [] } } });
    expect(keys(userHome({ ".pi/agent/models.json": header }), { OPENAI_API_KEY: "sk-x" })).toEqual([]);
    // The other providers' keys still go through the forwarder.
    expect(
      keys(userHome({ ".pi/agent/models.json": models("OPENAI_API_KEY") }), { OPENAI_API_KEY: "sk-x", ANTHROPIC_API_KEY: "a" }),
    ).toEqual([anthropic()]);
  });
});

describe("omp: the keys handoff keeps out of the sandbox", () => {
  const keys = (home: string, agentEnv: Readonly<Record<string, string>>) => translator("omp").keys?.({ HOME: home }, agentEnv) ?? [];
  const route = (upstream: string, header = "x-api-key") => ({
    variable: "ANTHROPIC_API_KEY",
    header,
    upstream,
    redirect: { kind: "variable", variable: "ANTHROPIC_BASE_URL" },
  });

  test("ANTHROPIC_API_KEY, redirected with ANTHROPIC_BASE_URL, to Anthropic's API (x-api-key) or the gateway the variable names (both headers, as omp sends it)", () => {
    expect(keys(userHome(), { ANTHROPIC_API_KEY: "sk-ant-x" })).toEqual([route("https://api.anthropic.com")]);
    // omp drops a trailing /v1 and adds /v1/messages: the forwarder's base URL must carry the path omp keeps.
    expect(keys(userHome(), { ANTHROPIC_API_KEY: "sk-ant-x", ANTHROPIC_BASE_URL: `${MODEL_URL}/gw/v1/` })).toEqual([
      route(`${MODEL_URL}/gw`, "x-api-key and bearer"),
    ]);
    // The user's models.yml with other providers (the conformance one) changes nothing.
    const custom = userHome({ ".omp/agent/models.yml": ompUserModels(MODEL_URL), ".omp/agent/config.yml": ompUserConfig() });
    expect(keys(custom, { ANTHROPIC_API_KEY: "sk-ant-x" })).toEqual([route("https://api.anthropic.com")]);
  });

  test("none without the key, or where omp would not send it through ANTHROPIC_BASE_URL as x-api-key", () => {
    expect(keys(userHome(), {})).toEqual([]);
    expect(keys(userHome(), { OPENAI_API_KEY: "sk-x" })).toEqual([]);
    // An OAuth token: omp sends it as a bearer token with Claude Code's headers, which a placeholder would not get.
    expect(keys(userHome(), { ANTHROPIC_API_KEY: "sk-ant-oat01-x" })).toEqual([]);
    expect(keys(userHome(), { ANTHROPIC_API_KEY: "sk-ant-x", ANTHROPIC_OAUTH_TOKEN: "sk-ant-oat01-x" })).toEqual([]);
    // Foundry: FOUNDRY_BASE_URL wins.
    expect(keys(userHome(), { ANTHROPIC_API_KEY: "sk-ant-x", CLAUDE_CODE_USE_FOUNDRY: "1" })).toEqual([]);
  });

  test("none when models.yml gives the anthropic provider (or one of its models) a base URL, or cannot be read", () => {
    const env = { ANTHROPIC_API_KEY: "sk-ant-x" };
    const own = userHome({ ".omp/agent/models.yml": `providers:\n  anthropic:\n    baseUrl: ${MODEL_URL}\n` });
    expect(keys(own, env)).toEqual([]);
    const model = userHome({
      ".omp/agent/models.yaml": `providers:\n  anthropic:\n    models:\n      - id: m\n        baseUrl: ${MODEL_URL}\n`,
    });
    expect(keys(model, env)).toEqual([]);
    expect(keys(userHome({ ".omp/agent/models.yml": "providers: [1, 2" }), env)).toEqual([]);
  });

  test("none when a custom provider of models.yml reads ANTHROPIC_API_KEY itself: it would send the placeholder to its own URL", () => {
    const gateway = `providers:\n  gw:\n    baseUrl: ${MODEL_URL}\n    api: anthropic-messages\n    apiKey: ANTHROPIC_API_KEY\n`;
    expect(keys(userHome({ ".omp/agent/models.yml": gateway }), { ANTHROPIC_API_KEY: "sk-ant-x" })).toEqual([]);
    // Another variable's name that merely contains it is not a read of it.
    const other = gateway.replace("apiKey: ANTHROPIC_API_KEY", "apiKey: MY_ANTHROPIC_API_KEY_2");
    expect(keys(userHome({ ".omp/agent/models.yml": other }), { ANTHROPIC_API_KEY: "sk-ant-x" })).toHaveLength(1);
  });
});
