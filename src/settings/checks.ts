import { isAbsolute, posix } from "node:path";
import { SANDBOX_MODES, type SandboxMode } from "../containment/sandbox.js";
import { UsageError } from "../lib/errors.js";
import type { AllowRule } from "../egress/allow-rules.js";
import { parseAllowNet } from "../egress/allow-net.js";
import { EGRESS_BLOCKED_POLICIES, type EgressBlockedPolicy } from "../egress/egress-policy.js";
import { escapeControls } from "../vocabulary/display.js";
import { globToRegExp } from "../patch/rules/glob.js";
import { isValidEnvName } from "../process/env.js";
import { MAX_MEMORY_MIB, MAX_PROCESSES, MAX_TIMEOUT_SECONDS, PATH_MAX, checkArgument } from "../vocabulary/input-limits.js";
import { isSafeRunId } from "../run-dir/run-dir.js";
import { repoPath } from "../verify/command-words.js";
import { TEST_EDIT_POLICIES, type TestEditPolicy } from "../verify/test-edits.js";
import { type CheckName, MAX_SIZE_MIB } from "./setting.js";

// Each setting's own check, by name (a row's `check`): the value in the library's unit, and the words that name it in
// a message (its flag, or what the row says); returns the value the run uses. A bad value is a UsageError.

/** The most attempts one run may have: each is a full agent turn and verification. */
export const MAX_ATTEMPTS = 20;

export type WorkspaceModeOption = "auto" | "overlay" | "copy";
export const WORKSPACE_MODES: readonly WorkspaceModeOption[] = ["auto", "overlay", "copy"];

const MIB = 1024 * 1024;

function whole(name: string, value: number, most: number, unit: [number, string] = [1, ""]): number {
  if (!Number.isInteger(value) || value <= 0) throw new UsageError("bad_number", `${name} must be a positive whole number`);
  // A cgroup file holds an integer: 1e30 would be written as "1e+30", refused, and the cap not enforced.
  if (value > most * unit[0]) throw new UsageError("bad_number", `${name} must be at most ${most}${unit[1]}`);
  return value;
}

/** `--sandbox MODE`, checked the one way for run, batch and worker (a bad mode is a usage error before anything runs). */
export function checkSandboxMode(mode: string): SandboxMode {
  if (!(SANDBOX_MODES as readonly string[]).includes(mode))
    throw new UsageError("bad_sandbox", `--sandbox must be auto, bwrap or none, not '${escapeControls(mode.slice(0, 100))}'`);
  return mode as SandboxMode;
}

/** `--env NAME`s, checked the one way for run, batch and worker. */
export function checkEnvNames(names: readonly string[]): readonly string[] {
  for (const name of names)
    if (!isValidEnvName(name))
      throw new UsageError("bad_env_name", `--env takes a variable name, not '${escapeControls(name.slice(0, 100))}'`);
  return names;
}

/**
 * A `--junit` path: relative to the verification checkout and inside it (no absolute path, no `..` that climbs
 * out, no NUL). Returned normalised (`a/./b.xml` is `a/b.xml`).
 */
function checkJunitPath(what: string, path: string): string {
  const bad = (why: string) =>
    new UsageError("bad_junit_path", `${what} '${escapeControls(path.slice(0, 200))}${path.length > 200 ? "…" : ""}' ${why}`);
  if (path.includes("\0")) throw bad("holds a NUL byte");
  if (Buffer.byteLength(path) >= PATH_MAX) throw bad(`is ${Buffer.byteLength(path)} bytes; a path is under ${PATH_MAX}`);
  if (isAbsolute(path)) throw bad("must be a path relative to the checkout, not an absolute one");
  const normal = posix.normalize(path).replace(/\/+$/, "");
  if (normal === "" || normal === "." || normal === ".." || normal.startsWith("../")) throw bad("must name a file inside the checkout");
  return normal;
}

/** An `--allow-config` path: a file of the repository, from its top (`./.npmrc` is `.npmrc`), never a glob. */
function allowedConfigPath(path: string): string {
  const normal = repoPath("", path);
  if (normal === null || /[*?[\]{}]/u.test(path))
    throw new UsageError("bad_allow_config", `--allow-config '${path}' must name one file of the repository, from its top (no glob)`);
  return normal;
}

export const CHECKS = {
  /** One string handed to a process as one argument (a model name, a path, a command). */
  argument: (value: string, name: string): string => {
    checkArgument(name, value);
    return value;
  },
  arguments: (value: readonly string[], name: string): readonly string[] => {
    for (const command of value) checkArgument(name, command);
    return value;
  },
  globs: (value: readonly string[], name: string): readonly string[] => {
    for (const pattern of value) {
      try {
        globToRegExp(pattern);
      } catch {
        throw new UsageError("bad_glob", `${name} '${pattern}' is not a valid pattern`);
      }
    }
    return value;
  },
  envNames: (value: readonly string[]): readonly string[] => checkEnvNames(value),
  runId: (value: string): string => {
    if (!isSafeRunId(value))
      throw new UsageError("bad_run_id", `--run-id '${value}' must be one path segment of letters, digits, '.', '_' or '-'`);
    return value;
  },
  junitPaths: (value: readonly string[], name: string): readonly string[] => value.map((path) => checkJunitPath(name, path)),
  configPaths: (value: readonly string[]): readonly string[] => value.map(allowedConfigPath),
  testEdits: (value: string, name: string): TestEditPolicy => {
    if (!(TEST_EDIT_POLICIES as readonly string[]).includes(value))
      throw new UsageError("bad_test_edits", `${name} must be base, reject or allow, not '${value}'`);
    return value as TestEditPolicy;
  },
  workspaceMode: (value: string): WorkspaceModeOption => {
    if ((WORKSPACE_MODES as readonly string[]).includes(value)) return value as WorkspaceModeOption;
    throw new UsageError("bad_workspace_mode", `--workspace-mode '${escapeControls(value.slice(0, 40))}' must be auto, overlay or copy`);
  },
  sandbox: (value: string): SandboxMode => checkSandboxMode(value),
  allowNet: (value: readonly string[]): readonly AllowRule[] => value.flatMap((entry) => parseAllowNet(entry)),
  egressBlocked: (value: string, name: string): EgressBlockedPolicy => {
    if ((EGRESS_BLOCKED_POLICIES as readonly string[]).includes(value)) return value as EgressBlockedPolicy;
    throw new UsageError("bad_egress_blocked", `${name} must be warn or fail, not '${escapeControls(value.slice(0, 40))}'`);
  },
  /** A time limit in milliseconds: positive, and within what Node's timers hold. */
  timeout: (value: number, name: string): number => {
    if (!Number.isFinite(value) || value <= 0) throw new UsageError("bad_number", `${name} must be a positive number`);
    if (value > MAX_TIMEOUT_SECONDS * 1000)
      throw new UsageError("bad_number", `${name} must be at most ${MAX_TIMEOUT_SECONDS} seconds (24 days)`);
    return value;
  },
  attempts: (value: number, name: string): number => whole(name, value, MAX_ATTEMPTS),
  processes: (value: number, name: string): number => whole(name, value, MAX_PROCESSES),
  memory: (value: number, name: string): number => whole(name, value, MAX_MEMORY_MIB, [MIB, " MiB"]),
  count: (value: number, name: string): number => whole(name, value, Number.MAX_SAFE_INTEGER),
  size: (value: number, name: string): number =>
    whole(name, value, MAX_SIZE_MIB, [MIB, " MiB: handoff holds a changed file and the patch in memory"]),
} as const satisfies Record<CheckName, (value: never, name: string) => unknown>;
