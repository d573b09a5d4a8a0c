/** A rule a changed path or the workspace broke (violation) or a thing a reviewer should look at (warning). */
export interface PolicyFinding {
  /** The path concerned, printable (non-UTF-8 bytes shown as \xNN); "" for the workspace as a whole. */
  readonly path: string;
  readonly rule: PolicyRule;
  readonly message: string;
}

/** Rules that reject a patch. The first violation's rule becomes the run's `detail`. */
export const VIOLATION_RULES = [
  "git_metadata_tampered",
  "symlink",
  "binary",
  "rename",
  "copy",
  "submodule",
  "nested_repository",
  "special_file",
  "hard_link",
  "staged_bytes_differ",
  "unsafe_path",
  "git_metadata_path",
  "invisible_character",
  "control_character",
  "non_utf8_name",
  "case_collision",
  "denied_path",
  "not_allowed_path",
  "file_too_large",
  "too_many_files",
  "patch_too_large",
  "workspace_too_large",
  "workspace_too_deep",
  "unreadable_path",
  "secret",
  // `--test-edits reject`: the patch changed a file that decides what verification runs (docs/verification.md).
  "verification_input_changed",
  // A Rust test edit outside `#[cfg(test)]` modules, which the run held to the base cannot put back alone (rust-tests-held.ts).
  "test_edit_not_isolated",
] as const;
export type ViolationRule = (typeof VIOLATION_RULES)[number];

/** Rules that only warn: recorded in result.json and the report, never rejecting. */
export type WarningRule =
  | "ci_config"
  | "agent_instructions"
  | "package_manifest"
  | "verification_config"
  | "test_file_changed"
  | "git_config_file"
  | "executable_bit"
  | "windows_unsafe_name"
  | "ignored_files_added"
  /** Untracked bytecode and test-runner caches (`__pycache__/`, `.pytest_cache/`…) the workspace holds: never part of a patch (tool-caches.ts). */
  | "tool_caches_left_out"
  | "dirty_source_not_cloned"
  /** A setup command changed tracked files or left files .gitignore does not cover: put back or left out, never the agent's. */
  | "setup_changed_tree"
  /** The base environment changed after it was built: verification did not use it (docs/environment.md). */
  | "environment_modified"
  /** A build lock of the base environment named no live handoff build of it, or one past its setup's timeout: broken. */
  | "build_lock_broken"
  /** Tracked files under one of the source's own filters looked modified with the filter off (source-filters.ts). */
  | "filtered_source_unverified"
  /** The agent CLI replaced a linked login file (e.g. refreshed a token): the new one went away with its private home. */
  | "cli_login_replaced"
  /** Containment (containment/findings.ts): no sandbox, and what the sandbox stopped or could not stop. */
  | "no_sandbox"
  | "blocked_write"
  | "resource_cap_hit"
  | "leftover_process_killed"
  | "leftover_process_alive"
  | "backend_outside_sandbox"
  /** The agent's stderr named a path the sandbox hid (containment/hidden-paths.ts): what it read or wrote there was not real. */
  | "hidden_path_named"
  /** An agent or setup process tried a host the egress allowlist does not name (containment/network-access.ts). */
  | "egress_blocked"
  /** `--allow-net '*'`: the agent and setup had the host's network, unfiltered. */
  | "network_unfiltered";

export type PolicyRule = ViolationRule | WarningRule;
