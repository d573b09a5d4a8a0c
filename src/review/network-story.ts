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

type Blocked = NonNullable<RunResult["network"]>["blocked"];

/** One host once, with every way it was tried. */
function byHost(blocked: Blocked): [string, Blocked][] {
  const ways = new Map<string, Blocked>();
  for (const entry of blocked) ways.set(entry.host, [...(ways.get(entry.host) ?? []), entry]);
  return [...ways.entries()];
}

/** `port 443, 80`, `UDP port 9999`, `DNS lookup`, joined by `; `. */
function waysWords(entries: Blocked): string {
  const ports = (via: (v: string | undefined) => boolean) => [...new Set(entries.filter((e) => via(e.via)).map((e) => e.port))];
  const tcp = ports((via) => via !== "udp" && via !== "dns");
  const udp = ports((via) => via === "udp");
  const words = [];
  if (tcp.length > 0) words.push(`port ${tcp.join(", ")}`);
  if (udp.length > 0) words.push(`UDP port ${udp.join(", ")}`);
  if (entries.some((e) => e.via === "dns")) words.push("DNS lookup");
  return words.join("; ");
}

/** `2 hosts that were blocked: a.example (port 443), b.example (port 80, 443)`, the first HOSTS_NAMED of them named. */
function hostsPhrase(blocked: Blocked): string {
  const hosts = byHost(blocked);
  const named = hosts.slice(0, HOSTS_NAMED).map(([host, entries]) => `${escapeControls(host)} (${waysWords(entries)})`);
  const more = hosts.length > HOSTS_NAMED ? `, and ${hosts.length - HOSTS_NAMED} more` : "";
  const count = hosts.length === 1 ? "1 host that was" : `${hosts.length} hosts that were`;
  return `${count} blocked: ${named.join(", ")}${more}`;
}
