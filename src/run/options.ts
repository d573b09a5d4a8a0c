import { accessSync, constants, existsSync, statSync } from "node:fs";
import { homedir, tmpdir, totalmem } from "node:os";
import { dirname, isAbsolute, join, posix, resolve } from "node:path";
import type { ExternalAgentBackend } from "../agent/backend.js";
import { DEFAULT_BACKEND } from "../../backends/index.js";
import type { ApprovalRequest } from "../approval/approval.js";
import { CONFIG_FILE, type HandoffConfig } from "./config.js";
import { UsageError } from "../lib/errors.js";
import { isValidEnvName } from "./env.js";
import { globToRegExp } from "../patch/rules/glob.js";
import { MAX_MEMORY_MIB, MAX_PROCESSES, MAX_TIMEOUT_SECONDS, PATH_MAX, checkArgument, checkTask } from "./input-limits.js";
import { escapeControls } from "../patch/rules/path-names.js";
import { existingRealPath, isInside, realPathOrAncestor } from "../lib/paths.js";
import { secretPlaceTouched } from "../containment/secret-places.js";
import { userHome } from "../containment/hidden-paths.js";
import { type PatchLimits, resolveLimits } from "./limits.js";
import type { PatchPolicy } from "../patch/rules/policy.js";
import type { ResourceCaps } from "../containment/cgroup.js";
import { isSafeRunId } from "../run-dir/run-dir.js";
import { SANDBOX_MODES, type SandboxMode } from "../containment/sandbox.js";
import { type Holdout, readHoldoutFile } from "../verify/holdouts.js";
import { TEST_EDIT_POLICIES, type TestEditPolicy } from "../verify/test-edits.js";
import { repoPath } from "../verify/command-words.js";
import type { FeedbackWriter } from "../repair/feedback.js";
import type { ContinueFrom } from "../repair/continue-from.js";
import { cacheLimitBytes, defaultCacheDir } from "../environment/cache-store.js";

