import type { CliName } from "../../backends/index.js";

/**
 * One agent CLI set up as a user would have it, pointed at the scripted model: its own config in a home of its own,
 * and what the user passes to handoff. The conformance suite, `handoff mcp`'s real-client test and `npm run demo`
 * use these.
 */
export interface CliUser {
  readonly name: CliName;
  /** Writes the user's own CLI config (provider pointing at the scripted model, credentials) into a fake user home. */
  setupUserHome(home: string, modelUrl: string): void;
  /**
   * The variables the user passes through with `--env NAME` (a key, a gateway URL), and their values for the
   * scripted model at `modelUrl`: handoff runs with them set and one `--env` per name.
   */
  passEnv?(modelUrl: string): Readonly<Record<string, string>>;
  /** The model the user names with `--model`; without it the CLI's own default (from the user's config) runs. */
  readonly model?: string;
}
