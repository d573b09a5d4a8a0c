import { assertNever } from "../lib/assert-never.js";
import type { ContainmentEvent, ContainmentSummary } from "./containment.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import { escapeControls } from "../vocabulary/display.js";
import type { SurvivorReason } from "./survivors.js";

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
  for (const event of summary.events) findings.push(findingFor(event));
  return findings;
}

const FOUND_BY: Readonly<Record<SurvivorReason, string>> = {
  marker: "the run's marker",
  holds_workspace: "its hold on the workspace",
  in_cgroup: "its cgroup",
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
    default:
      return assertNever(event);
  }
}
