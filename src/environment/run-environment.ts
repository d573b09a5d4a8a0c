import type { PristineStore, WorkspaceFrom } from "../clone/workspace.js";
import type { SourceRepo } from "../clone/source-repo.js";
import type { ProcessJail } from "../containment/containment.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import type { RunnerEvent } from "../vocabulary/events.js";
import type { ResolvedOptions } from "../run/options.js";
import type { RunResult } from "../verdict/result.js";
import type { CommandRecord, TestLog } from "../verify/shell-commands.js";
import { buildBaseEnvironment } from "./build.js";
import { userNpmCacheDir } from "./user-npm-cache.js";
import { acquireBuildLock } from "./build-lock.js";
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { removeTree } from "../clone/workspace.js";
import { EnvironmentCache } from "./cache-store.js";
import {
  type BaseEnvironment,
  type EnvironmentCheck,
  type EnvironmentSeal,
  checkEnvironment,
  checkEnvironmentInBackground,
  loadEnvironment,
} from "./environment.js";
import { ownedName, ownerGone } from "./owner-pid.js";
import { type EnvironmentIdentity, environmentIdentity } from "./environment-key.js";
import { type SetupInputs, setupInputs } from "./setup-inputs.js";
import type { WorkspaceMode } from "./view.js";
import type { TreeStamps } from "./tree-stamps.js";
import type { WorkspaceModeChoice } from "./workspace-mode.js";

/** What a run lends the environment: its phases, events, warnings, test log and the setup commands' jail. */
export interface EnvironmentRunHooks {
  /** `since`: when the phase's work began, if before this call (started early: `lookAhead`). */
  readonly phase: <T>(name: "environment" | "setup", body: () => Promise<T>, since?: number) => Promise<T | undefined>;
  readonly emit: (event: RunnerEvent) => void;
  readonly warn: (finding: PolicyFinding) => void;
  readonly log: TestLog;
  readonly jail: (command: string, writable: readonly string[]) => ProcessJail;
}

/** How preparing the environment ended: ready (with one, or none and setup in each checkout), or stopped. */
export type EnvironmentPrepared =
  | { readonly kind: "ready"; readonly setupCommands: readonly CommandRecord[] }
  | { readonly kind: "stopped"; readonly setupCommands: readonly CommandRecord[] };

/**
 * One run's base environment (docs/environment.md): found in the cache or built on the base, the workspaces made
 * from it, verification's decision to set up again, what result.json says of it, and its use marker.
 */
export class RunEnvironment {
  readonly #options: ResolvedOptions;
  readonly #mode: WorkspaceModeChoice;
  readonly #cache: EnvironmentCache;
  /** A run without the sandbox: its own cache, removed with it (`<cacheDir>/unsandboxed/<pid>-<r>`); null in the sandbox. */
  readonly #privateRoot: string | null = null;
  /** Ends this run's exposure (a run without the sandbox: cache-store.ts, markExposure). */
  #endExposure: (() => void) | null = null;
  #environment: BaseEnvironment | null = null;
  /** What the environment was when this run took it, kept in memory: checked again before verification. */
  #seal: EnvironmentSeal | null = null;
  /** The stamps the last sound check read, in this run's memory: a later check whose find prints the same needs no more. */
  #stamps: TreeStamps | null = null;
  /** Why a build lock this run found was broken (build-lock.ts), said once the run can warn. */
  #brokenLock: string | null = null;
  #source: "reused" | "built" | "none" = "none";
  #noneReason: string | null = null;
  #inputs: SetupInputs | null = null;
  #verificationSetup: { ran: boolean; reason: string } | null = null;
  #release: (() => void) | null = null;
  /** Held while this run builds the environment (src/environment/build-lock.ts). */
  #buildLock: { readonly release: () => void } | null = null;
  /** The cache's lookup, started before the program check is judged (`lookAhead`); taken by `prepare`. */
  #ahead: { readonly startedAt: number; finishedAt: number | null; readonly found: Promise<Found | Error> } | null = null;
  /** The check before verification, started once the agent was gone (`checkAhead`); taken by `forVerification`. */
  #checkAhead: Promise<EnvironmentCheck> | null = null;
  /** Every piece of work started early, awaited before the run lets go of the environment (`settle`). */
  readonly #early: Promise<unknown>[] = [];

