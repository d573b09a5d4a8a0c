import type { WarningRule } from "../patch/rules/findings.js";
import type { RunResult } from "../verdict/result.js";

/**
 * How much a warning matters to a reviewer, decided here and nowhere else (docs/report.md#warnings): `review` is a
 * change or an event to look at before merging, `know` is worth knowing, `routine` is what every run with a setup
 * or tests says (a setup's `node_modules/`, the tests' `__pycache__/`), folded away in the markdown report so the
 * rest is read.
 */
export type WarningWeight = "review" | "know" | "routine";

const WEIGHT: Readonly<Record<WarningRule, WarningWeight>> = {
  ci_config: "review",
  agent_instructions: "review",
  package_manifest: "review",
  verification_config: "review",
  test_file_changed: "review",
  executable_bit: "review",
  environment_modified: "review",
  filtered_source_unverified: "review",
  no_sandbox: "review",
  blocked_write: "review",
  leftover_process_alive: "review",
  backend_outside_sandbox: "review",
  git_config_file: "know",
  build_lock_broken: "know",
  windows_unsafe_name: "know",
  ignored_files_added: "know",
  tool_caches_left_out: "routine",
  dirty_source_not_cloned: "know",
  setup_changed_tree: "know",
  cli_login_replaced: "know",
  resource_cap_hit: "know",
  leftover_process_killed: "know",
  hidden_path_named: "know",
  egress_blocked: "review",
  network_unfiltered: "know",
};

/** Directories a setup makes (installs and builds), at any depth: ignored files under them only say that setup ran. */
const SETUP_OUTPUT =
  /(?:^|\/)(?:node_modules|\.venv|venv|__pycache__|\.pytest_cache|\.tox|target|dist|build|out|\.next|\.cache|vendor|\.gradle|coverage)\//;

type Warning = RunResult["policy"]["warnings"][number];

export function warningWeight(warning: Warning, r: RunResult): WarningWeight {
  const weight = (WEIGHT as Readonly<Record<string, WarningWeight>>)[warning.rule] ?? "know";
  return warning.rule === "ignored_files_added" && setupRan(r) && onlySetupOutput(warning.message) ? "routine" : weight;
}

function setupRan(r: RunResult): boolean {
  return (
    r.verification.commands.some((c) => c.phase === "setup") || r.environment?.source === "reused" || r.environment?.source === "built"
  );
}

/** The ignored paths the message lists (src/patch/extract.ts: `…not in the patch: a/, b/, …`) all lie in a setup's output. */
function onlySetupOutput(message: string): boolean {
  const listed = message
    .slice(message.indexOf(": ") + 2)
    .split(", ")
    .filter((path) => path !== "…" && path !== "");
  return listed.length > 0 && listed.every((path) => SETUP_OUTPUT.test(path.endsWith("/") ? path : `${path}/`));
}

/** The run's warnings by weight, each group in result.json's order. */
export function groupWarnings(r: RunResult): Record<WarningWeight, Warning[]> {
  const groups: Record<WarningWeight, Warning[]> = { review: [], know: [], routine: [] };
  for (const warning of r.policy.warnings) groups[warningWeight(warning, r)].push(warning);
  return groups;
}
