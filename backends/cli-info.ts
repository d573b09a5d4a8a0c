/** What a user needs to know about each agent CLI: where to get it, how to log in, which version handoff tested. */
export interface CliInfo {
  readonly name: "codex" | "claude" | "opencode" | "pi" | "omp";
  /** The executable looked up on PATH when `--bin` is not given. */
  readonly executable: string;
  /** The version the conformance suite runs against (test/agent-clis/<name>/package.json). */
  readonly testedVersion: string;
  readonly install: string;
  readonly login: string;
  /** A login that survives unattended runs, named when the CLI replaced its linked login file. */
  readonly unattendedLogin?: string;
}

export const CODEX: CliInfo = {
  name: "codex",
  executable: "codex",
  testedVersion: "0.171.0",
  install: "npm install -g @openai/codex@0.171.0",
  login: "log in with `codex login` (handoff links ~/.codex/auth.json into the run), or pass a key with --env CODEX_API_KEY",
};

export const CLAUDE: CliInfo = {
  name: "claude",
  executable: "claude",
  testedVersion: "2.1.197",
  install: "npm install -g @anthropic-ai/claude-code@2.1.197",
  login: "log in with `claude` and /login (handoff links ~/.claude/.credentials.json into the run), or pass a key with --env ANTHROPIC_API_KEY, or a `claude setup-token` token with --env CLAUDE_CODE_OAUTH_TOKEN",
  unattendedLogin: "For unattended use, create a long-lived token with `claude setup-token` and pass it with --env CLAUDE_CODE_OAUTH_TOKEN.",
};

export const OPENCODE: CliInfo = {
  name: "opencode",
  executable: "opencode",
  testedVersion: "1.18.33",
  install: "npm install -g opencode-ai@1.18.33",
  login: "log in with `opencode auth login` (handoff links ~/.local/share/opencode/auth.json into the run), or pass the provider's key with --env",
};

export const PI: CliInfo = {
  name: "pi",
  executable: "pi",
  testedVersion: "0.73.1",
  install: "npm install -g @mariozechner/pi-coding-agent@0.73.1",
  login: "log in with `pi` and /login (handoff links ~/.pi/agent/auth.json into the run), or pass the provider's key with --env, e.g. --env ANTHROPIC_API_KEY",
};

export const OMP: CliInfo = {
  name: "omp",
  executable: "omp",
  testedVersion: "18.2.3",
  install: "npm install -g bun @oh-my-pi/pi-coding-agent@18.2.3 (omp runs on bun, which must be on PATH)",
  login: "log in with `omp` and /login (handoff links ~/.omp/agent into the run), or pass the provider's key with --env",
};

export const CLI_INFOS: readonly CliInfo[] = [CODEX, CLAUDE, OPENCODE, PI, OMP];