  constructor(options: ResolvedOptions, mode: WorkspaceModeChoice, sandboxed: boolean) {
    this.#options = options;
    this.#mode = mode;
    const shared = new EnvironmentCache(options.cacheDir, options.cacheLimitBytes);
    if (sandboxed) {
      this.#cache = shared;
      return;
    }
    // Its agent runs as you and can write the cache: it never builds, takes or evicts what sandboxed runs use. Sandboxed
    // runs are told (markExposure) before the agent exists; this run builds its own environment, removed with it.
    try {
      this.#endExposure = shared.markExposure();
    } catch {
      // A cache directory this run cannot write, the agent cannot write either.
    }
    const parent = join(shared.root, "unsandboxed");
    sweepPrivateRoots(parent);
    this.#privateRoot = join(parent, ownedName());
    this.#cache = new EnvironmentCache(this.#privateRoot, Number.MAX_SAFE_INTEGER, join(parent, "downloads"));
  }

  /** The environment the workspaces are made from; null when setup runs in each checkout, as before there was one. */
  get environment(): BaseEnvironment | null {
    return this.#environment;
  }

  /** Overlay views, but copies for a workspace that must outlive the run (`--keep-workspace`): a mount would not. */
  get mode(): WorkspaceMode {
    return this.#options.keepWorkspace ? "copy" : this.#mode.mode;
  }

  /** What the agent's workspace is made from. */
  get workspaceFrom(): WorkspaceFrom | null {
    return this.#environment ? { environment: this.#environment, mode: this.mode } : null;
  }

  /**
   * With setup commands, or with overlay views, the workspaces are made from a base environment: found in the cache by
   * its key (checked unmodified), else built now, the setup commands run there once. Stopped when setup failed, the
   * lookup threw (its phase records that) or the run halted.
   */
  async prepare(
    source: SourceRepo,
    pristine: PristineStore,
    scratch: string,
    runId: string,
    hooks: EnvironmentRunHooks,
  ): Promise<EnvironmentPrepared> {
    const options = this.#options;
    if (this.#usesNone()) {
      this.#noneReason = "no setup commands, and workspaces are copies";
      return { kind: "ready", setupCommands: [] };
    }
    const inputs = this.#inputsOnce();
    const ahead = this.#ahead;
    this.#ahead = null;
    // The lookup is a phase of its own: what it throws (a cache it cannot read) is a verdict, never a lost run. Started
    // early (lookAhead), its phase is timed from when it began, and what it threw is thrown here, where it is judged.
    try {
      const found = await hooks.phase(
        "environment",
        async () => {
          const looked = ahead ? await ahead.found : await this.#lookUpByKey(source, pristine, inputs);
          if (looked instanceof Error) throw looked;
          return this.#awaitBuild(looked);
        },
        ahead ? sinceFor(ahead) : undefined,
      );
      // A signal that came during the lookup's synchronous part is read in the event loop's next poll: two turns of the
      // loop let it be handled before a build could start.
      for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
      if (this.#brokenLock !== null) hooks.warn({ path: "", rule: "build_lock_broken", message: this.#brokenLock });
      if (!found || options.signal?.aborted) return { kind: "stopped", setupCommands: [] };
      if (found.environment) return this.#use(found.environment, [], hooks);
      return await this.#build(found.identity, source, pristine, scratch, runId, hooks);
    } finally {
      // Whatever happened, the next run with the same setup may build it now (or find what this one built).
      this.#buildLock?.release();
      this.#buildLock = null;
    }
  }

  /**
   * The environment's key and the cache's lookup, started while the program check runs: both only read handoff's
   * pristine store and cache (the lookup marks the key in use, released with the run). What it finds or throws is
   * judged in `prepare`, after the program check, as if it had started there; it never builds and never waits for
   * another run's build. Nothing when this run uses no environment.
   */
  lookAhead(source: SourceRepo, pristine: PristineStore): void {
    if (this.#usesNone() || this.#ahead) return;
    const inputs = this.#inputsOnce();
    const startedAt = Date.now();
    const found = this.#lookUpByKey(source, pristine, inputs).catch((error: unknown) =>
      error instanceof Error ? error : new Error(String(error)),
    );
    const ahead = { startedAt, finishedAt: null as number | null, found };
    found.then(() => (ahead.finishedAt = Date.now()));
    this.#early.push(found);
    this.#ahead = ahead;
  }

  /** Whatever was started early, finished (its result unused if nobody took it): before the run lets go of the environment. */
  async settle(): Promise<void> {
    await Promise.allSettled(this.#early);
    this.#early.length = 0;
  }

  #usesNone(): boolean {
    return this.#options.setup.length === 0 && this.#mode.mode === "copy";
  }

  #inputsOnce(): SetupInputs {
    this.#inputs ??= setupInputs(this.#options.setup, this.#options.setupInputs);
    return this.#inputs;
  }

