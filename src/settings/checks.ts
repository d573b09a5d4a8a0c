import { isAbsolute, posix } from "node:path";
import { SANDBOX_MODES, type SandboxMode } from "../containment/sandbox.js";
import { type SettingNames, type SettingWords, UsageError } from "../lib/errors.js";
import type { AllowRule } from "../egress/allow-rules.js";
import { parseAllowNet } from "../egress/allow-net.js";
import { EGRESS_BLOCKED_POLICIES, type EgressBlockedPolicy } from "../egress/egress-policy.js";
import { escapeControls } from "../vocabulary/display.js";
import { globToRegExp } from "../patch/rules/glob.js";
import { isValidEnvName } from "../process/env.js";
import { MAX_MEMORY_MIB, MAX_PROCESSES, MAX_TIMEOUT_SECONDS, PATH_MAX, argumentProblem } from "../vocabulary/input-limits.js";
import { isSafeRunId } from "../run-dir/run-dir.js";
import { repoPath } from "../verify/command-words.js";
import { TEST_EDIT_POLICIES, type TestEditPolicy } from "../verify/test-edits.js";
import { type CheckName, MAX_SIZE_MIB } from "./setting.js";

// Each setting's own check, by name (a row's `check`): the value in the library's unit, and how a message names the
// setting (its field in the library, its flag on the command line, or what the row says); returns the value the run
// uses. A bad value is a UsageError.

/** How a message names one setting, on each surface (src/settings/resolve-setting.ts makes it from the row). */
export type SettingName = (names: SettingNames) => string;

/** A setting named by its `RunOptions` field, on each surface by that surface's word for it. */
export const byField =
  (field: string): SettingName =>
  (names) =>
    names.name(field);

/** The words of a message about one setting: its name, then what is wrong. */
const about =
  (name: SettingName, rest: string): SettingWords =>
  (names) =>
    `${name(names)}${rest}`;

/** The most attempts one run may have: each is a full agent turn and verification. */
export const MAX_ATTEMPTS = 20;

export type WorkspaceModeOption = "auto" | "overlay" | "copy";
export const WORKSPACE_MODES: readonly WorkspaceModeOption[] = ["auto", "overlay", "copy"];

const MIB = 1024 * 1024;

function whole(name: SettingName, value: number, most: number, unit: [number, string] = [1, ""]): number {
  if (!Number.isInteger(value) || value <= 0) throw new UsageError("bad_number", about(name, " must be a positive whole number"));
  // A cgroup file holds an integer: 1e30 would be written as "1e+30", refused, and the cap not enforced.
  if (value > most * unit[0]) throw new UsageError("bad_number", about(name, ` must be at most ${most}${unit[1]}`));
  return value;
}

/** `sandbox` (`--sandbox MODE`), checked the one way for run, batch and worker (a bad mode is a usage error before anything runs). */
export function checkSandboxMode(mode: string, name: SettingName = byField("sandbox")): SandboxMode {
  if (!(SANDBOX_MODES as readonly string[]).includes(mode))
    throw new UsageError("bad_sandbox", about(name, ` must be auto, bwrap or none, not '${escapeControls(mode.slice(0, 100))}'`));
  return mode as SandboxMode;
}

/** `env` (`--env NAME`), checked the one way for run, batch and worker. */
export function checkEnvNames(names: readonly string[], name: SettingName = byField("env")): readonly string[] {
  for (const variable of names)
    if (!isValidEnvName(variable))
      throw new UsageError("bad_env_name", about(name, ` takes a variable name, not '${escapeControls(variable.slice(0, 100))}'`));
  return names;
}

/**
 * A `--junit` path: relative to the verification checkout and inside it (no absolute path, no `..` that climbs
 * out, no NUL). Returned normalised (`a/./b.xml` is `a/b.xml`).
 */
function checkJunitPath(name: SettingName, path: string): string {
  const bad = (why: string) =>
    new UsageError("bad_junit_path", about(name, ` '${escapeControls(path.slice(0, 200))}${path.length > 200 ? "…" : ""}' ${why}`));
  if (path.includes("\0")) throw bad("holds a NUL byte");
  if (Buffer.byteLength(path) >= PATH_MAX) throw bad(`is ${Buffer.byteLength(path)} bytes; a path is under ${PATH_MAX}`);
  if (isAbsolute(path)) throw bad("must be a path relative to the checkout, not an absolute one");
  const normal = posix.normalize(path).replace(/\/+$/, "");
  if (normal === "" || normal === "." || normal === ".." || normal.startsWith("../")) throw bad("must name a file inside the checkout");
  return normal;
}

