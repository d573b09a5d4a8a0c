import type { AllowRule } from "./allow-rules.js";

/**
 * How one contained process reaches the network: not at all (verification), the host's network as it is
 * (`--verify-network`, `--allow-net '*'`, or no sandbox to take it away), or an empty network whose one way out is
 * handoff's egress proxy (the agent and setup, by default).
 */
export type NetworkAccess = "none" | "host" | "filtered";

/** `--egress-blocked`: what a blocked connection does to the verdict. */
export const EGRESS_BLOCKED_POLICIES = ["warn", "fail"] as const;
export type EgressBlockedPolicy = (typeof EGRESS_BLOCKED_POLICIES)[number];

/**
 * A run's egress, decided once before it starts: the rules every agent and setup process gets (`--allow-net`), and the
 * rules only setup gets (the registries its commands need). The backend's own hosts are added per agent process.
 */
export interface EgressSettings {
  readonly rules: readonly AllowRule[];
  readonly setupRules: readonly AllowRule[];
}

/** `--allow-net '*'`: the host network, unfiltered. */
export function isOpen(rules: readonly AllowRule[]): boolean {
  return rules.some((rule) => rule.kind === "any");
}
