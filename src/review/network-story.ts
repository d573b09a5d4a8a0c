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
    const roles = new Set(blocked.flatMap((host) => host.roles));
    const who = roles.has("agent") && roles.has("setup") ? "the agent and setup" : roles.has("setup") ? "a setup command" : "the agent";
    const named = blocked.slice(0, HOSTS_NAMED).map((host) => `${escapeControls(host.host)}:${host.port}`);
    const more = blocked.length > HOSTS_NAMED ? `, and ${blocked.length - HOSTS_NAMED} more` : "";
    const count = blocked.length === 1 ? "1 host that was" : `${blocked.length} hosts that were`;
    return `${who} tried to reach ${count} blocked: ${named.join(", ")}${more} (result.json network.blocked)`;
  }
  if (network.mode === "open") return `the agent had this machine's network: ${escapeControls(network.reason ?? "unfiltered")}`;
  if (!network.enforced) return `the agent's network was not filtered: ${escapeControls(network.reason ?? "unknown")}`;
  return null;
}
