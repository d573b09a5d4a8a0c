import type { CliInfo } from "./cli-contract.js";

/**
 * Sub-reasons for an agent failure that a user can act on. The backends map their CLI's own error shapes to these;
 * `agent_reported_error` is the rest.
 */
export const AGENT_FAILURE_DETAILS = [
  "executable_unavailable",
  "auth_failed",
  "rate_limited",
  "network_unreachable",
  "provider_error",
  "max_turns",
  "permission_denied",
  "malformed_event_stream",
  "agent_reported_error",
] as const;
export type AgentFailureDetail = (typeof AGENT_FAILURE_DETAILS)[number];

const BROKEN_STREAM =
  /stream disconnected|^terminated$|econnreset|closed unexpectedly|premature close|stream ended|incomplete (response|stream)|operation timed out/i;

/** Reads an error the CLI relayed from its model provider: the HTTP status when the CLI gives one, else the words. */
export function classifyProviderError(message: string, status: number | null = null): AgentFailureDetail {
  if (status === 401 || status === 403) return "auth_failed";
  if (status === 429) return "rate_limited";
  if (
    /\b(401|403)\b|unauthori[sz]ed|forbidden|invalid[ _-]?(x-)?api[ _-]?key|authentication|not logged in|please run \/login|missing environment variable|no api key|please set an auth method/i.test(
      message,
    )
  ) {
    return "auth_failed";
  }
  if (/\b429\b|rate[ _-]?limit|too many requests|quota|usage limit/i.test(message)) return "rate_limited";
  // A stream that broke after the provider answered: before the network words, which such messages also use.
  if (BROKEN_STREAM.test(message.trim())) return "provider_error";
  if (
    /connection error|econnrefused|connection ?refused|unable to connect|cannot connect|could not connect|error sending request|enotfound|eai_again|getaddrinfo|fetch failed|network|connection failed|socket hang up/i.test(
      message,
    )
  ) {
    return "network_unreachable";
  }
  if ((status !== null && status >= 500) || /\b5\d\d\b|server error|overloaded|stream disconnected|internal error/i.test(message))
    return "provider_error";
  return "agent_reported_error";
}

export function installHint(info: CliInfo): string {
  return `install ${info.name}: ${info.install}; or name its executable with --bin PATH (handoff run -b ${info.name} --bin PATH)`;
}

/** One line a person can act on, for each sub-reason. */
export function hintFor(detail: string, info: CliInfo): string | null {
  switch (detail) {
    case "executable_unavailable":
      return installHint(info);
    case "auth_failed":
      return info.login;
    case "rate_limited":
      return "the model provider is rate limiting this account: wait and retry, or check the plan's limits";
    case "network_unreachable":
      return `${info.name} could not reach its model provider: check the network, the proxy (pass it with --env HTTPS_PROXY) and the provider URL in ${info.name}'s own config`;
    case "provider_error":
      return "the model provider failed (server error or a broken stream): retry later";
    case "max_turns":
      return `the agent hit ${info.name}'s turn limit: split the task, or raise the limit in ${info.name}'s config`;
    case "permission_denied":
      return `${info.name} refused one of the agent's tool calls (see agent.tool.finished in events.jsonl); handoff lets it edit inside the clone only`;
    case "malformed_event_stream":
      return `handoff could not follow ${info.name}'s output (tested with ${info.testedVersion}); the lines it could not read are diagnostics in events.jsonl`;
    case "agent_reported_error":
      return `${info.name} reported an error: see events.jsonl and backend-result.json`;
    default:
      return null;
  }
}
