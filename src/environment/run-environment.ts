import type { PristineStore, WorkspaceFrom } from "../clone/workspace.js";
import type { SourceRepo } from "../clone/source-repo.js";
import type { ProcessJail } from "../containment/containment.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import type { RunnerEvent } from "../run/events.js";
import type { ResolvedOptions } from "../run/options.js";
import type { RunResult } from "../verdict/result.js";
import type { CommandRecord, TestLog } from "../verify/shell-commands.js";
import { buildBaseEnvironment } from "./build.js";
import { acquireBuildLock } from "./build-lock.js";
import { EnvironmentCache } from "./cache-store.js";
import { type BaseEnvironment, environmentTampered, loadEnvironment } from "./environment.js";
import { type EnvironmentIdentity, environmentIdentity } from "./environment-key.js";
import { type SetupInputs, setupInputs } from "./setup-inputs.js";
import type { WorkspaceMode } from "./view.js";
import type { WorkspaceModeChoice } from "./workspace-mode.js";

/** What a run lends the environment: its phases, events, warnings, test log and the setup commands' jail. */
export interface EnvironmentRunHooks {
  readonly phase: <T>(name: "environment" | "setup", body: () => Promise<T>) => Promise<T | undefined>;
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
  readonly #sandboxed: boolean;
  readonly #cache: EnvironmentCache;
  #environment: BaseEnvironment | null = null;
  #source: "reused" | "built" | "none" = "none";
  #noneReason: string | null = null;
  #inputs: SetupInputs | null = null;
  #verificationSetup: { ran: boolean; reason: string } | null = null;
  #release: (() => void) | null = null;
  /** Held while this run builds the environment (src/environment/build-lock.ts). */
  #buildLock: (() => void) | null = null;

  constructor(options: ResolvedOptions, mode: WorkspaceModeChoice, sandboxed: boolean) {
    this.#options = options;
    this.#mode = mode;
    this.#sandboxed = sandboxed;
    this.#cache = new EnvironmentCache(options.cacheDir, options.cacheLimitBytes);
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
    if (options.setup.length === 0 && this.#mode.mode === "copy") {
      this.#noneReason = "no setup commands, and workspaces are copies";
      return { kind: "ready", setupCommands: [] };
    }
    const inputs = setupInputs(options.setup, options.setupInputs);
    this.#inputs = inputs;
    // The lookup is a phase of its own: what it throws (a cache it cannot read) is a verdict, never a lost run.
    try {
      const found = await hooks.phase("environment", () => this.#find(source, pristine, inputs));
      // A signal that came during the lookup's synchronous part is read in the event loop's next poll: two turns of the
      // loop let it be handled before a build could start.
      for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
      if (!found || options.signal?.aborted) return { kind: "stopped", setupCommands: [] };
      if (found.environment) return this.#use(found.environment, [], hooks);
      return await this.#build(found.identity, source, pristine, scratch, runId, hooks);
    } finally {
      // Whatever happened, the next run with the same setup may build it now (or find what this one built).
      this.#buildLock?.();
      this.#buildLock = null;
    }
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
        timeoutMs: options.verifyTimeoutMs,
        log: hooks.log,
        signal: options.signal,
        onCommand: (command) => hooks.emit({ type: "command.started", phase: "setup", command }),
        jail: hooks.jail,
      }),
    );
    if (!built) return { kind: "stopped", setupCommands: [] };
    if (built.kind !== "built") return { kind: "stopped", setupCommands: built.commands };
    this.#cache.evict();
    return this.#use(built.environment, built.commands, hooks);
  }

  async #find(
    source: SourceRepo,
    pristine: PristineStore,
    inputs: SetupInputs,
  ): Promise<{ identity: EnvironmentIdentity; environment: BaseEnvironment | null }> {
    const identity = await environmentIdentity(pristine.path, source.baseCommit, this.#options.setup, inputs, this.#options.signal);
    // Marked in use before it is looked up, so that another run's eviction cannot remove it in between.
    this.#release = this.#cache.use(identity.key);
    // Within the size limit, least recently used first; a crashed run's half-built environment goes too.
    this.#cache.evict();
    const cached = this.#lookUp(identity.key);
    if (cached) return { identity, environment: cached };
    // Not there: this run builds it, unless another run with the same setup is building it now; then it waits for that
    // build and takes what it made (the candidates of one best-of-N run share one build). prepare() releases the lock.
    this.#buildLock = await acquireBuildLock(this.#cache.root, identity.key, this.#options.signal);
    return { identity, environment: this.#buildLock ? this.#lookUp(identity.key) : null };
  }

  /** The cached environment of `key`, checked unmodified; null when there is none (or it was modified). */
  #lookUp(key: string): BaseEnvironment | null {
    const cached = this.#cache.find(key);
    if (!cached) return null;
    const environment = loadEnvironment(cached.dir, cached.record, true);
    if (cached.record.pathBound.length === 0 && environmentTampered(environment)) {
      // Written after its build (only a run without the sandbox could reach it): never used again.
      this.#cache.removeEnvironment(key);
      return null;
    }
    return environment;
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
  forVerification(warn: (finding: PolicyFinding) => void): WorkspaceFrom | null {
    const environment = this.#environment;
    if (!environment) return null;
    const tampered = this.#sandboxed ? null : environmentTampered(environment);
    if (tampered === null) return { environment, mode: this.mode };
    warn({ path: "", rule: "environment_modified", message: `${tampered}: verification set up its own checkout instead` });
    this.#cache.removeEnvironment(environment.key);
    this.#environment = null;
    this.#noneReason = tampered;
    return null;
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
