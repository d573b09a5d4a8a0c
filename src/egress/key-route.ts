/**
 * A model key the agent's CLI is given as an environment variable (`--env ANTHROPIC_API_KEY`), and how handoff keeps
 * it out of the sandbox: the CLI gets a placeholder and a base URL on the sandbox's loopback; handoff's model
 * forwarder, outside, puts the real key on each request and sends it on to `upstream`, and nowhere else.
 */
export interface KeyRoute {
  /** The variable that holds the key in the agent's environment. */
  readonly variable: string;
  /**
   * How the CLI sends it: `x-api-key: KEY`, `authorization: Bearer KEY`, both (what omp sends a base URL that is
   * not Anthropic's own), or `x-goog-api-key: KEY` (Gemini's SDK). The forwarder puts the key where the route says and
   * drops the placeholder anywhere else.
   */
  readonly header: "x-api-key" | "bearer" | "x-api-key and bearer" | "x-goog-api-key";
  /** The base URL the CLI would send it to: its config's or the environment's, else its provider's default. */
  readonly upstream: string;
  /** How the CLI is pointed at the forwarder's base URL inside the sandbox. */
  readonly redirect: BaseUrlRedirect;
}

/**
 * A variable set to the forwarder's base URL, or arguments put first on the CLI's command line (Codex's
 * `-c model_providers.<id>.base_url="…"`), where BASE_URL_TOKEN stands for the URL, written as a TOML/JSON string.
 */
export type BaseUrlRedirect =
  | { readonly kind: "variable"; readonly variable: string }
  | { readonly kind: "leading_args"; readonly args: readonly string[] };

/** In a `leading_args` redirect: replaced by the forwarder's base URL, quoted as a JSON string. */
export const BASE_URL_TOKEN = "{base_url}";

/** A key route that could not be kept out of the sandbox, and why (the key then stays in the agent's environment). */
export interface KeyRouteRefused {
  readonly variable: string;
  readonly why: string;
}

/**
 * What result.json `network.logins` says of a login that stays a file in the CLI's home (an OAuth login that
 * refreshes): the agent can read it, and write it so that no refreshed token is lost.
 */
export interface LoginRecord {
  readonly backend: string;
  /** The user's own file, linked into the CLI's private home. */
  readonly file: string;
  readonly held: "with_agent";
  /** How far it could go: the filtered network's allowlist, or the host's network. */
  readonly detail: string;
}

/** What result.json `network.keys` says of each model key the agent was given. */
export interface KeyRecord {
  readonly backend: string;
  readonly variable: string;
  /** `forwarded`: the agent held a placeholder and handoff added the key on the way out; `with_agent`: it was in the agent's environment. */
  readonly held: "forwarded" | "with_agent";
  /** Where handoff sent it (forwarded), or why it stayed in the sandbox. */
  readonly detail: string;
}