/** What a caller asks of one run. Everything optional falls back to `.handoff.json`, then to the defaults. */
export interface RunOptions {
  /** The source repository (default: the current directory). */
  readonly repo?: string;
  readonly task: string;
  /** A backend object, or a built-in backend's name. */
  readonly backend?: ExternalAgentBackend | string;
  /** With the `command` backend: the shell command run as the agent. */
  readonly agentCmd?: string;
  readonly bin?: string;
  readonly model?: string;
  readonly verify?: readonly string[];
  /**
   * Accept a patch that no verification command checks (`--no-verify`). Without a verify command (here or in
   * `.handoff.json`) and without this, the run is refused. Never read from `.handoff.json`: a repository must not be
   * able to switch its own checks off.
   */
  readonly noVerify?: boolean;
  /** What a change to a verification input does (`--test-edits`): `base` (default), `reject` or `allow`. */
  readonly testEdits?: TestEditPolicy;
  /** JUnit XML files a verify command writes, relative to the checkout (`--junit`). */
  readonly junit?: readonly string[];
  /**
   * Held-out patches (`--holdout-patch`): paths of files outside the repository, read when the options are resolved.
   * Never read from `.handoff.json`, which the agent can read.
   */
  readonly holdoutPatches?: readonly string[];
  readonly setup?: readonly string[];
  /** Approve without asking (`--yes`). */
  readonly yes?: boolean;
  /** Asked when `yes` is not set; resolves true to approve. Without it and without `yes`, the run is refused. */
  readonly approve?: (question: string) => Promise<boolean>;
  readonly timeoutMs?: number;
  readonly idleTimeoutMs?: number;
  readonly verifyTimeoutMs?: number;
  readonly allow?: readonly string[];
  readonly deny?: readonly string[];
  /** Globs of further verification inputs (`--protect`): files the patch may change only under the test-edits policy. */
  readonly protect?: readonly string[];
  /** Files the task must change that are held to the base by kind (`--allow-config`): never held, named in the report. */
  readonly allowConfig?: readonly string[];
  /** Paths of the host shown read-only to every contained process (`--expose`): a toolchain handoff did not find. */
  readonly expose?: readonly string[];
  /** Patch and workspace limits, sizes in bytes (`--max-files`, `--max-file-size`, … on the command line). */
  readonly limits?: Partial<PatchLimits>;
  readonly runsDir?: string;
  readonly runId?: string;
  /** Where disposable clones live (default: $HANDOFF_WORKSPACE_DIR, else the system temp dir). A tmpfs is fastest. */
  readonly workspacesDir?: string;
  /** Where each run's private agent-CLI homes live (default: $HANDOFF_CLI_HOME_DIR, else $XDG_STATE_HOME/handoff/homes). */
  readonly cliHomesDir?: string;
  readonly keepWorkspace?: boolean;
  readonly allowDirty?: boolean;
  /** Run the verify commands on the untouched base first. */
  readonly baseline?: boolean;
  /** Names of environment variables passed through to the agent (e.g. its API key). */
  readonly env?: readonly string[];
  /**
   * `auto` (default): bubblewrap when it works here, else none with a warning; `bwrap`: bubblewrap or a usage
   * error; `none`: no sandbox. Never read from `.handoff.json`: a repository must not be able to switch it off.
   */
  readonly sandbox?: SandboxMode;
  /** Give verification commands the network (sandboxed verification has none by default). */
  readonly verifyNetwork?: boolean;
  /** Caps on each contained process tree (enforced where a writable cgroup exists). */
  readonly caps?: Partial<ResourceCaps>;
  readonly signal?: AbortSignal;
  /**
   * How many attempts the agent gets (`--attempts`, default 1). After an attempt that fails verification or a patch
   * rule, the same session continues in the same clone with handoff's feedback, and every gate runs again.
   */
  readonly attempts?: number;
  /** A limit on the whole run (`--total-timeout`): no attempt starts after it, and an agent turn ends at it. */
  readonly totalTimeoutMs?: number;
  /** Writes the message a repair attempt sends the agent; gets what failed and handoff's own message for it. */
  readonly feedback?: FeedbackWriter;
  /** Keep the agent CLI's private home, its session, after the run for `handoff resume` (`--keep-session`). */
  readonly keepSession?: boolean;
  /** `handoff resume`: the finished run whose session this run continues (src/repair/continue-run.ts builds it). */
  readonly continueFrom?: ContinueFrom;
  /**
   * How workspaces are made from the base environment (`--workspace-mode`): `overlay` (a copy-on-write view; as root,
   * where the kernel allows it), `copy` (a checkout plus a copy of what setup made), `auto` (overlay where it works).
   * Default: `.handoff.json` `workspaceMode`, else $HANDOFF_WORKSPACE_MODE, else `auto`.
   */
  readonly workspaceMode?: WorkspaceModeOption;
  /** Globs of further files the setup commands depend on (`--setup-inputs`), besides manifests and lockfiles. */
  readonly setupInputs?: readonly string[];
  /** Where base environments are cached (default: $HANDOFF_CACHE_DIR, else $XDG_CACHE_HOME/handoff). */
  readonly cacheDir?: string;
  /**
   * Best-of-N (`--candidates`, docs/many-tasks.md): how many candidates each backend gets (default 1). With more than
   * one candidate in all, the run is a candidates run: each candidate a whole run in `<run>/candidates/<k>/`, the
   * winner's verdict the run's.
   */
  readonly candidates?: number;
  /** Repeated `-b`: a candidate (or `candidates` of them) per backend, in this order. Instead of `backend`, not with it. */
  readonly backends?: readonly (ExternalAgentBackend | string)[];
  /** How many candidates run at once (`--jobs`; default: all of them, at most 4). */
  readonly jobs?: number;
  /** This run is candidate `k` of a candidates run (set by src/many/candidates.ts; the command backend's $HANDOFF_CANDIDATE). */
  readonly candidate?: number;
}

export type WorkspaceModeOption = "auto" | "overlay" | "copy";
export const WORKSPACE_MODES: readonly WorkspaceModeOption[] = ["auto", "overlay", "copy"];

export const DEFAULTS = {
  backend: DEFAULT_BACKEND,
  timeoutMs: 1800_000,
  idleTimeoutMs: 600_000,
  verifyTimeoutMs: 900_000,
  sandbox: "auto",
  maxProcesses: 4096,
  attempts: 1,
} as const;

