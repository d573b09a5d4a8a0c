import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CliUser } from "./cli-user.js";

/** The key and model of the user's own provider (`copilot help providers`: bring your own key). */
export const COPILOT_KEY = "sk-handoff-conformance-copilot";
export const COPILOT_MODEL = "gpt-4.1";

/**
 * What a BYOK user passes with `--env`: copilot reads its provider from the environment only. OpenAI Chat Completions
 * (the default `COPILOT_PROVIDER_TYPE` and wire API) at the scripted model's `/v1`; `COPILOT_OFFLINE`: no GitHub
 * sign-in, telemetry or update check.
 */
export function copilotUserEnv(modelUrl: string): Record<string, string> {
  return {
    COPILOT_PROVIDER_BASE_URL: `${modelUrl}/v1`,
    COPILOT_PROVIDER_API_KEY: COPILOT_KEY,
    COPILOT_MODEL,
    COPILOT_OFFLINE: "true",
  };
}

/**
 * A user who has run copilot before: `~/.copilot/config.json` as copilot writes it on a first launch (linked into the
 * run; with `firstLaunchAt` there copilot does not rewrite it), and the provider in the environment.
 */
export const copilotCli: CliUser = {
  name: "copilot",
  setupUserHome(home) {
    const dir = join(home, ".copilot");
    mkdirSync(dir, { recursive: true });
    const config = "// User settings belong in settings.json.\n// This file is managed automatically.\n";
    writeFileSync(join(dir, "config.json"), `${config}${JSON.stringify({ firstLaunchAt: "2026-12-01T00:00:00.000Z" }, null, 2)}\n`);
  },
  passEnv: copilotUserEnv,
};
