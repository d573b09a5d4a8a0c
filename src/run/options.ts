import { accessSync, constants, existsSync, statSync } from "node:fs";
import { defaultCliHomesDir, defaultRunsDir, defaultWorkspacesDir } from "../run-dir/default-places.js";
import { dirname, resolve } from "node:path";
import type { ExternalAgentBackend } from "../agent/backend.js";
import type { ApprovalRequest } from "../approval/approval.js";
import { CONFIG_FILE } from "./config.js";
import type { HandoffConfig } from "../settings/file-schema.js";
import type { WorkspaceModeOption } from "../settings/checks.js";
import { settle } from "../settings/resolve-setting.js";
import { UsageError, type UsageErrorCode } from "../lib/errors.js";
import { checkTask } from "../vocabulary/input-limits.js";
import { escapeControls } from "../vocabulary/display.js";
import { existingRealPath, isInside, realPathOrAncestor } from "../lib/paths.js";
import { secretPlaceTouched } from "../containment/secret-places.js";
import { userHome } from "../containment/hidden-paths.js";
import type { PatchLimits, PatchPolicy } from "../patch/rules/policy.js";
import type { ResourceCaps } from "../containment/cgroup.js";
import type { SandboxMode } from "../containment/sandbox.js";
import type { AllowRule } from "../egress/allow-rules.js";
import type { EgressBlockedPolicy } from "../egress/egress-policy.js";
import { type Holdout, readHoldoutFile } from "../verify/holdouts.js";
import type { TestEditPolicy } from "../verify/test-edits.js";
import type { FeedbackWriter } from "../repair/feedback.js";
import type { ContinueFrom } from "../repair/continue-from.js";
import { cacheLimitBytes, defaultCacheDir } from "../environment/cache-store.js";

