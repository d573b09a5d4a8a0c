import { mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import type { CliBackendRow } from "../backends/index.js";
import { tempDir } from "./helpers/repo.js";

/** The bundle's chunk with the backends' registry (scripts/bundle-cli.mjs): what `handoff run` uses, not the tsc output. */
async function bundledRows(): Promise<readonly CliBackendRow[]> {
  const dir = new URL("../dist/cli/", import.meta.url).pathname;
  const chunk = readdirSync(dir).find(
    (name) => name.startsWith("chunk-") && readFileSync(join(dir, name), "utf8").includes("CLI_BACKEND_ROWS,"),
  );
  expect(chunk, "no chunk of dist/cli exports the backends' registry: run npm run build").toBeDefined();
  return ((await import(join(dir, chunk!))) as { CLI_BACKEND_ROWS: readonly CliBackendRow[] }).CLI_BACKEND_ROWS;
}

test("the bundled CLI reads the agent CLIs' YAML, TOML and JSONC configs (their parsers are loaded on first use)", async () => {
  const home = tempDir("handoff-config-home");
  mkdirSync(join(home, ".omp/agent"), { recursive: true });
  writeFileSync(join(home, ".omp/agent/models.yml"), "providers:\n  myprov:\n    baseUrl: https://yaml.example.com/v1\n");
  writeFileSync(join(home, ".omp/agent/config.yml"), "modelRoles:\n  default: myprov/x\n");
  mkdirSync(join(home, ".codex"));
  writeFileSync(join(home, ".codex/config.toml"), 'model_provider = "p"\n[model_providers.p]\nbase_url = "https://toml.example.com/v1"\n');
  mkdirSync(join(home, ".config/opencode"), { recursive: true });
  writeFileSync(
    join(home, ".config/opencode/opencode.jsonc"),
    '{\n  // a comment, and a trailing comma\n  "model": "p/x",\n  "provider": { "p": { "options": { "baseURL": "https://jsonc.example.com/v1" } } },\n}\n',
  );
  const userEnv = { HOME: home, XDG_CONFIG_HOME: join(home, ".config") };
  const rows = await bundledRows();
  const urls = (name: string) => rows.find((row) => row.name === name)!.definition.network!(userEnv, {}).endpoints.map((e) => e.url);
  expect(urls("omp")).toEqual(["https://yaml.example.com/v1"]);
  expect(urls("codex")).toEqual(["https://toml.example.com/v1"]);
  expect(urls("opencode")).toEqual(["https://jsonc.example.com/v1"]);
});