/** An `allowConfig` path: a file of the repository, from its top (`./.npmrc` is `.npmrc`), never a glob. */
function allowedConfigPath(name: SettingName, path: string): string {
  const normal = repoPath("", path);
  if (normal === null || /[*?[\]{}]/u.test(path))
    throw new UsageError("bad_allow_config", about(name, ` '${path}' must name one file of the repository, from its top (no glob)`));
  return normal;
}

/** One string handed to a process as one argument. */
function checkOneArgument(name: SettingName, value: string): string {
  const problem = argumentProblem(value);
  if (problem !== null) throw new UsageError(problem.code, about(name, ` ${problem.why}`));
  return value;
}

export const CHECKS = {
  /** One string handed to a process as one argument (a model name, a path, a command). */
  argument: (value: string, name: SettingName): string => checkOneArgument(name, value),
  arguments: (value: readonly string[], name: SettingName): readonly string[] => value.map((command) => checkOneArgument(name, command)),
  globs: (value: readonly string[], name: SettingName): readonly string[] => {
    for (const pattern of value) {
      try {
        globToRegExp(pattern);
      } catch {
        throw new UsageError("bad_glob", about(name, ` '${pattern}' is not a valid pattern`));
      }
    }
    return value;
  },
  envNames: (value: readonly string[], name: SettingName): readonly string[] => checkEnvNames(value, name),
  runId: (value: string, name: SettingName): string => {
    if (!isSafeRunId(value))
      throw new UsageError("bad_run_id", about(name, ` '${value}' must be one path segment of letters, digits, '.', '_' or '-'`));
    return value;
  },
  junitPaths: (value: readonly string[], name: SettingName): readonly string[] => value.map((path) => checkJunitPath(name, path)),
  configPaths: (value: readonly string[], name: SettingName): readonly string[] => value.map((path) => allowedConfigPath(name, path)),
  testEdits: (value: string, name: SettingName): TestEditPolicy => {
    if (!(TEST_EDIT_POLICIES as readonly string[]).includes(value))
      throw new UsageError("bad_test_edits", about(name, ` must be base, reject or allow, not '${value}'`));
    return value as TestEditPolicy;
  },
  workspaceMode: (value: string, name: SettingName): WorkspaceModeOption => {
    if ((WORKSPACE_MODES as readonly string[]).includes(value)) return value as WorkspaceModeOption;
    throw new UsageError("bad_workspace_mode", about(name, ` '${escapeControls(value.slice(0, 40))}' must be auto, overlay or copy`));
  },
  sandbox: (value: string, name: SettingName): SandboxMode => checkSandboxMode(value, name),
  allowNet: (value: readonly string[], name: SettingName): readonly AllowRule[] => value.flatMap((entry) => parseAllowNet(entry, name)),
  egressBlocked: (value: string, name: SettingName): EgressBlockedPolicy => {
    if ((EGRESS_BLOCKED_POLICIES as readonly string[]).includes(value)) return value as EgressBlockedPolicy;
    throw new UsageError("bad_egress_blocked", about(name, ` must be warn or fail, not '${escapeControls(value.slice(0, 40))}'`));
  },
  /** A time limit in milliseconds: positive, and within what Node's timers hold. */
  timeout: (value: number, name: SettingName): number => {
    if (!Number.isFinite(value) || value <= 0) throw new UsageError("bad_number", about(name, " must be a positive number"));
    if (value > MAX_TIMEOUT_SECONDS * 1000)
      throw new UsageError("bad_number", about(name, ` must be at most ${MAX_TIMEOUT_SECONDS} seconds (24 days)`));
    return value;
  },
  attempts: (value: number, name: SettingName): number => whole(name, value, MAX_ATTEMPTS),
  processes: (value: number, name: SettingName): number => whole(name, value, MAX_PROCESSES),
  memory: (value: number, name: SettingName): number => whole(name, value, MAX_MEMORY_MIB, [MIB, " MiB"]),
  count: (value: number, name: SettingName): number => whole(name, value, Number.MAX_SAFE_INTEGER),
  size: (value: number, name: SettingName): number =>
    whole(name, value, MAX_SIZE_MIB, [MIB, " MiB: handoff holds a changed file and the patch in memory"]),
} as const satisfies Record<CheckName, (value: never, name: SettingName) => unknown>;
