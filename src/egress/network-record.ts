import type { EgressLog } from "./egress-log.js";
import type { EgressSettings, NetworkAccess } from "./egress-policy.js";
import type { HostTally, NetworkRecord } from "./egress-record.js";
import type { KeyRecord, LoginRecord } from "./key-route.js";
import { ruleWords } from "./rule-words.js";

export interface NetworkFacts {
  /** What the agent got (setup gets the same kind). */
  readonly access: NetworkAccess;
  readonly sandboxed: boolean;
  readonly rules: EgressSettings;
  /** A backend started its agent without handoff's sandbox: nothing held its network. */
  readonly backendOutside: boolean;
  readonly log: EgressLog;
  readonly keys: readonly KeyRecord[];
  readonly logins: readonly LoginRecord[];
  /** The agent is a CLI with a model route of its own (not the `command` backend): its start-up calls can be told apart. */
  readonly agentHasModel: boolean;
  /** Whether the sandbox's attempts around the proxy could be watched (null without a sandbox). */
  readonly watch: { readonly ok: true } | { readonly ok: false; readonly reason: string } | null;
}

/** result.json `network.aroundProxy`: whether what went around the proxy is in the record, or why not. */
function aroundProxy(facts: NetworkFacts): NetworkRecord["aroundProxy"] {
  if (!facts.sandboxed || facts.access === "host")
    return { recorded: false, detail: "nothing went around a proxy: the network was not filtered" };
  if (facts.watch?.ok)
    return {
      recorded: true,
      detail: "raw TCP connects, UDP datagrams and DNS queries were refused by the sandbox's empty network and recorded",
    };
  return {
    recorded: false,
    detail: `raw TCP connects, UDP datagrams and DNS queries were refused by the sandbox's empty network but not recorded: ${facts.watch?.reason ?? "no packet watch"}`,
  };
}

/** result.json `network`, from what the run was given and what its gates saw. */
export function networkRecord(facts: NetworkFacts): NetworkRecord {
  const logged = facts.log.tallies();
  // Without a model, nothing the agent does waits for an answer: no attempt is the CLI's own start-up.
  const early = (tally: HostTally): HostTally => (facts.agentHasModel ? tally : { ...tally, beforeModelAnswer: false });
  const tallies = { ...logged, allowed: logged.allowed.map(early), blocked: logged.blocked.map(early) };
  const rules = [...new Set([...facts.rules.rules, ...facts.rules.setupRules].map(ruleWords))];
  const base = {
    rules,
    allowed: tallies.allowed,
    blocked: tallies.blocked,
    attempts: tallies.attempts,
    attemptsLeftOut: tallies.attemptsLeftOut,
    keys: facts.keys,
    logins: facts.logins,
    aroundProxy: aroundProxy(facts),
  };
  if (!facts.sandboxed)
    return { ...base, mode: "open", enforced: false, reason: "no sandbox: the agent and the setup commands had this machine's network" };
  if (facts.access === "host")
    return {
      ...base,
      mode: "open",
      enforced: true,
      reason: "--allow-net '*': the agent and the setup commands had this machine's network, unfiltered",
    };
  if (facts.backendOutside)
    return {
      ...base,
      mode: "filtered",
      enforced: false,
      reason: "the backend started its agent outside handoff's sandbox: nothing held its network",
    };
  return { ...base, mode: "filtered", enforced: true, reason: null };
}
