import { mkdirSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { resolveBackend } from "../../backends/index.js";
import type { ExternalAgentBackend, ExternalAgentResult } from "../agent/backend.js";
import { readConfig } from "./config.js";
import { buildEnvironment } from "./env.js";
import { ApprovalRequiredError, ArtifactWriteError, DirtySourceError } from "../lib/errors.js";
import type { Phase, RecordedEvent, RunnerEvent } from "./events.js";
import { type Extraction, extractPatch } from "../patch/extract.js";
import { existingRealPath, isInside } from "../lib/paths.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import { type RunOptions, type ResolvedOptions, resolveOptions } from "./options.js";
import { compilePolicy } from "../patch/rules/policy.js";
import { buildRunResult } from "../verdict/build-result.js";
import { minimalResult } from "../verdict/minimal-result.js";
import type { RunResult } from "../verdict/result.js";
import { RunDirectory, generateRunId } from "../run-dir/run-dir.js";
import { Redactor, envSecrets } from "../run-dir/redact.js";
import { RUN_MARKER_VARIABLE, runNames } from "../run-dir/run-names.js";
import { sweepCrashedRuns } from "../run-dir/crash-sweep.js";
import { type CommandRecord, TestLog, commandPassed, runShellCommands } from "../verify/shell-commands.js";
import { type SourceSnapshot, compareSnapshots, takeSourceSnapshot } from "../clone/source-snapshot.js";
import { type SourceRepo, inspectSource, readSourceStatus, sourceTarget } from "../clone/source-repo.js";
import { type RunFacts, decideOutcome } from "../verdict/decide.js";
import { type BaselineOutcome, type VerificationOutcome, runBaseline, runVerification } from "../verify/verify.js";
import { type PristineStore, type Workspace, createPristineStore, createWorkspace, removeTree } from "../clone/workspace.js";
import { runAgentSafely } from "../agent/agent-run.js";
import { Containment, type ProcessJail } from "../containment/containment.js";
import { containmentFindings } from "../containment/findings.js";
import { type SandboxChoice, chooseSandbox } from "../containment/sandbox.js";
import { type BaseForInputs, changedInputs, readBaseForInputs, stagedBlob } from "../verify/changed-inputs.js";
import { type VerificationInputs, findVerificationInputs, inputsRecord } from "../verify/inputs.js";
import { holdPackageJson } from "../verify/package-json.js";
import { type ChangedInput, holdSteps, inputViolations } from "../verify/test-edits.js";
import { type TestEvidence, testEvidenceRecord } from "../verify/test-evidence.js";
import { type HoldoutRecord, holdoutRecord } from "../verify/holdouts.js";

export interface RunnerHooks {
  /** Every event as it is written to events.jsonl (the CLI prints progress from these). */
  readonly onEvent?: (event: RecordedEvent) => void;
}

/**
 * The four-gate pipeline: approval, disposable clone + source invariant, patch extraction and validation,
 * verification owned by handoff. Bad input throws a UsageError before anything is created; once a run directory
 * exists, every path ends in a RunResult and a complete run directory.
 */
export class ExternalCodingRunner {
  readonly #hooks: RunnerHooks;
  constructor(hooks: RunnerHooks = {}) {
    this.#hooks = hooks;
  }

  async run(options: RunOptions): Promise<RunResult> {
    const startedAt = new Date();
    const source = await inspectSource(options.repo ?? process.cwd());
    const config = await readConfig(source);
    const resolved = resolveOptions(options, config, source.topLevel);
    await sweepCrashedRuns(resolved.runsDir);
    const backend: ExternalAgentBackend =
      typeof options.backend === "object" ? options.backend : resolveBackend({ name: resolved.backendName, agentCmd: options.agentCmd, bin: options.bin });
    const { dirty, unverified } = await readSourceStatus(source);
    if (dirty.length > 0 && !options.allowDirty) throw new DirtySourceError(dirty);
    if (!options.yes && !options.approve) throw new ApprovalRequiredError();
    const sandbox = await chooseSandbox(resolved.sandbox);
    // What decides verification is read from the base before anything is created: the agent's tree never names it.
    const base = await readBaseForInputs(source);
    const inputs = findVerificationInputs({
      commands: [...resolved.setup, ...resolved.verify],
      basePaths: base.paths,
      readBase: (path) => (path === "package.json" ? base.packageJson : null),
      protect: resolved.protect,
    });

    const runDir = RunDirectory.create(resolved.runsDir, options.runId ?? generateRunId(startedAt), new Redactor(envSecrets(resolved.envNames)));
    // Each holdout's files, for the record (result.json names them; their content never leaves memory).
    const holdouts = await Promise.all(resolved.holdouts.map((holdout) => holdoutRecord(sourceTarget(source), holdout)));
    const run = new PipelineRun(runDir, source, resolved, backend, options, startedAt, this.#hooks, dirty, sandbox, { base, inputs, holdouts });
    if (unverified.length > 0) run.extraWarnings.push(unverifiedFilteredWarning(unverified));
    try {
      return await run.execute();
    } finally {
      runDir.close();
    }
  }
}

/** What verification is judged against, read before the run: the base's verification inputs and the holdouts. */
interface VerificationBase {
  readonly base: BaseForInputs;
  readonly inputs: VerificationInputs;
  readonly holdouts: readonly HoldoutRecord[];
}

/** Files under one of the source's own filters that handoff (which runs none of them) could not tell clean or not. */
function unverifiedFilteredWarning(paths: readonly string[]): PolicyFinding {
  return {
    path: "",
    rule: "filtered_source_unverified",
    message: `${paths.length} file(s) of the source use a filter from its git config that handoff does not run, so it could not tell whether they have uncommitted changes (if they do, those are not part of the clone): ${paths.slice(0, 10).join(", ")}`,
  };
}

class PipelineRun {
  readonly phases: Record<string, number> = {};
  readonly testLog: TestLog;
  facts: { -readonly [K in keyof RunFacts]: RunFacts[K] } = {
    cancelled: null,
    sourceChanged: [],
    agent: null,
    runDirWrite: null,
    artifactError: null,
    patch: null,
    verification: null,
    held: null,
    baseline: null,
    verifyCommands: [],
    testEdits: null,
    holdoutCount: 0,
    tests: null,
    noVerify: null,
    setupFailed: null,
  };
  /** `--test-edits reject`: the changed verification inputs, as violations of the patch. */
  inputViolations: PolicyFinding[] = [];
  testRecord: TestEvidence | null = null;
  /** package.json as the patch left it (read once from the extraction's own index), null when absent. */
  patchedPackageJson: Buffer | null = null;
  agentResult: ExternalAgentResult | null = null;
  extraction: Extraction | null = null;
  setupRecords: CommandRecord[] = [];
  workspace: Workspace | null = null;
  scratch: string | null = null;
  cliHome: string | null = null;
  pristine: PristineStore | null = null;
  containment: Containment | null = null;
  extraWarnings: PolicyFinding[] = [];
  backendResultWritten = false;
  /** The source was compared with its snapshot after the last process handoff does not trust (setup, agent, verify). */
  sourceCheckedSinceLastCommand = false;

  readonly dir: RunDirectory;
  readonly source: SourceRepo;
  readonly options: ResolvedOptions;
  readonly backend: ExternalAgentBackend;
  readonly request: RunOptions;
  readonly startedAt: Date;
  readonly hooks: RunnerHooks;
  readonly sandbox: SandboxChoice;
  readonly verificationBase: VerificationBase;

  constructor(
    dir: RunDirectory,
    source: SourceRepo,
    options: ResolvedOptions,
    backend: ExternalAgentBackend,
    request: RunOptions,
    startedAt: Date,
    hooks: RunnerHooks,
    dirty: readonly string[],
    sandbox: SandboxChoice,
    verificationBase: VerificationBase,
  ) {
    this.sandbox = sandbox;
    this.verificationBase = verificationBase;
    this.dir = dir;
    this.source = source;
    this.options = options;
    this.backend = backend;
    this.request = request;
    this.startedAt = startedAt;
    this.hooks = hooks;
    this.testLog = new TestLog((bytes) => dir.writeFile("test.log", bytes));
    this.facts.verifyCommands = options.verify;
    this.facts.holdoutCount = options.holdouts.length;
    if (options.noVerify) this.facts.noVerify = { configVerifySkipped: options.configVerifySkipped };
    if (dirty.length > 0) {
      this.extraWarnings.push({
        path: "",
        rule: "dirty_source_not_cloned",
        message: `the source had ${dirty.length} uncommitted change(s) that are not part of the clone: ${dirty.slice(0, 10).join(", ")}`,
      });
    }
  }

  emit(event: RunnerEvent): void {
    const recorded = this.dir.event(event);
    this.hooks.onEvent?.(recorded);
  }

  get cancelled(): boolean {
    return this.request.signal?.aborted ?? false;
  }

  /** Nothing more is started once the run is cancelled or a write to its run directory failed (a full disk). */
  get halted(): boolean {
    return this.cancelled || this.dir.writeFailure !== null;
  }

  /** A write to the run directory that may fail: the failure is kept by the run directory and ends the run. */
  tryWrite(write: () => void): boolean {
    try {
      write();
      return true;
    } catch (error) {
      if (error instanceof ArtifactWriteError) return false;
      throw error;
    }
  }

  /**
   * Runs one phase: checkpoint, events, timing. A throw becomes an artifact error, never a lost run. A checkpoint
   * that cannot be written halts the run after this phase (a phase that makes something calls `track`, which throws).
   */
  async phase<T>(phase: Phase, body: () => Promise<T>): Promise<T | undefined> {
    this.dir.checkpoint(phase);
    this.emit({ type: "phase.started", phase });
    const started = Date.now();
    try {
      const value = await body();
      this.#finishPhase(phase, started, true);
      return value;
    } catch (error) {
      this.#finishPhase(phase, started, false, (error as Error).message);
      this.facts.artifactError ??= { detail: `${phase}_failed`, message: `${phase} failed: ${(error as Error).message}` };
      return undefined;
    }
  }

  #finishPhase(phase: Phase, started: number, ok: boolean, note?: string): void {
    const durationMs = Date.now() - started;
    this.phases[phase] = (this.phases[phase] ?? 0) + durationMs;
    this.emit({ type: "phase.finished", phase, durationMs, ok, ...(note ? { note } : {}) });
  }

  writeRequest(): void {
    const o = this.options;
    this.dir.writeJson("request.json", {
      runId: this.dir.runId,
      nonce: this.dir.nonce,
      task: this.request.task,
      repo: { path: this.source.topLevel, baseCommit: this.source.baseCommit },
      backend: { name: this.backend.name, model: o.model, bin: this.request.bin ?? null, agentCmd: this.request.agentCmd ?? null },
      commands: { setup: o.setup, verify: o.verify, baseline: this.request.baseline ?? false },
      noVerify: o.noVerify,
      testEdits: o.testEdits,
      junit: o.junit,
      // Never the content: the run directory is reachable by an agent without the sandbox.
      holdouts: o.holdouts.map((holdout, index) => ({
        source: holdout.source,
        sha256: holdout.sha256,
        bytes: holdout.bytes.length,
        files: this.verificationBase.holdouts[index]?.files ?? [],
      })),
      limits: { timeoutMs: o.timeoutMs, idleTimeoutMs: o.idleTimeoutMs, verifyTimeoutMs: o.verifyTimeoutMs },
      policy: o.policy,
      verificationInputs: inputsRecord(this.verificationBase.inputs),
      containment: { sandbox: o.sandbox, verifyNetwork: o.verifyNetwork, caps: o.caps },
      env: o.envNames,
      allowDirty: this.request.allowDirty ?? false,
      keepWorkspace: this.request.keepWorkspace ?? false,
      workspacesDir: o.workspacesDir,
      cliHomesDir: o.cliHomesDir,
    });
  }

  async execute(): Promise<RunResult> {
    this.tryWrite(() => {
      this.writeRequest();
      for (const [name, content] of [["changes.patch", ""], ["test.log", ""]] as const) this.dir.writeFile(name, content);
    });
    this.emit({ type: "run.started", runId: this.dir.runId, repo: this.source.topLevel, baseCommit: this.source.baseCommit, backend: this.backend.name });
    const sandbox = this.sandbox;
    this.emit({
      type: "sandbox.chosen",
      sandbox: sandbox.kind,
      verifyNetwork: this.options.verifyNetwork,
      reason: sandbox.kind === "none" ? (sandbox.reason ?? "--sandbox none") : null,
    });
    if (this.halted) return this.finish(null);

    const approved = await this.phase("approval", async () => {
      if (this.request.yes) return true;
      return this.request.approve!(
        `Let ${this.backend.name} edit a disposable clone of ${this.source.topLevel} at ${this.source.baseCommit.slice(0, 12)}? (the repository itself stays read-only)`,
      );
    });
    if (!approved) {
      if (approved === false) this.facts.cancelled = "approval_declined";
      return this.finish(null);
    }

    // Only this first snapshot stops for a cancel: the later ones decide whether the source held, and must finish.
    const before = await this.phase("snapshot", () => takeSourceSnapshot(this.source, this.request.signal));
    if (!before) return this.finish(null);
    try {
      await this.pipeline(before);
    } finally {
      if (this.cancelled) this.facts.cancelled ??= "interrupted";
    }
    return this.finish(before);
  }

  async pipeline(before: SourceSnapshot): Promise<void> {
    const o = this.options;
    if (this.halted) return;
    this.workspace = (await this.phase("clone", async () => {
      // Recorded before they exist, so a crash between the two leaves nothing that the sweep does not know of.
      const names = runNames(this.dir.runId, this.dir.nonce);
      const scratch = join(o.workspacesDir, names.scratch);
      const workspaceRoot = join(o.workspacesDir, names.workspace);
      this.dir.track({ scratch, workspaceRoot });
      mkdirSync(o.workspacesDir, { recursive: true, mode: 0o700 });
      mkdirSync(scratch, { mode: 0o700 });
      this.scratch = scratch;
      this.pristine = await createPristineStore(this.source, this.scratch, this.request.signal);
      return await createWorkspace(this.source, this.pristine, workspaceRoot, this.request.signal);
    })) ?? null;
    const ws = this.workspace;
    if (!ws || this.halted) return;
    const containment = this.createContainment(this.scratch!);
    const workspaceJail = (role: "setup" | "agent", label: string, extraWritable: readonly string[] = []): ProcessJail =>
      containment.jail({
        role,
        label,
        cwd: ws.workTree,
        writable: [ws.workTree, ws.home, ws.tmp, ...extraWritable],
        // The clone's git metadata and the gitfile that points at it: readable, never writable.
        readOnly: [ws.agentGitDir, join(ws.workTree, ".git")],
      });

    // The nonce marks every process the agent starts, so a leftover one can be found by its environment (HANDOFF_RUN_ID
    // alone could be another run's: a run id is unique only inside its runs directory).
    const agentEnv = buildEnvironment({
      home: ws.home,
      tmp: ws.tmp,
      extraNames: o.envNames,
      set: { HANDOFF_RUN_ID: this.dir.runId, [RUN_MARKER_VARIABLE]: this.dir.nonce },
    });
    if (o.setup.length > 0) {
      await this.phase("setup", async () => {
        this.setupRecords = await runShellCommands(o.setup, {
          phase: "setup",
          cwd: ws.workTree,
          env: { ...buildEnvironment({ home: ws.home, tmp: ws.tmp }), CI: "true" },
          timeoutMs: o.verifyTimeoutMs,
          signal: this.request.signal,
          log: this.testLog,
          onCommand: (command) => this.emit({ type: "command.started", phase: "setup", command }),
          jail: (command) => workspaceJail("setup", command),
        });
      });
      const failed = this.setupRecords.find((record) => !commandPassed(record));
      if (failed) this.facts.setupFailed = failed;
      if (failed || this.halted) return;
    }

    this.agentResult = (await this.phase("agent", async () => {
      const cliHome = join(o.cliHomesDir, runNames(this.dir.runId, this.dir.nonce).cliHome);
      this.dir.track({ cliHome });
      mkdirSync(o.cliHomesDir, { recursive: true, mode: 0o700 });
      mkdirSync(cliHome, { mode: 0o700 });
      this.cliHome = cliHome;
      const jail = workspaceJail("agent", this.backend.name, [this.cliHome]);
      try {
        return await runAgentSafely(this.backend, this.request.task, {
          cwd: ws.workTree,
          env: agentEnv,
          signal: this.request.signal ?? new AbortController().signal,
          deadline: Date.now() + o.timeoutMs,
          idleTimeoutMs: o.idleTimeoutMs,
          model: o.model,
          executable: this.request.bin ?? null,
          homeDir: this.cliHome,
          userEnv: { ...process.env },
          jail,
          emit: (event) => this.emit(event),
        });
      } finally {
        await jail.finish();
      }
    })) ?? null;
    this.facts.agent = this.agentResult;
    for (const warning of this.agentResult?.warnings ?? []) this.extraWarnings.push({ ...warning });
    this.writeBackendResult();
    if (this.halted) return;

    this.extraction = (await this.phase("extract", async () => {
      const extraction = await extractPatch({ source: this.source, workspace: ws, policy: compilePolicy(o.policy), privateParent: this.scratch!, pristine: this.pristine!, signal: this.request.signal });
      await this.judgeTestEdits(extraction);
      return extraction;
    })) ?? null;
    // After extraction (it reads only handoff's own copies), so that with no command left to run this check is the
    // last one and covers the whole run: a third snapshot would cost as much and see nothing new.
    const afterAgent = await this.phase("recheck", () => takeSourceSnapshot(this.source));
    if (afterAgent) {
      this.noteSourceChanges(before, afterAgent, "after_agent");
      this.sourceCheckedSinceLastCommand = true;
    }
    if (!this.extraction) return;
    const extracted = this.extraction.patch;
    if (!this.tryWrite(() => this.dir.writeRecordedFile("changes.patch", extracted))) return;
    this.facts.patch = { empty: this.extraction.patch.length === 0, violations: [...this.extraction.violations, ...this.inputViolations] };

    const agentFinished = this.agentResult?.outcome.kind === "finished";
    const verifiable = agentFinished && !this.facts.patch.empty && this.facts.patch.violations.length === 0 && this.facts.sourceChanged.length === 0;
    if (!verifiable || this.halted) return;
    const extraction = this.extraction;
    const common = {
      privateGitDir: extraction.privateGitDir,
      baseCommit: this.source.baseCommit,
      setup: o.setup,
      verify: o.verify,
      timeoutMs: o.verifyTimeoutMs,
      scratchParent: this.scratch!,
      log: this.testLog,
      signal: this.request.signal,
      onCommand: (phase: string, command: string) => this.emit({ type: "command.started", phase, command }),
      containment,
      holdouts: o.holdouts,
      junit: o.junit,
    };
    // Setup and verify commands run code from the patch: the source is checked again at the end.
    if (o.setup.length > 0 || o.verify.length > 0) this.sourceCheckedSinceLastCommand = false;
    if (this.request.baseline && o.verify.length > 0) {
      this.facts.baseline = (await this.phase("baseline", () => runBaseline(common))) ?? null;
    }
    const applied = { patch: extraction.patch, expectedListing: extraction.listing };
    this.facts.verification = (await this.phase("verify", () => runVerification({ ...common, ...applied, label: "verify", hold: [] }))) ?? null;
    const changed = this.facts.testEdits?.changed ?? [];
    if (this.facts.verification?.kind === "passed" && o.testEdits === "base" && changed.length > 0 && !this.halted) {
      const hold = holdSteps(changed, this.heldPackageJson(changed));
      this.facts.held = (await this.phase("held", () => runVerification({ ...common, ...applied, label: "held", hold }))) ?? null;
    }
    this.testRecord = this.testEvidence();
    this.facts.tests = this.testRecord;
  }

  /** Which verification inputs the patch changed; under `--test-edits reject`, each is a violation of the patch. */
  async judgeTestEdits(extraction: Extraction): Promise<void> {
    const { base, inputs } = this.verificationBase;
    const touchesPackageJson = extraction.files.some((file) => file.path === "package.json");
    this.patchedPackageJson = touchesPackageJson ? await stagedBlob(extraction.privateGitDir, extraction.listing, "package.json") : base.packageJson;
    const changed = changedInputs(inputs, extraction.files, { base: base.packageJson, patched: this.patchedPackageJson });
    this.facts.testEdits = { policy: this.options.testEdits, changed };
    if (changed.length > 0) this.emit({ type: "verification.inputs_changed", policy: this.options.testEdits, paths: changed.map((input) => input.path) });
    if (this.options.testEdits === "reject") this.inputViolations = inputViolations(changed);
  }

  /** package.json as patched with the base's scripts, for the run held to the base; null when its scripts did not change. */
  heldPackageJson(changed: readonly ChangedInput[]): Buffer | null {
    const input = changed.find((entry) => entry.path === "package.json" && entry.entries?.length);
    const base = this.verificationBase.base.packageJson;
    return input && base && this.patchedPackageJson ? holdPackageJson(base, this.patchedPackageJson) : null;
  }

  /** result.json's `verification.tests`: the JUnit evidence as patched, compared with the base's when there is one. */
  testEvidence() {
    if (this.options.junit.length === 0) return null;
    const patched = this.facts.verification && "tests" in this.facts.verification ? this.facts.verification.tests : null;
    if (!patched) return null;
    return testEvidenceRecord(patched, this.facts.baseline?.tests ?? null, this.options.junit);
  }

  /** What every process of this run may see: hidden are the source, handoff's own dirs, the user's home, /tmp. */
  createContainment(scratch: string | null): Containment {
    const o = this.options;
    const home = process.env.HOME?.startsWith("/") ? process.env.HOME : homedir();
    const hidden = [
      home,
      this.source.topLevel,
      o.runsDir,
      o.workspacesDir,
      o.cliHomesDir,
      "/tmp",
      tmpdir(),
      // Sockets that reach past any namespace: the user's agents (ssh, gpg, dbus) and container engines.
      "/run/user",
      "/run/docker.sock",
      "/run/containerd",
      "/run/podman",
    ];
    // The held-out checks, read by handoff before the run, are never seen by the agent or the code under test:
    // hidden on their own where no hidden place already covers them.
    const realHidden = hidden.map((path) => existingRealPath(path) ?? path);
    const holdouts = o.holdouts.map((holdout) => holdout.source).filter((path) => !realHidden.some((root) => isInside(path, root)));
    this.containment = new Containment({
      choice: this.sandbox,
      caps: o.caps,
      verifyNetwork: o.verifyNetwork,
      runId: this.dir.runId,
      nonce: this.dir.nonce,
      hidden: [...hidden, ...holdouts],
      sourceRoot: this.source.topLevel,
      scratch: scratch ?? "",
      path: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      onCgroup: (dirs) => this.dir.track({ cgroups: [...dirs] }),
    });
    return this.containment;
  }

  noteSourceChanges(before: SourceSnapshot, after: SourceSnapshot, when: "after_agent" | "at_end"): void {
    const changed = compareSnapshots(before, after);
    if (changed.length === 0) return;
    this.emit({ type: "source.changed", when, changed: changed.slice(0, 200) });
    this.facts.sourceChanged = [...new Set([...this.facts.sourceChanged, ...changed])];
  }

  async finish(before: SourceSnapshot | null): Promise<RunResult> {
    if (before && !this.sourceCheckedSinceLastCommand) {
      const atEnd = await this.phase("finish", () => takeSourceSnapshot(this.source));
      if (atEnd) this.noteSourceChanges(before, atEnd, "at_end");
    }
    if (this.cancelled) this.facts.cancelled ??= "interrupted";
    const containment = (this.containment ?? this.createContainment(null)).summary();
    const keep = this.request.keepWorkspace === true && this.workspace !== null;
    this.writeBackendResult();
    let result = this.buildResult(containment, keep);
    let written = this.writeResult(result);
    if (!written) {
      // That failure is on record now: the verdict names it, and a result.json cut to its first entries carries it.
      result = minimalResult(this.buildResult(containment, keep));
      written = this.writeResult(result);
    }
    if (keep) this.dir.release(["workspaceRoot", "cliHome"]);
    const ending = { done: true, terminalReason: result.terminalReason, detail: result.detail };
    // Done, with its clean-up pending until the directories are gone: a crash in between is cleaned up by the next
    // start's sweep, which keeps this verdict.
    const end = () => {
      this.dir.checkpoint("finish", { ...ending, cleanup: "pending" });
      this.emit({ type: "run.finished", terminalReason: result.terminalReason, detail: result.detail });
    };
    if (written) end();
    const cleaned = await this.cleanUp(keep);
    // The clean-up may have freed the space a failed write needed: the run directory is then complete after all.
    this.writeBackendResult();
    if (!written) {
      written = this.writeResult(result);
      if (written) end();
    }
    if (written && cleaned) this.dir.checkpoint("finish", { ...ending, cleanup: "done" });
    return result;
  }

  buildResult(containment: ReturnType<Containment["summary"]>, keep: boolean): RunResult {
    this.facts.runDirWrite = this.dir.writeFailure;
    // Redacted here, not only in the file: `run` returns and --json prints what result.json says.
    return this.dir.redacted("result.json", buildRunResult({
      runId: this.dir.runId,
      runDir: this.dir.path,
      verdict: decideOutcome(this.facts),
      source: this.source,
      backendName: this.backend.name,
      agent: this.agentResult,
      extraction: this.extraction,
      extraWarnings: [...this.extraWarnings, ...containmentFindings(containment)],
      containment,
      setupRecords: this.setupRecords,
      verification: this.facts.verification as VerificationOutcome | null,
      held: this.facts.held,
      baseline: this.facts.baseline as BaselineOutcome | null,
      verify: this.options.verify,
      testEdits: this.facts.testEdits,
      inputViolations: this.inputViolations,
      holdouts: this.verificationBase.holdouts,
      tests: this.testRecord,
      verificationSkipped: this.options.noVerify ? "no_verify" : null,
      sourceChanged: this.facts.sourceChanged,
      startedAt: this.startedAt,
      phases: this.phases,
      workspace: keep ? this.workspace!.workTree : null,
    }));
  }

  /** backend-result.json: what the backend returned, or `ran: false`; again at the end if it could not be written. */
  writeBackendResult(): void {
    if (this.backendResultWritten) return;
    const record = this.agentResult ? { backend: this.backend.name, ...this.agentResult } : { backend: this.backend.name, ran: false };
    this.backendResultWritten = this.tryWrite(() => this.dir.writeJson("backend-result.json", record));
  }

  /** result.json, into the space the run directory reserved for it. */
  writeResult(result: RunResult): boolean {
    return this.tryWrite(() => this.dir.writeReserved("result.json", `${JSON.stringify(result, null, 2)}\n`));
  }

  /** Stops the containment and removes the run's directories; false when something could not be removed. */
  async cleanUp(keep: boolean): Promise<boolean> {
    let cleaned = true;
    const remove = (path: string) => {
      try {
        removeTree(path);
      } catch {
        cleaned = false;
      }
    };
    try {
      await this.containment?.close();
    } catch {
      cleaned = false;
    }
    if (this.scratch) remove(this.scratch);
    if (this.cliHome && !keep) remove(this.cliHome);
    if (this.workspace && !keep) remove(this.workspace.root);
    return cleaned;
  }
}
