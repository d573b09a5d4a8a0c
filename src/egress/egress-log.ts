import type { BlockReason } from "./allow-rules.js";
import {
  ATTEMPTS_KEPT,
  type EgressAttempt,
  type EgressRole,
  type EgressVia,
  HOSTS_KEPT,
  type HostTally,
  type RawVia,
} from "./egress-record.js";

/** The ways around the proxy (the packet watch's). */
const RAW_VIAS: ReadonlySet<EgressVia> = new Set<RawVia>(["tcp", "udp", "dns"]);

/** Roles and labels kept per host: who tried it, not every command line. */
const LABELS_KEPT = 5;

/** One connection, counted as its bytes flow; `done` when it closed. */
export interface OpenAttempt {
  addUp(bytes: number): void;
  addDown(bytes: number): void;
}

interface MutableTally {
  host: string;
  port: number;
  via: EgressVia;
  roles: EgressRole[];
  labels: string[];
  rule: string | null;
  reason: BlockReason | null;
  attempts: number;
  bytesUp: number;
  bytesDown: number;
  beforeModelAnswer: boolean;
}

type MutableAttempt = { -readonly [K in keyof EgressAttempt]: EgressAttempt[K] };

/**
 * Every connection the run's agent and setup processes tried through the egress proxy, bounded whatever they do: one
 * tally per host and port (HOSTS_KEPT allowed and HOSTS_KEPT blocked; the rest counted only), the first ATTEMPTS_KEPT
 * attempts in full.
 */
export class EgressLog {
  readonly #tallies = { allowed: new Map<string, MutableTally>(), blocked: new Map<string, MutableTally>() };
  readonly #attempts: MutableAttempt[] = [];
  #attemptsLeftOut = 0;
  #hostsLeftOut = 0;
  /** When an allowed connection of the agent's first got bytes back: its model answered (or a host it was allowed). */
  #agentAnsweredAt: number | null = null;

  /**
   * Records one connection; the returned handle adds its bytes as they flow. `at` (milliseconds) is when it was tried,
   * for an attempt recorded afterwards (the packet watch's, read when the process ended); now by default.
   */
  record(
    entry: {
      readonly role: EgressRole;
      readonly label: string;
      readonly host: string;
      readonly port: number;
      readonly via: EgressVia;
      readonly rule: string | null;
      readonly reason: BlockReason | null;
    },
    at: number = Date.now(),
  ): OpenAttempt {
    const allowed = entry.reason === null;
    const early = entry.role === "agent" && (this.#agentAnsweredAt === null || at < this.#agentAnsweredAt);
    const tallies = allowed ? this.#tallies.allowed : this.#tallies.blocked;
    // What went around the proxy is kept apart from what the proxy saw of the same host and port.
    const key = `${entry.host}\0${entry.port}\0${RAW_VIAS.has(entry.via) ? entry.via : "proxy"}`;
    let tally = tallies.get(key);
    if (!tally && tallies.size < HOSTS_KEPT) {
      tally = {
        host: entry.host,
        port: entry.port,
        via: entry.via,
        roles: [],
        labels: [],
        rule: entry.rule,
        reason: entry.reason,
        attempts: 0,
        bytesUp: 0,
        bytesDown: 0,
        beforeModelAnswer: early,
      };
      tallies.set(key, tally);
    } else if (!tally) this.#hostsLeftOut++;
    if (tally) {
      tally.attempts++;
      tally.beforeModelAnswer &&= early;
      if (!tally.roles.includes(entry.role)) tally.roles.push(entry.role);
      if (!tally.labels.includes(entry.label) && tally.labels.length < LABELS_KEPT) tally.labels.push(entry.label);
    }
    let attempt: MutableAttempt | null = null;
    if (this.#attempts.length < ATTEMPTS_KEPT) {
      attempt = { at: new Date(at).toISOString(), ...entry, allowed, bytesUp: 0, bytesDown: 0 };
      this.#attempts.push(attempt);
    } else this.#attemptsLeftOut++;
    return {
      addUp: (bytes) => {
        if (tally) tally.bytesUp += bytes;
        if (attempt) attempt.bytesUp += bytes;
      },
      addDown: (bytes) => {
        if (allowed && entry.role === "agent" && bytes > 0) this.#agentAnsweredAt ??= Date.now();
        if (tally) tally.bytesDown += bytes;
        if (attempt) attempt.bytesDown += bytes;
      },
    };
  }

  /** What result.json `network` holds of the attempts: copies, so later bytes do not change a written record. */
  tallies(): { allowed: HostTally[]; blocked: HostTally[]; attempts: EgressAttempt[]; attemptsLeftOut: number; hostsLeftOut: number } {
    const copy = (t: MutableTally): HostTally => ({ ...t, roles: [...t.roles], labels: [...t.labels] });
    return {
      allowed: [...this.#tallies.allowed.values()].map(copy),
      blocked: [...this.#tallies.blocked.values()].map(copy),
      // In the order they were tried: the packet watch's attempts are recorded when their process ended.
      attempts: this.#attempts.map((attempt) => ({ ...attempt })).sort((a, b) => a.at.localeCompare(b.at)),
      attemptsLeftOut: this.#attemptsLeftOut,
      hostsLeftOut: this.#hostsLeftOut,
    };
  }
}