/** The most attempts one run may have: each is a full agent turn and verification. */
export const MAX_ATTEMPTS = 20;

/** Half the machine's memory, at most 8 GiB, for each contained process tree. */
export function defaultMemoryCap(total = totalmem()): number {
  return Math.min(8 * 1024 ** 3, Math.floor(total / 2));
}

/** `$XDG_STATE_HOME/handoff` (absolute only), else `~/.local/state/handoff`. */
function stateDir(env: NodeJS.ProcessEnv): string {
  const state = env.XDG_STATE_HOME?.startsWith("/") ? env.XDG_STATE_HOME : join(homedir(), ".local", "state");
  return join(state, "handoff");
}

export function defaultRunsDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(stateDir(env), "runs");
}

/** Not under the temp dir: Codex will not put its sandbox helpers there. */
export function defaultCliHomesDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.HANDOFF_CLI_HOME_DIR ? resolve(env.HANDOFF_CLI_HOME_DIR) : join(stateDir(env), "homes");
}

export function defaultWorkspacesDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.HANDOFF_WORKSPACE_DIR ? resolve(env.HANDOFF_WORKSPACE_DIR) : join(tmpdir(), "handoff");
}

/**
 * A directory handoff will create things in: it must be a directory (or not exist yet, under a directory) that this
 * user can write. Checked before anything is created, so that a file or a read-only mount is a usage error.
 */