/** What a caller asks of one run. Everything optional falls back to `.handoff.json`, then to the defaults. */
export interface RunOptions {
  /** The source repository: a directory of its work tree (the CLI passes `-C DIR`, else its current directory). */
  readonly repo: string;
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
  /** A limit per setup command (`--setup-timeout`), when a cold install needs longer than a test run; default: `verifyTimeoutMs`. */
  readonly setupTimeoutMs?: number;
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
  /**
   * Hosts and registry presets the agent and setup may reach (`--allow-net`), as the user writes them: `github`,
   * `api.example.com`, `*.example.com`, `10.0.0.5:8080`; `*` for the host network, unfiltered (docs/containment.md).
   */
  readonly allowNet?: readonly string[];
  /** `warn` (default): a blocked connection is a warning; `fail`: it ends the run `policy_or_artifact_error`. */
  readonly egressBlocked?: EgressBlockedPolicy;
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

export { checkEnvNames, checkSandboxMode, type WorkspaceModeOption } from "../settings/checks.js";

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
  /** Each setup command's limit: `--setup-timeout`, else the verify commands' `verifyTimeoutMs`. */
  readonly setupTimeoutMs: number;
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
  /** The rules of `--allow-net`, parsed; the backend's and the setup commands' own are added per process. */
  readonly allowNet: readonly AllowRule[];
  readonly egressBlocked: EgressBlockedPolicy;
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

/**
 * A run's options resolved: each setting by its one ladder (the caller, `.handoff.json`, the default) and its own check
 * (src/settings/), then the rules that span several settings. A bad value of any kind is a UsageError here.
 */
export function resolveOptions(options: RunOptions, config: HandoffConfig, sourceTop: string): ResolvedOptions {
  const setting = <O extends Parameters<typeof settle>[0]>(option: O) => settle(option, options, config);
  checkTask(options.task);
  const runId = setting("runId") ?? null;
  const envNames = setting("env");
  const runsDir = handoffDir("the runs directory", options.runsDir ?? defaultRunsDir(), sourceTop, "runs_dir_inside_repo");
  const workspacesDir = handoffDir(
    "the workspace directory",
    options.workspacesDir ?? defaultWorkspacesDir(),
    sourceTop,
    "workspace_inside_repo",
  );
  const cacheDir = handoffDir("the cache directory", options.cacheDir ?? defaultCacheDir(), sourceTop, "cache_dir_inside_repo");
  const cliHomesDir = handoffDir(
    "the agent-CLI home directory",
    options.cliHomesDir ?? defaultCliHomesDir(),
    sourceTop,
    "cli_homes_inside_repo",
  );
  const allow = setting("allow");
  const deny = setting("deny");
  const protect = setting("protect");
  const allowConfig = setting("allowConfig");
  const sandbox = setting("sandbox");
  // A repository's own file may add hosts but never switch the filter off: that is the caller's to say.
  if (options.allowNet === undefined && config.allowNet?.some((entry) => entry.trim() === "*"))
    throw new UsageError("allow_net_any_in_file", ({ surface, name }) => {
      const yourself = surface === "library" ? `set ${name("allowNet")}: ["*"]` : `pass ${name("allowNet")} '*'`;
      return `${CONFIG_FILE} cannot set allowNet "*" (the host network, unfiltered): ${yourself} yourself`;
    });
  const allowNet = setting("allowNet");
  const caps: ResourceCaps = { processes: setting("caps.processes"), memoryBytes: setting("caps.memoryBytes") };
  const setup = setting("setup");
  const noVerify = setting("noVerify");
  if (noVerify && (options.verify?.length ?? 0) > 0) {
    throw new UsageError(
      "no_verify_with_verify",
      ({ name }) => `${name("noVerify")} and ${name("verify")} contradict each other: give one or the other`,
    );
  }
  if (noVerify && options.baseline) {
    throw new UsageError(
      "no_verify_with_baseline",
      ({ name }) => `${name("baseline")} runs the verify commands on the untouched base; with ${name("noVerify")} there are none to run`,
    );
  }
  if (noVerify && (options.holdoutPatches?.length ?? 0) > 0) {
    throw new UsageError(
      "no_verify_with_holdout",
      ({ name }) => `${name("holdoutPatches")} adds tests for the verify commands to run; with ${name("noVerify")} nothing runs them`,
    );
  }
  // --no-verify wins over .handoff.json: nothing is run, and the outcome says the file's commands were skipped.
  const verify = noVerify ? [] : setting("verify");
  const testEdits = setting("testEdits");
  const junit = setting("junit");
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
  const agentCmd = setting("agentCmd") ?? null;
  const bin = setting("bin") ?? null;
  const model = setting("model") ?? null;
  // A backend object names itself; a name is a setting like any other (checked when the backend is resolved).
  const backendName = typeof options.backend === "object" ? options.backend.name : settle("backend", { backend: options.backend }, config);
  const verifyTimeoutMs = setting("verifyTimeoutMs");
  const resolved: ResolvedOptions = {
    task: options.task,
    approval: { yes: options.yes, ask: options.approve },
    bin,
    agentCmd,
    runId,
    baseline: setting("baseline"),
    allowDirty: setting("allowDirty"),
    keepWorkspace: setting("keepWorkspace"),
    signal: options.signal,
    backendName,
    model,
    verify,
    noVerify,
    configVerifySkipped: noVerify ? (config.verify?.length ?? 0) : 0,
    testEdits,
    junit,
    holdouts,
    setup,
    timeoutMs: setting("timeoutMs"),
    idleTimeoutMs: setting("idleTimeoutMs"),
    verifyTimeoutMs,
    setupTimeoutMs: setting("setupTimeoutMs") ?? verifyTimeoutMs,
    policy: {
      allow,
      deny,
      maxFiles: setting("limits.maxFiles"),
      maxFileBytes: setting("limits.maxFileBytes"),
      maxPatchBytes: setting("limits.maxPatchBytes"),
      maxWorkspaceEntries: setting("limits.maxWorkspaceEntries"),
      maxDepth: setting("limits.maxDepth"),
    },
    protect,
    allowConfig,
    expose: (options.expose ?? config.expose ?? []).map((path) =>
      exposedPath(path, [sourceTop, runsDir, workspacesDir, cliHomesDir, cacheDir]),
    ),
    runsDir,
    workspacesDir,
    cliHomesDir,
    envNames,
    sandbox,
    verifyNetwork: setting("verifyNetwork"),
    allowNet,
    egressBlocked: setting("egressBlocked"),
    caps,
    attempts: setting("attempts"),
    totalTimeoutMs: setting("totalTimeoutMs") ?? null,
    feedback: options.feedback ?? null,
    keepSession: setting("keepSession"),
    continueFrom: options.continueFrom ?? null,
    workspaceMode: setting("workspaceMode"),
    setupInputs: setting("setupInputs"),
    cacheDir,
    cacheLimitBytes: cacheLimitBytes(),
    candidate: options.candidate ?? 1,
  };
  // Last, so that any other bad input is named first.
  if (verify.length === 0 && !noVerify) {
    throw new UsageError("no_verify_command", ({ surface, name }) =>
      surface === "library"
        ? `no verify command: set ${name("verify")} (or "verify" in ${CONFIG_FILE}), or ${name("noVerify")}: true to accept a patch that nothing checks`
        : `no verify command: pass ${name("verify")} CMD (or set "verify" in ${CONFIG_FILE}), or ${name("noVerify")} to accept a patch that nothing checks`,
    );
  }
  return resolved;
}

/** One of handoff's own directories, by real path: writable by this user, and never inside the source repository. */
function handoffDir(what: string, path: string, sourceTop: string, insideCode: UsageErrorCode): string {
  const real = realPathOrAncestor(path);
  checkWritableDir(what, real);
  if (isInside(real, sourceTop)) {
    const choose = (name: (field: string) => string) =>
      insideCode === "runs_dir_inside_repo" ? `; choose another ${name("runsDir")}` : "";
    throw new UsageError(insideCode, ({ name }) => `${what} ${real} is inside the source repository${choose(name)}`);
  }
  return real;
}

/** An `expose` path: an existing one, by real path, that shows no credentials and none of handoff's places. */
function exposedPath(path: string, handoffPlaces: readonly string[]): string {
  const refuse = (why: string) => new UsageError("bad_expose", ({ name }) => `${name("expose")} '${escapeControls(path)}' ${why}`);
  const real = existingRealPath(resolve(path));
  if (real === null) throw refuse("does not exist");
  const home = existingRealPath(userHome()) ?? userHome();
  if (real === "/" || isInside(home, real)) throw refuse("would show your whole home; name the directory the tool needs");
  const secret = secretPlaceTouched(real, home);
  if (secret !== null) throw refuse(`would show ${escapeControls(secret)}, which holds credentials`);
  const place = handoffPlaces.find((dir) => isInside(real, dir) || isInside(dir, real));
  if (place !== undefined) throw refuse(`would show ${escapeControls(place)} (the source or handoff's own state)`);
  return real;
}