  async #build(
    identity: EnvironmentIdentity,
    source: SourceRepo,
    pristine: PristineStore,
    scratch: string,
    runId: string,
    hooks: EnvironmentRunHooks,
  ): Promise<EnvironmentPrepared> {
    const options = this.#options;
    const built = await hooks.phase("setup", () =>
      buildBaseEnvironment({
        cache: this.#cache,
        identity,
        source,
        pristine,
        scratch,
        runId,
        timeoutMs: options.setupTimeoutMs,
        log: hooks.log,
        signal: options.signal,
        onCommand: (command) => hooks.emit({ type: "command.started", phase: "setup", command }),
        jail: hooks.jail,
        userNpmCache: userNpmCacheDir(),
      }),
    );
    if (!built) return { kind: "stopped", setupCommands: [] };
    if (built.kind !== "built") return { kind: "stopped", setupCommands: built.commands };
    this.#cache.evict();
    // Another run's build may have been committed first (then that one is returned): checked as any found one is.
    const own = built.environment.record.builtBy === runId;
    const checked = checkEnvironment(built.environment.dir, built.environment.record, {
      trustedAfter: own || this.#privateRoot !== null ? -1n : this.#cache.trustedAfter(),
    });
    if (checked.kind === "unsound") {
      this.#noneReason = `${checked.why}: setup runs in each checkout`;
      return { kind: "ready", setupCommands: built.commands };
    }
    this.#seal = checked.seal;
    this.#stamps = checked.stamps;
    return this.#use(built.environment, built.commands, hooks);
  }

  /** The key, and the cache's environment of it, checked: never waits for a build (`#awaitBuild` does). */
  async #lookUpByKey(source: SourceRepo, pristine: PristineStore, inputs: SetupInputs): Promise<Found> {
    const identity = await environmentIdentity(pristine.path, source.baseCommit, this.#options.setup, inputs, this.#options.signal);
    // Marked in use before it is looked up, so that another run's eviction cannot remove it in between.
    this.#release = this.#cache.use(identity.key);
    // A run's own cache (without the sandbox) holds nothing yet: it builds.
    if (this.#privateRoot !== null) return { identity, environment: null, lookedUp: false };
    // Within the size limit, least recently used first; a crashed run's half-built environment goes too.
    this.#cache.evict();
    // Made before any build of this run, so that what it commits is newer than the exposures' directory.
    this.#cache.trustedAfter();
    return { identity, environment: await this.#lookUp(identity.key), lookedUp: true };
  }

  /**
   * Not in the cache: this run builds it, unless another run with the same setup is building it now; then it waits
   * for that build and takes what it made (the candidates of one best-of-N run share one build). prepare() releases the lock.
   */
  async #awaitBuild(found: Found): Promise<{ identity: EnvironmentIdentity; environment: BaseEnvironment | null }> {
    const { identity } = found;
    if (found.environment || !found.lookedUp) return { identity, environment: found.environment };
    const setupMs = this.#options.setupTimeoutMs * Math.max(1, this.#options.setup.length);
    const lock = await acquireBuildLock(this.#cache.root, identity.key, { signal: this.#options.signal, maxWaitMs: setupMs });
    this.#buildLock = lock;
    this.#brokenLock = lock?.broke ?? null;
    return { identity, environment: lock ? await this.#lookUp(identity.key) : null };
  }

  /**
   * The cached environment of `key`, checked to be the one that was built (environment.ts, checkEnvironment); null
   * when there is none, or it fails the check: then it is retired, and this run builds it again.
   */
  async #lookUp(key: string): Promise<BaseEnvironment | null> {
    const cached = this.#cache.find(key);
    if (!cached) return null;
    const checked = await checkEnvironmentInBackground(cached.dir, cached.record, { trustedAfter: this.#cache.trustedAfter() });
    if (checked.kind === "unsound") {
      this.#cache.retire(key);
      return null;
    }
    this.#seal = checked.seal;
    this.#stamps = checked.stamps;
    return loadEnvironment(cached.dir, cached.record, "reused");
  }

  /** The environment found or built, unless its setup wrote its own path into it (then setup runs in each checkout). */
  #use(environment: BaseEnvironment, setupCommands: readonly CommandRecord[], hooks: EnvironmentRunHooks): EnvironmentPrepared {
    const { record } = environment;
    if (record.pathBound.length > 0) {
      this.#noneReason = `setup wrote its own directory's path into ${record.pathBound.slice(0, 3).join(", ")}: it cannot be moved, so setup runs in each checkout`;
      return { kind: "ready", setupCommands };
    }
    this.#environment = environment;
    this.#source = environment.reused ? "reused" : "built";
    if (environment.reused) hooks.emit({ type: "environment.reused", key: record.key, builtBy: record.builtBy, setupMs: record.setupMs });
    const parts = [
      record.setupChanges.length > 0
        ? `changed tracked files (put back to the base): ${record.setupChanges.slice(0, 10).join(", ")}`
        : null,
      record.unignoredOutputs.length > 0
        ? `left files .gitignore does not cover (never part of the patch): ${record.unignoredOutputs.slice(0, 10).join(", ")}`
        : null,
    ].filter((part) => part !== null);
    if (parts.length > 0) hooks.warn({ path: "", rule: "setup_changed_tree", message: `a setup command ${parts.join("; ")}` });
    return { kind: "ready", setupCommands };
  }

  /**
   * What verification's checkouts are made from: null when there is no environment, or when it changed since it was
   * built (only an agent without the sandbox can reach it; in the sandbox the cache is hidden and the agent writes
   * only its own view). A changed one leaves the cache, and verification sets up its own checkout.
   */
  async forVerification(warn: (finding: PolicyFinding) => void): Promise<WorkspaceFrom | null> {
    const environment = this.#environment;
    const ahead = this.#checkAhead;
    this.#checkAhead = null;
    if (!environment || !this.#seal) return null;
    // In the sandbox too: a run without it, at the same time, can write the cache.
    const checked = await (ahead ?? checkEnvironmentInBackground(environment.dir, environment.record, { seal: this.#seal }, this.#stamps));
    if (checked.kind === "sound") return { environment, mode: this.mode };
    warn({ path: "", rule: "environment_modified", message: `${checked.why}: verification set up its own checkout instead` });
    this.#cache.retire(environment.key, this.#seal.inode);
    this.#environment = null;
    this.#noneReason = checked.why;
    return null;
  }

  /**
   * `forVerification`'s check, started now: once the agent and every process it started are gone (the sandbox's jail
   * ended), beside extraction, which reads only handoff's own copies. A later call starts a new one (each attempt's
   * agent comes before its own check); `forVerification` judges the last one.
   */
  checkAhead(): void {
    const environment = this.#environment;
    if (!environment || !this.#seal) return;
    const checked = checkEnvironmentInBackground(environment.dir, environment.record, { seal: this.#seal }, this.#stamps);
    this.#early.push(checked);
    this.#checkAhead = checked;
  }

  /** Whether verification runs setup again: only when the patch changed one of its inputs (or there is no environment). */
  verificationSetup(changedPaths: readonly string[], fromEnvironment: boolean): boolean {
    let decision: { ran: boolean; reason: string };
    if (this.#options.setup.length === 0) decision = { ran: false, reason: "no setup commands" };
    else if (!fromEnvironment) decision = { ran: true, reason: "no base environment: setup runs in the verification checkout" };
    else {
      const changed = changedPaths.filter((path) => this.#inputs?.matches(path));
      decision =
        changed.length > 0
          ? { ran: true, reason: `the patch changed setup inputs: ${changed.slice(0, 10).join(", ")}` }
          : { ran: false, reason: "the patch changed no setup input: the base environment's setup holds" };
    }
    this.#verificationSetup = decision;
    return decision.ran;
  }

  /** The persistent download caches a verification setup gets a throw-away copy of. */
  downloadsDir(): string {
    return this.#cache.downloadsDir();
  }

  /** Once no view of it is mounted: the environment may be evicted from then on. */
  release(): void {
    this.#release?.();
    this.#release = null;
    if (this.#privateRoot !== null) {
      try {
        removeTree(this.#privateRoot);
      } catch {
        // the next run without the sandbox removes it (sweepPrivateRoots)
      }
    }
    this.#endExposure?.();
    this.#endExposure = null;
  }

  /** result.json's `environment`. */
  record(): NonNullable<RunResult["environment"]> {
    const environment = this.#environment;
    const record = environment?.record ?? null;
    const keptCopies = environment !== null && this.mode === "copy" && this.#options.keepWorkspace;
    return {
      key: record?.key ?? null,
      workspaceMode: environment ? this.mode : "copy",
      workspaceModeReason: keptCopies ? "--keep-workspace" : this.#mode.reason,
      source: environment ? this.#source : "none",
      noneReason: environment ? null : this.#noneReason,
      builtBy: record?.builtBy ?? null,
      setupMs: record?.setupMs ?? null,
      cacheDir: this.#options.cacheDir,
      setupChanges: record ? [...record.setupChanges] : [],
      verificationSetup: this.#verificationSetup,
    };
  }
}

/**
 * When a phase started early must say it began: the lookup's own time counts, the time it then waited to be judged
 * (finished before the phase was reached) does not.
 */
function sinceFor(ahead: { readonly startedAt: number; readonly finishedAt: number | null }): number {
  const waited = ahead.finishedAt === null ? 0 : Math.max(0, Date.now() - ahead.finishedAt);
  return ahead.startedAt + waited;
}

/** The cache's lookup: the key, what it found (checked), and whether it looked at all (a run's own cache does not). */
interface Found {
  readonly identity: EnvironmentIdentity;
  readonly environment: BaseEnvironment | null;
  readonly lookedUp: boolean;
}

/** Removes the own caches of runs without the sandbox whose process is gone. */
function sweepPrivateRoots(parent: string): void {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    if (name === "downloads" || !ownerGone(name)) continue;
    try {
      removeTree(join(parent, name));
    } catch {
      rmSync(join(parent, name), { force: true });
    }
  }
}
