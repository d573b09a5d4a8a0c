import { isAbsolute, join } from "node:path";
import { z } from "zod";
import { lazySchema } from "../src/lib/lazy-schema.js";
import type {
  CliHome,
  CliInvocation,
  CliNetworkNeeds,
  CliResumeCommand,
  CliResumeInvocation,
  CliCannotResume,
  CliTranslator,
} from "../src/agent/cli-contract.js";
import type { AgentCommand } from "../src/agent/stream-contract.js";
import type { KeyRoute } from "../src/egress/key-route.js";
import { sameNameLinks, userHome } from "./cli-home.js";
import { endpointList, readUserConfig } from "./model-endpoints.js";
import { createGeminiStreamParser } from "./gemini-stream.js";

/**
 * The Gemini CLI (`@google/gemini-cli`, tested 0.61.0): `gemini --output-format stream-json`, the task on stdin.
 * See docs/backends/gemini.md for why each flag is there.
 */

/**
 * The user's files linked into the private `.gemini` dir: the Google login (`oauth_creds.json`, its account in
 * `google_accounts.json`) and settings (the auth type, the model, retries).
 */
export const GEMINI_LOGIN_FILES = ["oauth_creds.json", "google_accounts.json", "settings.json"] as const;

/** The Gemini API's default host (@google/genai), where a key is sent when no base URL is set. */
export const GEMINI_API = "https://generativelanguage.googleapis.com";

/** The user's own `.gemini` dir: under `$GEMINI_CLI_HOME` when it is set (Gemini's stand-in for the home), else `~/.gemini`. */
export function userGeminiDir(userEnv: Readonly<Record<string, string | undefined>>): string {
  const home = userEnv.GEMINI_CLI_HOME;
  return join(home && isAbsolute(home) ? home : userHome(userEnv), ".gemini");
}

/** Gemini's home inside the run's private CLI home (`GEMINI_CLI_HOME`): its config dir is `.gemini` under it. */
const PRIVATE_HOME = "gemini";

/**
 * What a repository's `.env` or `.gemini/.env` could set for Gemini: it loads the first it finds into its own
 * environment once `--skip-trust` trusts the folder, filling in each variable that is not set. So each is set for it,
 * to Gemini's own default (empty: unset, for Gemini's truthiness checks), unless handoff's own environment has it (the
 * user may pass it with --env). Endpoints, the auth type, the key and the project it bills, the model, the system
 * prompt and settings files.
 */
export const GEMINI_DOTENV_PINS: Readonly<Record<string, string>> = {
  GOOGLE_GEMINI_BASE_URL: "",
  GOOGLE_VERTEX_BASE_URL: "",
  // Read with `??`: an empty value would be the endpoint.
  CODE_ASSIST_ENDPOINT: "https://cloudcode-pa.googleapis.com",
  GOOGLE_GENAI_USE_GCA: "",
  GOOGLE_GENAI_USE_VERTEXAI: "",
  GEMINI_CLI_USE_COMPUTE_ADC: "",
  GEMINI_API_KEY: "",
  GOOGLE_API_KEY: "",
  GOOGLE_APPLICATION_CREDENTIALS: "",
  GOOGLE_CLOUD_PROJECT: "",
  GOOGLE_CLOUD_LOCATION: "",
  GEMINI_MODEL: "",
  GEMINI_SYSTEM_MD: "",
  GEMINI_CLI_SYSTEM_SETTINGS_PATH: "",
  GEMINI_CLI_SYSTEM_DEFAULTS_PATH: "",
};

export function geminiHome(homeDir: string, userEnv: Readonly<Record<string, string | undefined>>): CliHome {
  const home = join(homeDir, PRIVATE_HOME);
  const dir = join(home, ".gemini");
  const pins = Object.entries(GEMINI_DOTENV_PINS).filter(([name]) => userEnv[name] === undefined);
  return {
    env: { ...Object.fromEntries(pins), GEMINI_CLI_HOME: home },
    dirs: [home, dir],
    links: sameNameLinks(GEMINI_LOGIN_FILES, dir, userGeminiDir(userEnv)),
  };
}

/**
 * `--output-format stream-json --approval-mode yolo --skip-trust --session-id <uuid> [--model id]`, the task on stdin
 * (a piped stdin is headless mode). `--approval-mode yolo`: headless Gemini cannot ask, so every tool needing approval
 * would be refused; the clone is handoff's to lose. `--skip-trust`: headless Gemini refuses to start in a folder it
 * does not trust (exit 55), and without trust it also overrides yolo back to `default`. The flag trusts the folder
 * for this session only, after the settings were read (a repo's `.gemini/settings.json` and `.gemini/.env` stay
 * unread; docs/backends/gemini.md, "The repository").
 */
export function geminiArgs(invocation: Pick<CliInvocation, "model">): string[] {
  return [
    "--output-format",
    "stream-json",
    "--approval-mode",
    "yolo",
    "--skip-trust",
    ...(invocation.model ? ["--model", invocation.model] : []),
  ];
}

