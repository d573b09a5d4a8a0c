import { readFileSync } from "node:fs";
import { type ParseError, parse as parseJsonc } from "jsonc-parser";
import { parse as parseToml } from "smol-toml";
import { parse as parseYaml } from "yaml";
import type { ModelEndpoint } from "../src/agent/cli-contract.js";

/**
 * Reading the user's own CLI config for the hosts its model lives on (CliTranslator.network). Nothing here throws:
 * a missing, unreadable or malformed file reads as absent, and the CLI reports its own config errors.
 */

export type ConfigFormat = "json" | "jsonc" | "toml" | "yaml";

/** A config file's parsed value, or undefined when it is missing, unreadable or not valid `format`. */
export function readUserConfig(path: string, format: ConfigFormat, rewrite: (text: string) => string = (text) => text): unknown {
  let text: string;
  try {
    text = rewrite(readFileSync(path, "utf8"));
  } catch {
    return undefined;
  }
  try {
    return parseText(text, format);
  } catch {
    return undefined;
  }
}

function parseText(text: string, format: ConfigFormat): unknown {
  switch (format) {
    case "json":
      return JSON.parse(text);
    case "jsonc": {
      const errors: ParseError[] = [];
      const value: unknown = parseJsonc(text, errors, { allowTrailingComma: true });
      return errors.length === 0 ? value : undefined;
    }
    case "toml":
      return parseToml(text);
    case "yaml":
      return parseYaml(text);
  }
}

/** An http(s) URL or a bare host name, as the egress allowlist takes it; anything else (a typo, a template) is dropped. */
export function usableUrl(value: string | undefined): string | null {
  const url = value?.trim();
  if (!url) return null;
  if (/^[a-z0-9.-]+$/i.test(url) && url.includes(".")) return url;
  try {
    const parsed = new URL(url);
    return (parsed.protocol === "http:" || parsed.protocol === "https:") && !/[{}$<>]/.test(url) ? url : null;
  } catch {
    return null;
  }
}

/** Each usable URL once, the first `why` kept, in order. */
export function endpointList(candidates: readonly { readonly url: string | undefined; readonly why: string }[]): ModelEndpoint[] {
  const seen = new Map<string, ModelEndpoint>();
  for (const candidate of candidates) {
    const url = usableUrl(candidate.url);
    if (url && !seen.has(url)) seen.set(url, { url, why: candidate.why });
  }
  return [...seen.values()];
}

/** The provider of a `provider/model` reference (`anthropic/claude-…`, `mock/mock-model:high`), or null. */
export function providerOfModel(model: unknown): string | null {
  if (typeof model !== "string") return null;
  const slash = model.indexOf("/");
  return slash > 0 ? model.slice(0, slash) : null;
}

/** The string values of a record read from config (an `env` block): others are not what the CLI would use. */
export function stringValues(record: Readonly<Record<string, unknown>> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(record ?? {}).filter((entry): entry is [string, string] => typeof entry[1] === "string"));
}

/**
 * Whether a user's CLI config reads the variable `name` anywhere (a provider's `apiKey` or a header naming it, as
 * pi's and omp's models files do, or `$NAME`, `${NAME}`, `{env:NAME}` in a value): that reader would get a forwarded
 * key's placeholder and send it to its own base URL, so the key is not forwarded.
 */
export function configNamesVariable(config: unknown, name: string): boolean {
  const pattern = new RegExp(`(^|[^A-Za-z0-9_])${name}($|[^A-Za-z0-9_])`);
  const visit = (value: unknown): boolean => {
    if (typeof value === "string") return pattern.test(value);
    if (Array.isArray(value)) return value.some(visit);
    if (value !== null && typeof value === "object") return Object.values(value).some(visit);
    return false;
  };
  return visit(config);
}

/** Hosts of the logins several CLIs share. */
export const LOGIN_HOSTS = {
  /** Claude's OAuth token endpoint (`/v1/oauth/token`): Claude Code's and pi's claude.ai login refresh there. */
  claudeTokenRefresh: "platform.claude.com",
  /** The ChatGPT backend a ChatGPT (Codex) login talks to. */
  chatgptBackend: "chatgpt.com",
  /** OpenAI's OAuth token endpoint (`/oauth/token`), where a ChatGPT login refreshes. */
  openaiTokenRefresh: "auth.openai.com",
} as const;
