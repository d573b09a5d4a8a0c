import { isIP } from "node:net";
import { assertNever } from "../lib/assert-never.js";
import { addressClass } from "./addresses.js";
import type { AllowRule, HostDecision } from "./allow-rules.js";

/** A host as the rules compare it: lower case, without one trailing dot or IPv6 brackets. */
export function normalHost(host: string): string {
  return host
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "");
}

/**
 * Whether a host may be reached, by name, before any lookup. An IP literal needs a rule that names it exactly (or
 * `*`); a name needs a rule that names it or a domain above it. The first rule that allows wins.
 */
export function matchHost(rules: readonly AllowRule[], host: string, port: number): HostDecision {
  const name = normalHost(host);
  const literal = isIP(name) !== 0;
  for (const rule of rules) {
    if (allows(rule, name, port, literal)) return { allowed: true, rule };
  }
  if (literal) return { allowed: false, reason: addressClass(name) === "public" ? "not_allowed" : "private_address" };
  return { allowed: false, reason: "not_allowed" };
}

function allows(rule: AllowRule, name: string, port: number, literal: boolean): boolean {
  switch (rule.kind) {
    case "any":
      return true;
    case "host":
      return rule.host === name && (rule.port === null || rule.port === port);
    case "suffix":
      return !literal && name.endsWith(`.${rule.suffix}`);
    default:
      return assertNever(rule);
  }
}

/**
 * After the lookup: a name that resolved to a loopback, private, link-local or otherwise non-public address is
 * refused unless the rule that allowed it names this host exactly (`--allow-net my-gateway.corp` may lead to 10.x;
 * `*.example.com` may not lead to 127.0.0.1), or is `*`.
 */
export function checkResolved(rule: AllowRule, host: string, address: string): HostDecision {
  if (addressClass(address) === "public" || rule.kind === "any") return { allowed: true, rule };
  if (rule.kind === "host" && rule.host === normalHost(host)) return { allowed: true, rule };
  return { allowed: false, reason: "private_address" };
}
