import { isIP } from "node:net";
import type { AllowRule } from "./allow-rules.js";

/** One host an agent CLI needs for its model, and why, in words for the records (`its model API`, `ANTHROPIC_BASE_URL`). */
export interface ModelEndpoint {
  /** An `http://` or `https://` base URL (a gateway, a local model server) or a bare host name. */
  readonly url: string;
  readonly why: string;
}

/** A fixed way out for one local address: the sandbox's own 127.0.0.1:`listen` leads to `host`:`port` outside. */
export interface Tunnel {
  readonly listen: number;
  readonly host: string;
  readonly port: number;
  readonly rule: AllowRule;
}

/**
 * The rules and tunnels a backend's endpoints give its agent: each host exactly (an IP literal or a name that resolves
 * to a private address is still reachable, since the user's config names it), and a tunnel for each one on this
 * machine's loopback, which the sandbox's own loopback would otherwise shadow (the CLI connects straight to it).
 */
export function endpointAccess(backend: string, endpoints: readonly ModelEndpoint[]): { rules: AllowRule[]; tunnels: Tunnel[] } {
  const rules: AllowRule[] = [];
  const tunnels: Tunnel[] = [];
  for (const endpoint of endpoints) {
    const place = placeOf(endpoint.url);
    if (!place) continue;
    const rule: AllowRule = {
      kind: "host",
      host: place.host,
      port: place.port,
      preset: null,
      source: { kind: "backend", name: backend, why: endpoint.why },
    };
    rules.push(rule);
    if (place.port !== null && isLoopbackName(place.host) && !tunnels.some((tunnel) => tunnel.listen === place.port))
      tunnels.push({ listen: place.port, host: place.host, port: place.port, rule });
  }
  return { rules, tunnels };
}

/** The host (lower case, IPv6 without brackets) and port of a URL, or of a bare host (any port); null when unreadable. */
function placeOf(url: string): { host: string; port: number | null } | null {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    const host = url.trim().toLowerCase().replace(/\.$/, "");
    return /^[a-z0-9.-]+$/.test(host) && host.length > 0 ? { host, port: null } : null;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return null;
  const host = parsed.hostname
    .replace(/^\[|\]$/g, "")
    .toLowerCase()
    .replace(/\.$/, "");
  if (host === "") return null;
  const port = parsed.port !== "" ? Number(parsed.port) : parsed.protocol === "https:" ? 443 : 80;
  return { host, port };
}

function isLoopbackName(host: string): boolean {
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}
