/**
 * What a run's contained processes tried to reach, for result.json `network` and the reports. Bounded: one tally
 * per host (at most HOSTS_KEPT of each kind) and the first ATTEMPTS_KEPT attempts in full.
 * CONTRACT (filled in by the proxy work): the types are fixed; the tally builder is to be implemented.
 */
import type { BlockReason } from "./allow-rules.js";
import type { KeyRecord, LoginRecord } from "./key-route.js";

/** Who made the connection: the agent, or a setup command (its command line). */
export type EgressRole = "agent" | "setup";

/**
 * How the connection came: an HTTP CONNECT tunnel, a plain HTTP request by absolute URI, a fixed tunnel (a model
 * endpoint on a local address), a model request handoff's forwarder sent on with the real key; or around the proxy,
 * seen by the packet watch: a TCP connect, a UDP datagram, a DNS query (src/egress/raw-attempts.ts).
 */
export type EgressVia = "connect" | "http" | "tunnel" | "model" | RawVia;

/** How a connection around the proxy came: a TCP connect, a UDP datagram, or a DNS query (its host is the name asked for). */
export type RawVia = "tcp" | "udp" | "dns";

export interface EgressAttempt {
  /** ISO time the attempt arrived. */
  readonly at: string;
  readonly role: EgressRole;
  /** The backend's name for the agent, the command for setup. */
  readonly label: string;
  readonly host: string;
  readonly port: number;
  readonly via: EgressVia;
  readonly allowed: boolean;
  /** The rule that allowed it, in words (`--allow-net *.example.com`, `npm preset (from "npm ci")`, `claude's model API`); null when blocked. */
  readonly rule: string | null;
  readonly reason: BlockReason | null;
  readonly bytesUp: number;
  readonly bytesDown: number;
}

/** One host:port, all its attempts added up. */
export interface HostTally {
  readonly host: string;
  readonly port: number;
  /** How it was tried: through the proxy (`connect`, `http`, …) or around it (`tcp`, `udp`, `dns`), kept apart. */
  readonly via: EgressVia;
  /** Every role and label that tried it (bounded to a few). */
  readonly roles: readonly EgressRole[];
  readonly labels: readonly string[];
  readonly rule: string | null;
  readonly reason: BlockReason | null;
  readonly attempts: number;
  readonly bytesUp: number;
  readonly bytesDown: number;
  /**
   * Every attempt came from the agent before any allowed connection of its had an answer, that is before its model
   * first answered: its CLI's own start-up calls (update checks, model catalogs) or whatever it ran on its own, not
   * anything its model asked for. Always false for a `command` agent (it has no model handoff knows of) and for setup.
   */
  readonly beforeModelAnswer: boolean;
}

/** `result.json` `network`. */
export interface NetworkRecord {
  /**
   * `filtered`: the agent and setup had an empty network and reached out only through handoff's proxy;
   * `open`: they had the host's network (`--allow-net '*'`, or no sandbox to enforce it).
   */
  readonly mode: "filtered" | "open";
  /** False when nothing could enforce the mode (no sandbox, or a backend that ran outside it). */
  readonly enforced: boolean;
  /** Why the network was open or not enforced, in words; null when filtered and enforced. */
  readonly reason: string | null;
  /** The rules in force, as words (`registry.npmjs.org (npm preset, from "npm ci")`). */
  readonly rules: readonly string[];
  readonly allowed: readonly HostTally[];
  readonly blocked: readonly HostTally[];
  /** The first attempts, in full, in order. */
  readonly attempts: readonly EgressAttempt[];
  /** How many attempts were left out of `attempts` (they are still counted in the tallies). */
  readonly attemptsLeftOut: number;
  /** Each model key the agent was given with `--env`: kept out of the sandbox, or why not. */
  readonly keys: readonly KeyRecord[];
  /** Each login file of the CLI's home the agent could read (and write, for its refresh). */
  readonly logins: readonly LoginRecord[];
  /** Whether the attempts around the proxy (raw TCP, UDP, DNS) were recorded, and if not why. */
  readonly aroundProxy: { readonly recorded: boolean; readonly detail: string };
}

export const ATTEMPTS_KEPT = 200;
export const HOSTS_KEPT = 100;
