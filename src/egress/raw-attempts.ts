import type { EgressLog } from "./egress-log.js";
import type { EgressRole, RawVia } from "./egress-record.js";
import { type HostListeners, isLoopback } from "./host-listeners.js";

/**
 * The connections a sandboxed process tried around handoff's proxy, read from the packet watch on the sandbox's
 * loopback (src/containment/network-watch.ts). The sandbox's network answers every address itself, so each such
 * attempt leaves one of three traces there: the refusal of a TCP connect (a reset from the address it tried), the
 * refusal of a UDP datagram (an ICMP "port unreachable" naming the address), or the DNS query itself.
 */

export interface RawAttempt {
  /** Milliseconds since the epoch, from the packet's own timestamp. */
  readonly at: number;
  readonly via: RawVia;
  /** The address tried, or for a DNS query the name it asked for (lowercase, no trailing dot). */
  readonly host: string;
  readonly port: number;
  /** The DNS server a query went to (null for TCP and UDP). */
  readonly server: string | null;
}

/** `1796528874.039985 IP 127.0.0.2.4444 > 127.0.0.1.46332: Flags [R.], seq 0, …`: the reset a refused connect gets, from the address it tried. */
const RESET = /^(\d+\.\d+) IP6? (\S+) > \S+: Flags \[R\.\], seq 0,/;
/** `… ICMP 198.51.100.1 udp port 9999 unreachable, …` and `… ICMP6, destination unreachable, unreachable port, ::1 udp port 9998, …`. */
const UDP_REFUSED =
  /^(\d+\.\d+) IP6? \S+ > \S+: ICMP6?,? (?:destination unreachable, unreachable port, )?(\S+) udp port (\d+)(?: unreachable)?,/;
/** `… IP 10.0.0.2.43519 > 10.0.0.2.53: 37427+ A? evil.example. (30)`: a query; anything else to port 53 is counted by its address. */
const TO_PORT_53 = /^(\d+\.\d+) IP6? \S+ > (\S+)\.53: (.*)$/;
const QUESTION = /^\d+[+%*-]*(?: \[[^\]]*\])? [A-Z0-9]+\? (\S+?)\.? \(/;

/** `2001:db8::1.443` → [`2001:db8::1`, 443]: tcpdump puts the port after the last dot. */
function addressAndPort(text: string): [string, number] | null {
  const dot = text.lastIndexOf(".");
  if (dot <= 0) return null;
  const port = Number(text.slice(dot + 1));
  return Number.isInteger(port) && port >= 0 && port <= 65535 ? [text.slice(0, dot), port] : null;
}

const millis = (seconds: string): number => Math.round(Number(seconds) * 1000);

/** One line of the watch's output, or null for a line that is not one of the three traces (or a refusal a DNS query already accounts for). */
export function parsePacketLine(line: string): RawAttempt | null {
  const reset = RESET.exec(line);
  if (reset) {
    const tried = addressAndPort(reset[2]!);
    return tried ? { at: millis(reset[1]!), via: "tcp", host: tried[0], port: tried[1], server: null } : null;
  }
  if (/^\S+ IP6? \S+ > \S+: ICMP/.test(line)) {
    const refused = UDP_REFUSED.exec(line);
    // A refused DNS query was already counted by its question.
    if (!refused || refused[3] === "53") return null;
    return { at: millis(refused[1]!), via: "udp", host: refused[2]!, port: Number(refused[3]), server: null };
  }
  const query = TO_PORT_53.exec(line);
  if (query) {
    // A name is the agent's own text: only a host name's characters are taken as one (never markdown or controls).
    const name = QUESTION.exec(query[3]!)?.[1]?.match(/^[A-Za-z0-9_.-]{1,253}$/)?.[0];
    const server = query[2]!;
    if (name) return { at: millis(query[1]!), via: "dns", host: name.toLowerCase(), port: 53, server };
    return { at: millis(query[1]!), via: "udp", host: server, port: 53, server: null };
  }
  return null;
}

/** Every attempt in the watch's output, split on `\n` only; lines that are not attempts are left out. */
export function parsePacketLines(text: string): RawAttempt[] {
  const attempts: RawAttempt[] = [];
  for (const line of text.split("\n")) {
    const attempt = parsePacketLine(line);
    if (attempt) attempts.push(attempt);
  }
  return attempts;
}

/** One host, port and way tried around the proxy by one process, with how often: for its `egress_blocked` event. */
export interface AroundProxyHost {
  readonly host: string;
  readonly port: number;
  readonly reason: "outside_proxy" | "dns_lookup";
  attempts: number;
}

/** Hosts kept per process for its events; result.json's tallies have their own bound. */
const HOSTS_PER_PROCESS = 100;

/**
 * Puts what one process tried around the proxy into the run's egress log, each as blocked, and returns it by host for
 * the process's events. A refused connect to a loopback port that no service of this machine holds is left out:
 * nothing there was reached for (a test probing a closed port of its own, `localhost` tried on ::1 first).
 */
export function recordAroundProxy(
  attempts: readonly RawAttempt[],
  who: { readonly role: EgressRole; readonly label: string },
  log: EgressLog,
  listeners: () => HostListeners,
): AroundProxyHost[] {
  const hosts = new Map<string, AroundProxyHost>();
  let host: HostListeners | null = null;
  for (const attempt of attempts) {
    if (attempt.via !== "dns" && isLoopback(attempt.host)) {
      host ??= listeners();
      if (!host.has(attempt.via, attempt.host, attempt.port)) continue;
    }
    const reason = attempt.via === "dns" ? "dns_lookup" : "outside_proxy";
    log.record({ ...who, host: attempt.host, port: attempt.port, via: attempt.via, rule: null, reason }, attempt.at);
    const key = `${attempt.host}\0${attempt.port}\0${attempt.via}`;
    const seen = hosts.get(key);
    if (seen) seen.attempts++;
    else if (hosts.size < HOSTS_PER_PROCESS) hosts.set(key, { host: attempt.host, port: attempt.port, reason, attempts: 1 });
  }
  return [...hosts.values()];
}