export function geminiCommand(invocation: CliInvocation): AgentCommand {
  return {
    file: invocation.executable,
    args: [...geminiArgs(invocation), "--session-id", invocation.sessionId],
    stdin: invocation.task,
  };
}

/**
 * In the same clone, `--resume <id>` continues the session (the same id). Gemini keeps sessions per project, under a
 * folder registered for the clone's path (`.gemini/tmp/<slug>/chats`), and finds `--resume <id>` only there: from a
 * clone at another path it would not find it.
 */
export function geminiResume(invocation: CliResumeInvocation): CliResumeCommand | CliCannotResume {
  if (invocation.previousCwd !== invocation.cwd) {
    return {
      cannotResume:
        "gemini keeps a session under the folder it registered for the earlier clone's path, and --resume finds it only from that path",
    };
  }
  return {
    command: { file: invocation.executable, args: [...geminiArgs(invocation), "--resume", invocation.resumeId], stdin: invocation.task },
    sessionId: invocation.resumeId,
  };
}

/** The part of the user's settings.json that says where the model is: the auth type the user chose. */
const GeminiSettings = lazySchema(() =>
  z.looseObject({
    security: z.looseObject({ auth: z.looseObject({ selectedType: z.string().optional() }).optional() }).optional(),
  }),
);

/** The auth type the user's settings.json selects (`gemini-api-key`, `oauth-personal`, `vertex-ai`, …), or null. */
function selectedAuthType(userEnv: Readonly<Record<string, string | undefined>>): string | null {
  const settings = GeminiSettings.safeParse(readUserConfig(join(userGeminiDir(userEnv), "settings.json"), "json"));
  return (settings.success && settings.data.security?.auth?.selectedType) || null;
}

/**
 * By the auth type the user's settings.json selects (else as Gemini picks it from the environment): a Google login
 * talks to Code Assist and refreshes at Google's OAuth host; Vertex AI to `GOOGLE_VERTEX_BASE_URL` or its regional
 * host; an API key to `GOOGLE_GEMINI_BASE_URL`, else the Gemini API.
 */
export function geminiNetwork(
  userEnv: Readonly<Record<string, string | undefined>>,
  agentEnv: Readonly<Record<string, string>>,
): CliNetworkNeeds {
  const selected = selectedAuthType(userEnv);
  const how = selected
    ? `security.auth.selectedType ${selected} in ${join(userGeminiDir(userEnv), "settings.json")}`
    : "no auth type selected";
  if (selected === "oauth-personal" || agentEnv.GOOGLE_GENAI_USE_GCA === "true") {
    return {
      endpoints: endpointList([
        {
          url: agentEnv.CODE_ASSIST_ENDPOINT || "cloudcode-pa.googleapis.com",
          why: `Code Assist, the model API of a Google login (${how})`,
        },
        { url: "oauth2.googleapis.com", why: "token refresh of the Google login (oauth_creds.json)" },
      ]),
    };
  }
  if (selected === "vertex-ai" || agentEnv.GOOGLE_GENAI_USE_VERTEXAI === "true") {
    const location = agentEnv.GOOGLE_CLOUD_LOCATION;
    const host = location && location !== "global" ? `${location}-aiplatform.googleapis.com` : "aiplatform.googleapis.com";
    return { endpoints: endpointList([{ url: agentEnv.GOOGLE_VERTEX_BASE_URL || host, why: `Vertex AI (${how})` }]) };
  }
  const base = agentEnv.GOOGLE_GEMINI_BASE_URL;
  return {
    endpoints: endpointList([
      { url: base || "generativelanguage.googleapis.com", why: base ? `GOOGLE_GEMINI_BASE_URL (${how})` : `the Gemini API (${how})` },
    ]),
  };
}

/**
 * `GEMINI_API_KEY` (sent as `x-goog-api-key`), kept out of the sandbox: Gemini gets a placeholder and
 * `GOOGLE_GEMINI_BASE_URL` on the sandbox's loopback. Only when the user's settings.json selects `gemini-api-key`:
 * Gemini 0.61.0 takes a set `GOOGLE_GEMINI_BASE_URL` without a selected type as the `gateway` auth type, which its
 * headless mode refuses ("Invalid auth method selected."), and with a Google login or Vertex AI selected it does not
 * send this key at all.
 */
export function geminiKeys(userEnv: Readonly<Record<string, string | undefined>>, agentEnv: Readonly<Record<string, string>>): KeyRoute[] {
  if (!agentEnv.GEMINI_API_KEY || selectedAuthType(userEnv) !== "gemini-api-key") return [];
  const upstream = agentEnv.GOOGLE_GEMINI_BASE_URL?.trim().replace(/\/+$/, "") || GEMINI_API;
  return [
    { variable: "GEMINI_API_KEY", header: "x-goog-api-key", upstream, redirect: { kind: "variable", variable: "GOOGLE_GEMINI_BASE_URL" } },
  ];
}

export const geminiDefinition: CliTranslator = {
  home: geminiHome,
  network: geminiNetwork,
  keys: geminiKeys,
  command: geminiCommand,
  resume: geminiResume,
  parser: () => createGeminiStreamParser(),
};
