import { assertNever } from "../lib/assert-never.js";
import type { ContainmentEvent, ContainmentSummary } from "./containment.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import { escapeControls } from "../vocabulary/display.js";
import type { SurvivorReason } from "./survivors.js";
import type { BlockReason } from "../egress/allow-rules.js";

/** What a reviewer must know about containment, as warnings in result.json and the report. */
export function containmentFindings(summary: ContainmentSummary): PolicyFinding[] {
  const findings: PolicyFinding[] = [];
  if (summary.sandbox === "none") {
    const why =
      summary.requested === "none"
        ? "--sandbox none was asked for"
        : `bubblewrap is not usable here: ${summary.reason ?? "unknown reason"}`;
    findings.push({
      path: "",
      rule: "no_sandbox",
      message: `the agent and the commands ran without a sandbox (${why}); ${summary.uncontained.join("; ")}`,
    });
  }
  if (summary.sandbox === "bwrap" && summary.network.agent === "host")
    findings.push({
      path: "",
      rule: "network_unfiltered",
      message: "--allow-net '*': the agent and the setup commands had this machine's network, unfiltered and unrecorded",
    });
  for (const event of summary.events) findings.push(findingFor(event));
  return findings;
}

const FOUND_BY: Readonly<Record<SurvivorReason, string>> = {
  marker: "the run's marker",
  holds_workspace: "its hold on the workspace",
  in_cgroup: "its cgroup",
};

const BLOCKED_BECAUSE: Readonly<Record<BlockReason, string>> = {
  not_allowed: "no --allow-net rule names it",
  private_address: "it is (or resolved to) a local or private address that no rule names exactly",
  sni_mismatch: "its TLS handshake named another host than the one it asked the proxy for",
  unresolved: "the name did not resolve",
  bad_request: "the proxy could not read the request",
  outside_proxy: "it went around handoff's proxy, and the sandbox's network has no other way out",
  dns_lookup: "a DNS lookup: the sandbox has no name server (the proxy resolves the hosts the allowlist names)",
};

function findingFor(event: ContainmentEvent): PolicyFinding {
  const who = event.role === "agent" ? `the agent (${event.label})` : `the ${event.role} command \`${event.label}\``;
  switch (event.kind) {
    case "blocked_write":
      return {
        path: escapeControls(event.path),
        rule: "blocked_write",
        message: `${who} wrote where the source repository appeared to be; the sandbox sent it to a throwaway directory and the source is untouched`,
      };
    case "limit_hit":
      return { path: "", rule: "resource_cap_hit", message: `${who} ran into the ${event.limit === "memory" ? "memory" : "process"} cap` };
    case "leftover_killed":
      return {
        path: "",
        rule: "leftover_process_killed",
        message: `${who} left pid ${event.pid} (${event.command}) running after it ended; found by ${FOUND_BY[event.found]} and killed`,
      };
    case "leftover_alive":
      return {
        path: "",
        rule: "leftover_process_alive",
        message: `${who} left pid ${event.pid} (${event.command}) running and it could not be killed`,
      };
    case "unsandboxed_backend":
      return {
        path: "",
        rule: "backend_outside_sandbox",
        message: `the ${event.label} backend started its process without handoff's sandbox`,
      };
    case "hidden_path_named":
      return {
        path: escapeControls(event.path),
        rule: "hidden_path_named",
        message: `${who} named a path the sandbox hid from it (the user's home, the source, handoff's own directories or /tmp): it saw an empty place there, not what is on this machine`,
      };
    case "egress_blocked":
      return {
        path: "",
        rule: "egress_blocked",
        message: `${who} tried to reach ${escapeControls(event.host)}:${event.port} (${event.attempts} time${event.attempts === 1 ? "" : "s"}), blocked: ${BLOCKED_BECAUSE[event.reason]}`,
      };
    default:
      return assertNever(event);
  }
}