function checkWritableDir(what: string, path: string): void {
  let existing = path;
  while (!existsSync(existing)) existing = dirname(existing);
  let isDir: boolean;
  try {
    isDir = statSync(existing).isDirectory();
  } catch (error) {
    throw new UsageError("bad_directory", `${what} ${path} cannot be used: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
  if (!isDir) throw new UsageError("bad_directory", `${what} ${path} cannot be used: ${existing} is not a directory`);
  try {
    accessSync(existing, constants.W_OK | constants.X_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === "EROFS" ? "is on a read-only file system" : "is not writable by this user";
    throw new UsageError("bad_directory", `${what} ${path} cannot be used: ${existing} ${why}`);
  }
}

/** Options after merging `.handoff.json`, validated: the one value a run carries from here to its gates. */
export interface ResolvedOptions {
  readonly task: string;
  /** Gate 1: `--yes`, or who is asked. */
  readonly approval: ApprovalRequest;
  /** `--bin`: the agent CLI's executable, null for the one found on PATH. */
  readonly bin: string | null;
  /** `--agent-cmd`, for the command backend. */
  readonly agentCmd: string | null;
  /** `--run-id`, null for a generated one. */
  readonly runId: string | null;
  /** `--baseline`: the verify commands run on the untouched base first. */
  readonly baseline: boolean;
  readonly allowDirty: boolean;
  readonly keepWorkspace: boolean;
  /** Cancels the run (the CLI's Ctrl-C). */
  readonly signal: AbortSignal | undefined;
  readonly backendName: string;
  readonly model: string | null;
  readonly verify: readonly string[];
  /** `--no-verify`: nothing is verified; `verify` is empty. */
  readonly noVerify: boolean;
  /** How many `.handoff.json` verify commands `--no-verify` overrode (the outcome says they did not run). */
  readonly configVerifySkipped: number;
  readonly testEdits: TestEditPolicy;
  /** JUnit XML paths, relative to the checkout, normalised. */
  readonly junit: readonly string[];
  readonly holdouts: readonly Holdout[];
  readonly setup: readonly string[];
  readonly timeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly verifyTimeoutMs: number;
  readonly policy: PatchPolicy;
  readonly protect: readonly string[];
  readonly allowConfig: readonly string[];
  /** Real paths, checked: never a credential place, the home whole, or a place of handoff's or the source's. */
  readonly expose: readonly string[];
  readonly runsDir: string;
  readonly workspacesDir: string;
  readonly cliHomesDir: string;
  readonly envNames: readonly string[];
  readonly sandbox: SandboxMode;
  readonly verifyNetwork: boolean;
  readonly caps: ResourceCaps;
  /** 1 to MAX_ATTEMPTS. */
  readonly attempts: number;
  /** null: no limit on the whole run beyond each attempt's own. */
  readonly totalTimeoutMs: number | null;
  readonly feedback: FeedbackWriter | null;
  readonly keepSession: boolean;
  readonly continueFrom: ContinueFrom | null;
  readonly workspaceMode: WorkspaceModeOption;
  readonly setupInputs: readonly string[];
  readonly cacheDir: string;
  /** $HANDOFF_CACHE_LIMIT, checked here: a bad value is a usage error before anything exists. */
  readonly cacheLimitBytes: number;
  /** The candidate this run is (1 for a run that is not part of a candidates run). */
  readonly candidate: number;
}

/** `--sandbox MODE`, checked the one way for run, batch and worker (a bad mode is a usage error before anything runs). */
export function checkSandboxMode(mode: string): SandboxMode {
  if (!(SANDBOX_MODES as readonly string[]).includes(mode))
    throw new UsageError("bad_sandbox", `--sandbox must be auto, bwrap or none, not '${escapeControls(mode.slice(0, 100))}'`);
  return mode as SandboxMode;
}

/** `--env NAME`s, checked the one way for run, batch and worker. */
export function checkEnvNames(names: readonly string[]): void {
  for (const name of names)
    if (!isValidEnvName(name))
      throw new UsageError("bad_env_name", `--env takes a variable name, not '${escapeControls(name.slice(0, 100))}'`);
}

export function resolveOptions(options: RunOptions, config: HandoffConfig, sourceTop: string): ResolvedOptions {
  checkTask(options.task);
  if (options.runId !== undefined && !isSafeRunId(options.runId)) {
    throw new UsageError("bad_run_id", `--run-id '${options.runId}' must be one path segment of letters, digits, '.', '_' or '-'`);
  }
  checkEnvNames(options.env ?? []);
  const runsDir = realPathOrAncestor(options.runsDir ?? defaultRunsDir());
  checkWritableDir("the runs directory", runsDir);
  if (isInside(runsDir, sourceTop)) {
    throw new UsageError(
      "runs_dir_inside_repo",
      `the runs directory ${runsDir} is inside the source repository; choose another --runs-dir`,
    );
  }
  const workspacesDir = realPathOrAncestor(options.workspacesDir ?? defaultWorkspacesDir());
  checkWritableDir("the workspace directory", workspacesDir);
  if (isInside(workspacesDir, sourceTop)) {
    throw new UsageError("workspace_inside_repo", `the workspace directory ${workspacesDir} is inside the source repository`);
  }
  const cacheDir = realPathOrAncestor(options.cacheDir ?? defaultCacheDir());
  checkWritableDir("the cache directory", cacheDir);
  if (isInside(cacheDir, sourceTop)) {
    throw new UsageError("cache_dir_inside_repo", `the cache directory ${cacheDir} is inside the source repository`);
  }
  const cliHomesDir = realPathOrAncestor(options.cliHomesDir ?? defaultCliHomesDir());
  checkWritableDir("the agent-CLI home directory", cliHomesDir);
  if (isInside(cliHomesDir, sourceTop)) {
    throw new UsageError("cli_homes_inside_repo", `the agent-CLI home directory ${cliHomesDir} is inside the source repository`);
  }
  const seconds = (value: number | undefined) => (value === undefined ? undefined : value * 1000);
  const positive = (name: string, value: number) => {
    if (!Number.isFinite(value) || value <= 0) throw new UsageError("bad_number", `${name} must be a positive number`);
    if (value > MAX_TIMEOUT_SECONDS * 1000)
      throw new UsageError("bad_number", `${name} must be at most ${MAX_TIMEOUT_SECONDS} seconds (24 days)`);
    return value;
  };
  const optionalPositive = (name: string, value: number | undefined) => (value === undefined ? null : positive(name, value));
  const allow = options.allow ?? config.allow ?? [];
  const deny = options.deny ?? config.deny ?? [];
  const protect = options.protect ?? config.protect ?? [];
  const allowConfig = (options.allowConfig ?? config.allowConfig ?? []).map((path) => allowedConfigPath(path));
  for (const [name, patterns] of [
    ["--allow", allow],
    ["--deny", deny],
    ["--protect", protect],
  ] as const) {
    for (const pattern of patterns) {
      try {
        globToRegExp(pattern);
      } catch {
        throw new UsageError("bad_glob", `${name} '${pattern}' is not a valid pattern`);
      }
    }
  }
  const sandbox = checkSandboxMode(options.sandbox ?? DEFAULTS.sandbox);
  const whole = (name: string, value: number, most: number, unit: [number, string] = [1, ""]) => {
    if (!Number.isInteger(value) || value <= 0) throw new UsageError("bad_number", `${name} must be a positive whole number`);
    // A cgroup file holds an integer: 1e30 would be written as "1e+30", refused, and the cap not enforced.
    if (value > most * unit[0]) throw new UsageError("bad_number", `${name} must be at most ${most}${unit[1]}`);
    return value;
  };
  const caps: ResourceCaps = {
    processes: whole("--max-processes", options.caps?.processes ?? DEFAULTS.maxProcesses, MAX_PROCESSES),
    memoryBytes: whole("--max-memory", options.caps?.memoryBytes ?? defaultMemoryCap(), MAX_MEMORY_MIB, [1024 * 1024, " MiB"]),
  };
  const setup = options.setup ?? config.setup ?? [];
  const noVerify = options.noVerify === true;
  if (noVerify && (options.verify?.length ?? 0) > 0) {
    throw new UsageError("no_verify_with_verify", "--no-verify and --verify contradict each other: give one or the other");
  }
  if (noVerify && options.baseline) {
    throw new UsageError(
      "no_verify_with_baseline",
      "--baseline runs the verify commands on the untouched base; with --no-verify there are none to run",
    );
  }
  if (noVerify && (options.holdoutPatches?.length ?? 0) > 0) {
    throw new UsageError(
      "no_verify_with_holdout",
      "--holdout-patch adds tests for the verify commands to run; with --no-verify nothing runs them",
    );
  }
  // --no-verify wins over .handoff.json: nothing is run, and the outcome says the file's commands were skipped.
  const verify = noVerify ? [] : (options.verify ?? config.verify ?? []);
  const from = (cli: unknown) => (cli === undefined ? ` (from ${CONFIG_FILE})` : "");
  for (const command of setup) checkArgument(`the setup command${from(options.setup)}`, command);
  for (const command of verify) checkArgument(`the verify command${from(options.verify)}`, command);
  const testEdits = options.testEdits ?? config.testEdits ?? "base";
  if (!(TEST_EDIT_POLICIES as readonly string[]).includes(testEdits)) {
    throw new UsageError("bad_test_edits", `--test-edits${from(options.testEdits)} must be base, reject or allow, not '${testEdits}'`);
  }
  const junit = (options.junit ?? config.junit ?? []).map((path) => checkJunitPath(`--junit${from(options.junit)}`, path));
  const read = (options.holdoutPatches ?? []).map((path) =>
    readHoldoutFile(path, [
      ["the source repository", sourceTop],
      ["the runs directory", runsDir],
      ["the workspace directory", workspacesDir],
      ["the agent-CLI home directory", cliHomesDir],
    ]),
  );
  // One file named twice (through a link, say) is one holdout: applied twice, it could never apply.
  const holdouts = read.filter((holdout, index) => read.findIndex((other) => other.source === holdout.source) === index);
  if (options.agentCmd !== undefined) checkArgument("--agent-cmd", options.agentCmd);
  if (options.bin !== undefined) checkArgument("--bin", options.bin);
  const model = options.model ?? config.model ?? null;
  if (model !== null) checkArgument(`the model${from(options.model)}`, model);
  const backendName = typeof options.backend === "object" ? options.backend.name : (options.backend ?? config.backend ?? DEFAULTS.backend);
  const resolved: ResolvedOptions = {
    task: options.task,
    approval: { yes: options.yes, ask: options.approve },
    bin: options.bin ?? null,
    agentCmd: options.agentCmd ?? null,
    runId: options.runId ?? null,
    baseline: options.baseline ?? false,
    allowDirty: options.allowDirty ?? false,
    keepWorkspace: options.keepWorkspace ?? false,
    signal: options.signal,
    backendName,
    model,
    verify,
    noVerify,
    configVerifySkipped: noVerify ? (config.verify?.length ?? 0) : 0,
    testEdits: testEdits as TestEditPolicy,
    junit,
    holdouts,
    setup,
    timeoutMs: positive("--timeout", options.timeoutMs ?? seconds(config.timeout) ?? DEFAULTS.timeoutMs),
    idleTimeoutMs: positive("--idle-timeout", options.idleTimeoutMs ?? seconds(config.idleTimeout) ?? DEFAULTS.idleTimeoutMs),
    verifyTimeoutMs: positive("--verify-timeout", options.verifyTimeoutMs ?? seconds(config.verifyTimeout) ?? DEFAULTS.verifyTimeoutMs),
    policy: { allow, deny, ...resolveLimits(options.limits, config) },
    protect,
    allowConfig,
    expose: (options.expose ?? config.expose ?? []).map((path) =>
      exposedPath(path, [sourceTop, runsDir, workspacesDir, cliHomesDir, cacheDir]),
    ),
    runsDir,
    workspacesDir,
    cliHomesDir,
    envNames: options.env ?? [],
    sandbox,
    verifyNetwork: options.verifyNetwork ?? false,
    caps,
    attempts: whole("--attempts", options.attempts ?? config.attempts ?? DEFAULTS.attempts, MAX_ATTEMPTS),
    totalTimeoutMs: optionalPositive("--total-timeout", options.totalTimeoutMs ?? seconds(config.totalTimeout)),
    feedback: options.feedback ?? null,
    keepSession: options.keepSession ?? config.keepSession ?? false,
    continueFrom: options.continueFrom ?? null,
    workspaceMode: workspaceMode(options.workspaceMode ?? config.workspaceMode ?? (process.env.HANDOFF_WORKSPACE_MODE || "auto")),
    setupInputs: options.setupInputs ?? config.setupInputs ?? [],
    cacheDir,
    cacheLimitBytes: cacheLimitBytes(),
    candidate: options.candidate ?? 1,
  };
  // Last, so that any other bad input is named first.
  if (verify.length === 0 && !noVerify) {
    throw new UsageError(
      "no_verify_command",
      `no verify command: pass --verify CMD (or set "verify" in ${CONFIG_FILE}), or --no-verify to accept a patch that nothing checks`,
    );
  }
  return resolved;
}

function workspaceMode(value: string): WorkspaceModeOption {
  if ((WORKSPACE_MODES as readonly string[]).includes(value)) return value as WorkspaceModeOption;
  throw new UsageError("bad_workspace_mode", `--workspace-mode '${escapeControls(value.slice(0, 40))}' must be auto, overlay or copy`);
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
/** An `--expose` path: an existing one, by real path, that shows no credentials and none of handoff's places. */
function exposedPath(path: string, handoffPlaces: readonly string[]): string {
  const shown = escapeControls(path);
  const real = existingRealPath(resolve(path));
  if (real === null) throw new UsageError("bad_expose", `--expose '${shown}' does not exist`);
  const home = existingRealPath(userHome()) ?? userHome();
  if (real === "/" || isInside(home, real))
    throw new UsageError("bad_expose", `--expose '${shown}' would show your whole home; name the directory the tool needs`);
  const secret = secretPlaceTouched(real, home);
  if (secret !== null)
    throw new UsageError("bad_expose", `--expose '${shown}' would show ${escapeControls(secret)}, which holds credentials`);
  const place = handoffPlaces.find((dir) => isInside(real, dir) || isInside(dir, real));
  if (place !== undefined)
    throw new UsageError("bad_expose", `--expose '${shown}' would show ${escapeControls(place)} (the source or handoff's own state)`);
  return real;
}

function allowedConfigPath(path: string): string {
  const normal = repoPath("", path);
  if (normal === null || /[*?[\]{}]/u.test(path))
    throw new UsageError("bad_allow_config", `--allow-config '${path}' must name one file of the repository, from its top (no glob)`);
  return normal;
}
