import type { RunResult } from "../verdict/result.js";
import { escapeControls } from "../vocabulary/display.js";

/** Blocked hosts named in a report's headline; result.json `network.blocked` has them all. */
const HOSTS_NAMED = 5;

/**
 * What every report says near the top about the network, or null when there is nothing to say: the hosts the agent
 * or setup tried that were blocked (a prompt-injected agent is what a reviewer must see first), or that they had this
 * machine's network unfiltered.
 */
export function networkHeadline(r: RunResult): string | null {
  const network = r.network;
  if (!network) return null;
  const blocked = network.blocked;
  if (blocked.length > 0) {
    // What the agent's CLI tried before its model first answered (update checks, catalogs) comes after the rest: a
    // host the model sent the agent to is what a reviewer must see first.
    const early = blocked.filter((host) => host.beforeModelAnswer === true);
    const rest = blocked.filter((host) => host.beforeModelAnswer !== true);
    if (rest.length === 0)
      return `the agent's CLI tried to reach ${hostsPhrase(early)} before its model first answered (result.json network.blocked)`;
    const roles = new Set(rest.flatMap((host) => host.roles));
    const who = roles.has("agent") && roles.has("setup") ? "the agent and setup" : roles.has("setup") ? "a setup command" : "the agent";
    const cliOwn = early.length > 0 ? `; its CLI tried ${byHost(early).length} more on its own before its model first answered` : "";
    return `${who} tried to reach ${hostsPhrase(rest)}${cliOwn} (result.json network.blocked)`;
  }
  if (network.mode === "open") return `the agent had this machine's network: ${escapeControls(network.reason ?? "unfiltered")}`;
  if (!network.enforced) return `the agent's network was not filtered: ${escapeControls(network.reason ?? "unknown")}`;
  return null;
}

/** One host once, with every port it was tried on. */
function byHost(blocked: NonNullable<RunResult["network"]>["blocked"]): [string, number[]][] {
  const ports = new Map<string, number[]>();
  for (const entry of blocked) ports.set(entry.host, [...(ports.get(entry.host) ?? []), entry.port]);
  return [...ports.entries()];
}

/** `2 hosts that were blocked: a.example (port 443), b.example (port 80, 443)`, the first HOSTS_NAMED of them named. */
function hostsPhrase(blocked: NonNullable<RunResult["network"]>["blocked"]): string {
  const hosts = byHost(blocked);
  const named = hosts.slice(0, HOSTS_NAMED).map(([host, list]) => `${escapeControls(host)} (port ${list.join(", ")})`);
  const more = hosts.length > HOSTS_NAMED ? `, and ${hosts.length - HOSTS_NAMED} more` : "";
  const count = hosts.length === 1 ? "1 host that was" : `${hosts.length} hosts that were`;
  return `${count} blocked: ${named.join(", ")}${more}`;
}
