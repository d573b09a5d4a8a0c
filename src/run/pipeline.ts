import { mkdirSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import type { BackendResultJson } from "../run-dir/artifacts/backend-result.js";
import type { ExternalAgentBackend, ExternalAgentResult } from "../agent/backend.js";
import { type AgentTurn, runAgentSafely, turnResult } from "../agent/agent-run.js";
import { SessionHome } from "../agent/session-home.js";
import { askApproval, isApproved } from "../approval/approval.js";
import { type DisposableClone, startClone } from "../clone/clone.js";
import { type SourceSnapshot, compareSnapshots, takeSourceSnapshot } from "../clone/source-snapshot.js";
import type { SourceRepo } from "../clone/source-repo.js";
import { type PristineStore, afterOwnWrites, createWorkspace, removeTree } from "../clone/workspace.js";
import { unmountAllUnderEach } from "../environment/overlay.js";
import { RunEnvironment } from "../environment/run-environment.js";
import type { WorkspaceModeChoice } from "../environment/workspace-mode.js";
import { Containment, type ContainmentSummary, type ProcessJail } from "../containment/containment.js";
import { containmentFindings } from "../containment/findings.js";
import { hiddenPaths, userHome } from "../containment/hidden-paths.js";
import { findToolchains } from "../containment/toolchains.js";
import { setupRules } from "../egress/setup-presets.js";
import { type ProgramsFound, checkProgramsAndLookUp, lookupSettles } from "../verify/check-programs.js";
import type { ProgramUnavailable } from "../vocabulary/events.js";
import type { SandboxChoice } from "../containment/sandbox.js";
import { MAX_CHANGED_PATHS } from "../patch/changed-paths.js";
import { type Extraction, extractPatch } from "../patch/extract.js";
import { readUpperChanges } from "../patch/upper-changes.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import { compilePolicy } from "../patch/rules/policy.js";
import type { RunDirectory } from "../run-dir/run-dir.js";
import { RUN_MARKER_VARIABLE, runNames } from "../vocabulary/run-names.js";
import { buildRunResult } from "../verdict/build-result.js";
import { type RunFacts, type Verdict, decideOutcome } from "../verdict/decide.js";
import { git } from "../process/git.js";
import { feedbackInput } from "../repair/feedback-input.js";
import { handoffFeedback } from "../repair/feedback.js";
import { KEPT_SESSION_MS, keptHomeTaken } from "../repair/kept-home.js";
import { repairable } from "../repair/repairable.js";
import { minimalResult } from "../verdict/minimal-result.js";
import type { RunResult } from "../verdict/result.js";
import type { BaseForInputs } from "../verify/changed-inputs.js";
import type { HoldoutRecord } from "../verify/holdouts.js";
import { type InputChanges, judgeInputChanges } from "../verify/input-changes.js";
import type { VerificationInputs } from "../verify/inputs.js";
import { type CommandRecord, TestLog, commandPassed, runShellCommands } from "../verify/shell-commands.js";
import { holdSteps } from "../verify/test-edits.js";
import { type TestEvidence, testEvidenceRecord } from "../verify/test-evidence.js";
import { type BaselineOutcome, type VerificationOutcome, runBaseline, runVerification } from "../verify/verify.js";
import { buildEnvironment } from "../process/env.js";
import type { RecordedEvent } from "../vocabulary/events.js";
import type { ResolvedOptions } from "./options.js";
import { requestRecord } from "./request-record.js";
import { type EventHook, RunRecorder } from "./run-recorder.js";

export interface RunnerHooks {
  /** Every event as it is written to events.jsonl (the CLI prints progress from these). */
  /** With `wants`, the types it uses (src/run/run-recorder.ts). */
  readonly onEvent?: EventHook;
  /** A candidates run (src/many/candidates.ts): each candidate's events with its number; without it they go to `onEvent`. */
  readonly onCandidateEvent?: (candidate: number, event: RecordedEvent) => void;
  /**
   * The verdict, as soon as result.json holds it: before the workspaces are removed, which can take many seconds after
   * a big `node_modules` (the CLI prints its verdict line here). `run` still returns after the clean-up, with the
   * result its timing is added to. Not called when result.json could not be written, nor for a candidates run.
   */
  readonly onDecided?: (result: RunResult) => void;
}

/** What verification is judged against, read before the run: the base's verification inputs and the holdouts. */
export interface VerificationBase {
  readonly base: BaseForInputs;
  readonly inputs: VerificationInputs;
  readonly holdouts: readonly HoldoutRecord[];
}

/** Everything the runner's preflight settled before the run directory existed. */
export interface RunSetup {
  readonly dir: RunDirectory;
  readonly source: SourceRepo;
  readonly options: ResolvedOptions;
  readonly backend: ExternalAgentBackend;
  readonly sandbox: SandboxChoice;
  /** Overlay views or copies (src/environment/workspace-mode.ts). */
  readonly workspaceMode: WorkspaceModeChoice;
  readonly verificationBase: VerificationBase;
  readonly startedAt: Date;
  readonly hooks: RunnerHooks;
  /** Warnings known before the run starts (a dirty or filtered source). */
  readonly warnings: readonly PolicyFinding[];
}

/** Gate 3's result: the extracted patch, the verification inputs it changed, and whether changes.patch holds it. */
interface JudgedPatch {
  readonly extraction: Extraction;
  readonly inputs: InputChanges;
  readonly saved: boolean;
}

/** Gate 4's result: each verification run (null when it did not run) and the tests' evidence. */
interface Verification {
  readonly baseline: BaselineOutcome | null;
  readonly verify: VerificationOutcome | null;
  readonly held: VerificationOutcome | null;
  readonly tests: TestEvidence | null;
}

/** One attempt in a prepared clone: what the agent did, the patch it left, and how that patch verified. */
interface Attempt {
  readonly agent: ExternalAgentResult | null;
  readonly patch: JudgedPatch | null;
  readonly verification: Verification | null;
}

/** An attempt as the run keeps it: its number, its own verdict, and the feedback sent after it (a run-directory path). */
interface AttemptRecord {
  readonly number: number;
  readonly attempt: Attempt;
  readonly verdict: Verdict;
  readonly durationMs: number;
  feedback: string | null;
}

/**
 * One run, gate by gate: approval → clone (+ setup) → attempt (agent → patch → verify) → verdict. Each gate's
 * result is kept once, in `gates`; the decider's facts and result.json are both read from it at the end.
 */
export class PipelineRun {
  readonly #setup: RunSetup;
  readonly #record: RunRecorder;
  readonly #testLog: TestLog;
  readonly #gates: { clone: DisposableClone | null; setup: readonly CommandRecord[]; attempts: AttemptRecord[] } = {
    clone: null,
    setup: [],
    attempts: [],
  };
  /** What the run itself met, outside any one gate. */
  readonly #run = {
    cancelled: null as RunFacts["cancelled"],
    sourceChanged: [] as readonly string[],
    warnings: [] as PolicyFinding[],
    /** The source was compared with its snapshot after the last process handoff does not trust (setup, agent, verify). */
    sourceCheckedSinceLastCommand: false,
    /** backend-result.json holds the last attempt's record. */
    backendResultCurrent: false,
    /** Why the run made no further attempt although the last one could have been repaired. */
    attemptsStopped: null as string | null,
    /** The baseline runs once: every attempt is compared with the same base. */
    baseline: undefined as BaselineOutcome | null | undefined,
    /** The end of `--total-timeout` (epoch ms), or null. */
    totalDeadline: null as number | null,
    /** The private CLI home was kept for `handoff resume`. */
    sessionKept: false,
    /** A program the commands start that the sandbox cannot find or start (checked before the agent). */
    programUnavailable: null as ProgramUnavailable | null,
    /** Where the setup-programs check's sandbox found the verify commands' programs too (check-programs.ts, lookupSettles). */
    verifyProgramsFound: null as ProgramsFound | null,
    /** The hosts the agent and setup were refused, one per host and process (the containment's egress_blocked events). */
    egressBlocked: [] as { readonly role: string; readonly host: string; readonly port: number; readonly reason: string }[],
  };
  /** What the run made and must remove (or keep, with --keep-workspace). */
  readonly #made = { scratch: null as string | null, containment: null as Containment | null };
  /** The base environment the workspaces are made from (src/environment/run-environment.ts). */
  readonly #env: RunEnvironment;
  /** The agent CLI's private home: the same for every turn of the run. */
  readonly #home: SessionHome;

  constructor(setup: RunSetup) {
    this.#setup = setup;
    this.#record = new RunRecorder(setup.dir, setup.hooks.onEvent, setup.options.signal);
    this.#testLog = new TestLog((bytes) => setup.dir.writeFile("test.log", bytes));
    this.#run.warnings.push(...setup.warnings);
    this.#home = new SessionHome(setup.dir, setup.options.cliHomesDir, setup.options.continueFrom?.home ?? null);
    this.#env = new RunEnvironment(setup.options, setup.workspaceMode, setup.sandbox.kind !== "none");
    if (setup.options.totalTimeoutMs !== null) this.#run.totalDeadline = setup.startedAt.getTime() + setup.options.totalTimeoutMs;
  }

  /** The attempt that decides the verdict: the last one. */
  get #last(): AttemptRecord | null {
    return this.#gates.attempts.at(-1) ?? null;
  }

  async execute(): Promise<RunResult> {
    const { dir, source, options, backend, sandbox } = this.#setup;
    this.#record.tryWrite(() => {
      dir.writeJson(
        "request.json",
        requestRecord({ runId: dir.runId, nonce: dir.nonce, source, backendName: backend.name, options, ...this.#setup.verificationBase }),
      );
      for (const [name, content] of [
        ["changes.patch", ""],
        ["test.log", ""],
      ] as const)
        dir.writeFile(name, content);
    });
    this.#record.emit({
      type: "run.started",
      runId: dir.runId,
      repo: source.topLevel,
      baseCommit: source.baseCommit,
      backend: backend.name,
    });
    this.#record.emit({
      type: "sandbox.chosen",
      sandbox: sandbox.kind,
      verifyNetwork: options.verifyNetwork,
      reason: sandbox.kind === "none" ? (sandbox.reason ?? "--sandbox none") : null,
    });
    if (this.#record.halted || !(await this.#approve())) return this.#finish(null);
    // Only this first snapshot stops for a cancel: the later ones decide whether the source held, and must finish.
    const before = await this.#record.phase("snapshot", () => takeSourceSnapshot(source, options.signal));
    if (!before) return this.#finish(null);
    try {
      const clone = await this.#clone();
      if (clone && (await this.#runSetup(clone)) && (await this.#checkVerifyPrograms(clone))) await this.#attempts(clone, before);
    } finally {
      if (this.#record.cancelled) this.#run.cancelled ??= "interrupted";
    }
    return this.#finish(before);
  }

  /** Gate 1. A declined run ends user_cancelled; a question that fails is an artifact error. */
  async #approve(): Promise<boolean> {
    const { source, backend, options } = this.#setup;
    const subject = { backendName: backend.name, repo: source.topLevel, baseCommit: source.baseCommit };
    const approval = await this.#record.phase("approval", () => askApproval(options.approval, subject));
    if (approval?.kind === "declined") this.#run.cancelled = "approval_declined";
    return approval !== undefined && isApproved(approval);
  }

  /**
   * Gate 2: the disposable clone, and the containment every later process runs in. The pristine store first, then the
   * base environment (found in the cache or built: the setup commands run there), then the agent's workspace from it.
   */
  async #clone(): Promise<DisposableClone | null> {
    const { dir, source, options } = this.#setup;
    if (this.#record.halted) return null;
    const names = runNames(dir.runId, dir.nonce);
    const workspaceRoot = join(options.workspacesDir, names.workspace);
    const started = await this.#record.phase("clone", () =>
      startClone({
        source,
        workspacesDir: options.workspacesDir,
        scratch: join(options.workspacesDir, names.scratch),
        workspaceRoot,
        signal: options.signal,
        // Recorded before they exist, so a crash between the two leaves nothing that the sweep does not know of.
        onPlanned: (paths) => dir.track(paths),
        onScratch: (scratch) => (this.#made.scratch = scratch),
      }),
    );
    if (!started || this.#record.halted) return null;
    this.#containment(started.scratch);
    // The cache's lookup runs beside the program check, and is judged after it, as before (run-environment.ts, lookAhead).
    this.#env.lookAhead(source, started.pristine);
    // The setup commands' programs before anything is built; the verify commands' too when no setup could add any.
    const early = options.setup.length > 0 ? { setup: options.setup } : { verify: options.verify };
    // In the sandbox, the verify commands' programs are looked up in the same start (judged later: #checkVerifyPrograms).
    const lookUpFor = options.setup.length > 0 && this.#made.containment!.sandboxed ? options.verify : [];
    if (!(await this.#checkPrograms(early, started.scratch, null, lookUpFor))) return null;
    const prepared = await this.#env.prepare(source, started.pristine, started.scratch, dir.runId, {
      phase: (name, body, since) => this.#record.phase(name, body, since),
      emit: (event) => this.#record.emit(event),
      warn: (finding) => this.#run.warnings.push(finding),
      log: this.#testLog,
      jail: (command, writable) => this.#made.containment!.jail({ role: "setup", label: command, cwd: writable[0]!, writable }),
    });
    this.#gates.setup = prepared.setupCommands;
    if (prepared.kind === "stopped" || this.#record.halted) return null;
    const from = this.#env.workspaceFrom;
    const workspace = await this.#record.phase("workspace", () =>
      createWorkspace(source, started.pristine, workspaceRoot, options.signal, from),
    );
    const clone = workspace ? { ...started, workspace } : null;
    this.#gates.clone = clone;
    if (!clone || this.#record.halted) return null;
    const earlier = options.continueFrom;
    // `handoff resume`: the clone starts where the earlier run ended, its patch in the work tree (not committed). git
    // apply takes the patch's paths from its working directory: it runs in the work tree, not the workspace root.
    if (earlier && earlier.patch.length > 0) {
      const ws = clone.workspace;
      // A patch that does not apply (it always should: same base, sha256 checked) ends the run resume-patch_failed, with its verdict.
      const applied = await this.#record.phase("resume-patch", async () => {
        await git({ gitDir: ws.agentGitDir, workTree: ws.workTree, cwd: ws.workTree }, ["apply", "--whitespace=nowarn", "-"], {
          input: earlier.patch,
          signal: options.signal,
        });
        return true;
      });
      if (!applied || this.#record.halted) return null;
    }
    return clone;
  }

  /**
   * Whether every program the commands start can be found and started in the sandbox (check-programs.ts), in `cwd`
   * (null: an empty directory); false when one cannot (the run ends environment_unavailable) or the run halted.
   */
  async #checkPrograms(
    commands: { readonly setup?: readonly string[]; readonly verify?: readonly string[] },
    scratch: string,
    cwd: string | null,
    lookUpFor: readonly string[] = [],
  ): Promise<boolean> {
    const { options } = this.#setup;
    for (const phase of ["setup", "verify"] as const) {
      const list = commands[phase] ?? [];
      if (list.length === 0) continue;
      const dir = cwd ?? mkdtempSync(join(scratch, "program-check-cwd-"));
      const checked = await this.#record.phase(`${phase}-programs`, () =>
        checkProgramsAndLookUp({
          phase,
          commands: list,
          cwd: dir,
          scratch,
          containment: this.#made.containment!,
          signal: options.signal,
          lookUpFor: phase === "setup" ? lookUpFor : [],
        }),
      );
      // A check that threw (undefined) stops the run as one that found a program missing: its phase recorded why.
      const unavailable = checked === undefined ? undefined : checked.unavailable;
      if (phase === "setup" && lookUpFor.length > 0) this.#run.verifyProgramsFound = checked?.found ?? null;
      if (unavailable) {
        this.#run.programUnavailable = unavailable;
        this.#record.emit({ type: "program.unavailable", ...unavailable });
      }
      if (unavailable !== null || this.#record.halted) return false;
    }
    return true;
  }

  /**
   * The verify commands' programs, checked in the workspace once setup has run there (it could add a program). Not
   * again where the setup-programs check's sandbox found them all where this check must find them too (lookupSettles):
   * outside the home, with a PATH of absolute entries, and setup, in the sandbox, able to write none of them.
   */
  async #checkVerifyPrograms(clone: DisposableClone): Promise<boolean> {
    const { options } = this.#setup;
    if (options.setup.length === 0) return true;
    const found = this.#run.verifyProgramsFound;
    const containment = this.#made.containment!;
    if (found && containment.sandboxed && lookupSettles(options.verify, found, containment.settings.path)) return true;
    return this.#checkPrograms({ verify: this.#setup.options.verify }, clone.scratch, clone.workspace.workTree);
  }

  /** The setup commands in the agent's workspace, when there is no base environment; false when one failed or the run halted. */
  async #runSetup(clone: DisposableClone): Promise<boolean> {
    const { options } = this.#setup;
    if (options.setup.length === 0 || this.#env.environment !== null) return true;
    const ws = clone.workspace;
    const records = await this.#record.phase("setup", () =>
      runShellCommands(options.setup, {
        phase: "setup",
        cwd: ws.workTree,
        env: { ...buildEnvironment({ home: ws.home, tmp: ws.tmp }), CI: "true" },
        timeoutMs: options.setupTimeoutMs,
        signal: options.signal,
        log: this.#testLog,
        onCommand: (command) => this.#record.emit({ type: "command.started", phase: "setup", command }),
        jail: (command) => this.#jail(clone, "setup", command),
      }),
    );
    this.#gates.setup = records ?? [];
    return !this.#gates.setup.some((record) => !commandPassed(record)) && !this.#record.halted;
  }

  /**
   * The attempts (`--attempts`): the first turn, then, while the last verdict is one the agent can repair, the same
   * session resumed in the same clone with handoff's feedback, and every gate again. The last attempt decides.
   */
  async #attempts(clone: DisposableClone, before: SourceSnapshot): Promise<void> {
    const { options } = this.#setup;
    const earlier = options.continueFrom;
    let turn: AgentTurn = earlier
      ? { kind: "resume", session: { sessionId: earlier.sessionId, cwd: earlier.cwd, attempt: 1 }, message: options.task }
      : { kind: "start", task: options.task };
    for (let number = 1; ; number++) {
      const started = Date.now();
      const scratch = this.#attemptScratch(clone, number);
      const attempt = await this.#attempt(clone, before, number, turn, scratch);
      if (attempt === null) {
        // The backend could not resume: the previous attempt stands, and the feedback prepared for this one was never sent.
        if (this.#last) this.#last.feedback = null;
        break;
      }
      const facts = this.#facts(attempt);
      const verdict = decideOutcome(facts);
      const record: AttemptRecord = { number, attempt, verdict, durationMs: Date.now() - started, feedback: null };
      this.#gates.attempts.push(record);
      if (options.attempts > 1)
        this.#record.emit({ type: "attempt.finished", attempt: number, terminalReason: verdict.terminalReason, detail: verdict.detail });
      if (number >= options.attempts || this.#record.halted || !repairable(verdict, facts)) break;
      if (this.#run.totalDeadline !== null && Date.now() >= this.#run.totalDeadline) {
        this.#stopAttempts(`--total-timeout was reached after attempt ${number}`);
        break;
      }
      const message = await this.#feedback(record);
      if (message === null) break;
      // This attempt's extraction and verification checkouts are done with: N attempts do not take N times the disk.
      if (scratch !== clone.scratch) removeTree(scratch);
      const sessionId = attempt.agent?.sessionId ?? (turn.kind === "resume" ? turn.session.sessionId : null);
      turn = { kind: "resume", session: { sessionId, cwd: clone.workspace.workTree, attempt: number + 1 }, message };
    }
  }

  /** One attempt in the clone: the agent works, then its patch is extracted, judged and verified; null when the turn could not start. */
  async #attempt(
    clone: DisposableClone,
    before: SourceSnapshot,
    number: number,
    turn: AgentTurn,
    scratch: string,
  ): Promise<Attempt | null> {
    const { dir, options } = this.#setup;
    const perAttempt = options.attempts > 1;
    const log = perAttempt ? new TestLog((bytes) => dir.writeFile(`attempts/${number}/test.log`, bytes), this.#testLog) : this.#testLog;
    if (perAttempt) {
      dir.enterAttempt(number);
      this.#record.emit({ type: "attempt.started", attempt: number, resumed: turn.kind === "resume" });
    }
    const agent = await this.#agent(clone, turn, number);
    if (agent === null) return null;
    if (this.#record.halted) return { agent, patch: null, verification: null };
    // In the sandbox the agent and all it started are gone now: the environment's check before verification runs beside
    // extraction (which reads only handoff's own copies) and is judged where verification starts. Without the sandbox, there.
    if (this.#setup.sandbox.kind !== "none") this.#env.checkAhead();
    const patch = await this.#patch(clone, before, number, scratch);
    const verification = patch && this.#verifiable(agent, patch) ? await this.#verify(patch, log, scratch, clone.pristine) : null;
    return { agent, patch, verification };
  }

  /** Where an attempt's private git dir and verification checkouts go: the scratch dir, or with --attempts a folder of it per attempt. */
  #attemptScratch(clone: DisposableClone, number: number): string {
    if (this.#setup.options.attempts === 1) return clone.scratch;
    const scratch = join(clone.scratch, `attempt-${number}`);
    mkdirSync(scratch, { mode: 0o700 });
    return scratch;
  }

  /** The message the next attempt gets (attempts/<k>/feedback.md), from handoff or the library user's writer; null ends the loop. */
  async #feedback(record: AttemptRecord): Promise<string | null> {
    const { dir, options } = this.#setup;
    const input = feedbackInput(record, options.attempts, this.#testLog, options.holdouts.length > 0);
    const ours = handoffFeedback(input);
    let message: string;
    try {
      message = options.feedback ? await options.feedback(input, ours) : ours;
    } catch (error) {
      this.#stopAttempts(`the feedback writer failed: ${(error as Error).message}`);
      return null;
    }
    const path = `attempts/${record.number}/feedback.md`;
    if (this.#record.tryWrite(() => dir.writeFile(path, message))) record.feedback = path;
    return message;
  }

  #stopAttempts(why: string): void {
    this.#run.attemptsStopped = why;
    this.#record.emit({ type: "attempts.stopped", reason: why });
  }

  /**
   * One agent turn, in its private CLI home and its jail; backend-result.json is written as soon as it is back. The
   * home is made by the first turn and kept for the next (a `handoff resume` moves the earlier run's kept home in).
   * Null when a resumed turn could not start (the backend said why).
   */
  async #agent(clone: DisposableClone, turn: AgentTurn, number: number): Promise<ExternalAgentResult | null> {
    const { dir, options, backend } = this.#setup;
    const ws = clone.workspace;
    // The nonce marks every process the agent starts, so a leftover one can be found by its environment (HANDOFF_RUN_ID
    // alone could be another run's: a run id is unique only inside its runs directory).
    const env = buildEnvironment({
      home: ws.home,
      tmp: ws.tmp,
      extraNames: options.envNames,
      set: { HANDOFF_RUN_ID: dir.runId, [RUN_MARKER_VARIABLE]: dir.nonce },
    });
    const turnDeadline = Math.min(Date.now() + options.timeoutMs, this.#run.totalDeadline ?? Number.POSITIVE_INFINITY);
    const outcome = await this.#record.phase("agent", async () => {
      const cliHome = this.#home.open(backend.name !== "command");
      if (typeof cliHome !== "string") return { kind: "cannot_resume" as const, reason: keptHomeTaken(cliHome.gone) };
      const jail = this.#jail(clone, "agent", backend.name, [cliHome]);
      try {
        return await runAgentSafely(backend, turn, {
          cwd: ws.workTree,
          env: { ...env, HANDOFF_ATTEMPT: String(number), HANDOFF_CANDIDATE: String(options.candidate) },
          signal: options.signal ?? new AbortController().signal,
          deadline: turnDeadline,
          idleTimeoutMs: options.idleTimeoutMs,
          model: options.model,
          executable: options.bin,
          homeDir: cliHome,
          userEnv: { ...process.env },
          jail,
          emit: (event) => this.#record.emit(event),
        });
      } finally {
        await jail.finish();
      }
    });
    const said = outcome?.kind === "cannot_resume" ? "" : (outcome?.result.stderrTail ?? "");
    if (said) this.#made.containment?.noteHiddenPathsNamed(backend.name, said);
    if (outcome?.kind === "cannot_resume") {
      if (number > 1) {
        this.#stopAttempts(`attempt ${number} did not start: ${outcome.reason}`);
        return null;
      }
      // `handoff resume` whose session cannot continue (the ladder makes it an agent error): the kept home goes back
      // where it was kept, so the session is not used up by a turn that never ran.
      this.#home.giveBack();
    }
    if (!outcome) return this.#agentBack(null, number);
    const deadline = this.#run.totalDeadline === turnDeadline ? "total" : "turn";
    return this.#agentBack(turnResult({ turn: outcome, deadline }), number);
  }

  /** Records what a turn returned: its warnings, backend-result.json (and the attempt's copy). */
  #agentBack(agent: ExternalAgentResult | null, number: number): ExternalAgentResult | null {
    const { dir, options, backend } = this.#setup;
    for (const warning of agent?.warnings ?? []) this.#run.warnings.push({ ...warning });
    this.#run.backendResultCurrent = false;
    this.#writeBackendResult(agent);
    if (options.attempts > 1)
      this.#record.tryWrite(() => dir.writeJson(`attempts/${number}/backend-result.json`, backendRecord(backend.name, agent)));
    return agent;
  }

  /** Gate 3: handoff extracts the patch and judges it, then checks the source held; changes.patch gets the patch. */
  async #patch(clone: DisposableClone, before: SourceSnapshot, number: number, scratch: string): Promise<JudgedPatch | null> {
    const { dir, source, options, verificationBase } = this.#setup;
    const judged = await this.#record.phase("extract", async () => {
      // Extraction stages what the agent left with handoff's git alone (the agent and what it started are gone).
      const extraction = await afterOwnWrites(clone.pristine, () =>
        extractPatch({
          source,
          workspace: clone.workspace,
          policy: compilePolicy(options.policy),
          privateParent: scratch,
          pristine: clone.pristine,
          signal: options.signal,
          setupOutputs: this.#env.environment?.record.unignoredOutputs ?? [],
          changed: this.#changedPaths(clone),
        }),
      );
      const inputs = await judgeInputChanges(source.baseCommit, verificationBase.inputs, extraction, options.testEdits);
      const changed = inputs.testEdits.changed;
      if (changed.length > 0)
        this.#record.emit({ type: "verification.inputs_changed", policy: options.testEdits, paths: changed.map((input) => input.path) });
      return { extraction, inputs };
    });
    // After extraction (it reads only handoff's own copies), so that with no command left to run this check is the
    // last one and covers the whole run: a third snapshot would cost as much and see nothing new.
    const afterAgent = await this.#record.phase("recheck", () => takeSourceSnapshot(source));
    if (afterAgent) {
      this.#noteSourceChanges(before, afterAgent, "after_agent");
      this.#run.sourceCheckedSinceLastCommand = true;
    }
    if (!judged) return null;
    const bytes = judged.extraction.patch;
    if (options.attempts > 1) this.#record.tryWrite(() => dir.writeFile(`attempts/${number}/changes.patch`, bytes));
    return {
      ...judged,
      saved: this.#record.tryWrite(() => dir.writeRecordedFile("changes.patch", { bytes, sha256: judged.extraction.sha256 })),
    };
  }

  /**
   * What the agent changed, read from its overlay's upper dir, which the kernel writes: extraction then looks at
   * those paths alone. Null (the whole work tree is walked) for a copy, for many changes, and without the sandbox,
   * where the agent could have written the environment under its view directly, past the upper dir.
   */
  #changedPaths(clone: DisposableClone): readonly Buffer[] | null {
    const overlay = clone.workspace.overlay;
    if (!overlay || this.#setup.sandbox.kind === "none") return null;
    return readUpperChanges(overlay.upper, overlay.merged, overlay.lower, MAX_CHANGED_PATHS)?.paths ?? null;
  }

  /** Only a saved, non-empty patch without violations, from an agent that finished, with the source intact, is verified. */
  #verifiable(agent: ExternalAgentResult | null, patch: JudgedPatch): boolean {
    const facts = patchFacts(patch);
    const verifiable =
      agent?.outcome.kind === "finished" &&
      facts !== null &&
      !facts.empty &&
      facts.violations.length === 0 &&
      this.#run.sourceChanged.length === 0;
    return verifiable && !this.#record.halted;
  }

  /** Gate 4: the verify commands in a fresh checkout of base + patch (after the baseline; then held to the base). */
  async #verify(patch: JudgedPatch, log: TestLog, scratch: string, pristine: PristineStore): Promise<Verification> {
    const { source, options } = this.#setup;
    const { extraction, inputs } = patch;
    const from = await this.#env.forVerification((finding) => this.#run.warnings.push(finding));
    const setupAgain = this.#env.verificationSetup(
      extraction.files.map((file) => file.path),
      from !== null,
    );
    const common = {
      privateGitDir: extraction.privateGitDir,
      baseCommit: source.baseCommit,
      setup: setupAgain ? options.setup : [],
      environment: from,
      downloads: from ? this.#env.downloadsDir() : null,
      verify: options.verify,
      timeoutMs: options.verifyTimeoutMs,
      setupTimeoutMs: options.setupTimeoutMs,
      scratchParent: scratch,
      log,
      signal: options.signal,
      onCommand: (phase: string, command: string) => this.#record.emit({ type: "command.started", phase, command }),
      containment: this.#made.containment!,
      holdouts: options.holdouts,
      junit: options.junit,
      ownWrites: <T>(write: () => Promise<T>) => afterOwnWrites(pristine, write),
    };
    // Setup and verify commands run code from the patch: the source is checked again at the end.
    if (options.setup.length > 0 || options.verify.length > 0) this.#run.sourceCheckedSinceLastCommand = false;
    // The base needs no setup of its own when it is the environment: it was set up on exactly this tree.
    const baselineSetup = from ? [] : options.setup;
    this.#run.baseline ??=
      options.baseline && options.verify.length > 0
        ? ((await this.#record.phase("baseline", () => runBaseline({ ...common, setup: baselineSetup }))) ?? null)
        : null;
    const baseline = this.#run.baseline;
    const applied = { patch: extraction.patch, expectedListing: extraction.listing };
    const verify =
      (await this.#record.phase("verify", () => runVerification({ ...common, ...applied, label: "verify", hold: [] }))) ?? null;
    const changed = inputs.testEdits.changed;
    let held: VerificationOutcome | null = null;
    if (verify?.kind === "passed" && options.testEdits === "base" && changed.length > 0 && !this.#record.halted) {
      const hold = holdSteps(changed, inputs.heldContents);
      held = (await this.#record.phase("held", () => runVerification({ ...common, ...applied, label: "held", hold }))) ?? null;
    }
    return { baseline, verify, held, tests: this.#testEvidence(verify, baseline) };
  }

  /** result.json's `verification.tests`: the JUnit evidence as patched, compared with the base's when there is one. */
  #testEvidence(verify: VerificationOutcome | null, baseline: BaselineOutcome | null): TestEvidence | null {
    const { junit } = this.#setup.options;
    if (junit.length === 0) return null;
    const patched = verify && "tests" in verify ? verify.tests : null;
    if (!patched) return null;
    return testEvidenceRecord(patched, baseline?.tests ?? null, junit);
  }

  /** The verdict: decided from the gates' results, written to result.json, then the run's directories are removed. */
  async #finish(before: SourceSnapshot | null): Promise<RunResult> {
    const { dir, source, options } = this.#setup;
    if (before && !this.#run.sourceCheckedSinceLastCommand) {
      const atEnd = await this.#record.phase("finish", () => takeSourceSnapshot(source));
      if (atEnd) this.#noteSourceChanges(before, atEnd, "at_end");
    }
    if (this.#record.cancelled) this.#run.cancelled ??= "interrupted";
    const containment = (this.#made.containment ?? this.#containment(null)).summary();
    const keep = options.keepWorkspace && this.#gates.clone !== null;
    const agent = this.#last?.attempt.agent ?? null;
    this.#writeBackendResult(agent);
    this.#run.sessionKept = options.keepSession && this.#home.keep();
    let result = this.#result(containment, keep);
    let written = this.#writeResult(result);
    if (!written) {
      // That failure is on record now: the verdict names it, and a result.json cut to its first entries carries it.
      result = minimalResult(this.#result(containment, keep));
      written = this.#writeResult(result);
    }
    if (keep) dir.release(["workspaceRoot", "cliHome"]);
    const ending = { done: true, terminalReason: result.terminalReason, detail: result.detail };
    // Done, with its clean-up pending until the directories are gone: a crash in between is cleaned up by the next
    // start's sweep, which keeps this verdict (and writes the run.finished event this run did not get to).
    if (written) {
      dir.checkpoint("finish", { ...ending, cleanup: "pending" });
      this.#announceDecided(result);
    }
    // The verdict is on disk; removing the workspaces is timed on its own.
    this.#record.emit({ type: "phase.started", phase: "cleanup" });
    const cleanupStarted = Date.now();
    const cleaned = await this.#cleanUp(keep);
    const cleanupMs = Date.now() - cleanupStarted;
    this.#record.emit({ type: "phase.finished", phase: "cleanup", durationMs: cleanupMs, ok: cleaned });
    result = { ...result, timings: { ...result.timings, phases: { ...result.timings.phases, cleanup: cleanupMs } } };
    // The clean-up may have freed the space a failed write needed: the run directory is then complete after all.
    this.#writeBackendResult(agent);
    written = this.#writeResult(result) || written;
    if (written) {
      dir.checkpoint("finish", { ...ending, cleanup: cleaned ? "done" : "pending" });
      this.#record.emit({ type: "run.finished", terminalReason: result.terminalReason, detail: result.detail });
    }
    return result;
  }

  /** The verdict on disk, told to the caller before the clean-up; a hook that throws does not stop the clean-up. */
  #announceDecided(result: RunResult): void {
    try {
      this.#setup.hooks.onDecided?.(result);
    } catch (error) {
      this.#record.emit({ type: "diagnostic", message: `the onDecided hook failed: ${(error as Error).message}` });
    }
  }

  /** The facts the decider reads, from the gates' results: of the last attempt, or of the one given. */
  #facts(attempt: Attempt | null = this.#last?.attempt ?? null): RunFacts {
    const { dir, options } = this.#setup;
    const verification = attempt?.verification ?? null;
    return {
      cancelled: this.#run.cancelled,
      sourceChanged: this.#run.sourceChanged,
      agent: attempt?.agent ?? null,
      runDirWrite: dir.writeFailure,
      artifactError: this.#record.artifactError,
      patch: attempt?.patch ? patchFacts(attempt.patch) : null,
      verification: verification?.verify ?? null,
      held: verification?.held ?? null,
      baseline: verification?.baseline ?? null,
      verifyCommands: options.verify,
      testEdits: attempt?.patch?.inputs.testEdits ?? null,
      holdoutCount: options.holdouts.length,
      tests: verification?.tests ?? null,
      noVerify: options.noVerify ? { configVerifySkipped: options.configVerifySkipped } : null,
      setupFailed: this.#gates.setup.find((record) => !commandPassed(record)) ?? null,
      programUnavailable: this.#run.programUnavailable,
      egressRefused: options.egressBlocked === "fail" && this.#run.egressBlocked.length > 0 ? this.#run.egressBlocked : null,
      agentNetwork: this.#made.containment?.network("agent") ?? null,
      agentBlocked: this.#run.egressBlocked.filter((blocked) => blocked.role === "agent"),
      agentUsedModelRoute:
        this.#made.containment
          ?.networkRecord()
          .attempts.some(
            (attempt) => attempt.role === "agent" && attempt.allowed && (attempt.via === "model" || attempt.via === "tunnel"),
          ) ?? false,
    };
  }

  #result(containment: ContainmentSummary, keep: boolean): RunResult {
    const { dir, source, options, backend, startedAt, verificationBase } = this.#setup;
    const facts = this.#facts();
    const patch = this.#last?.attempt.patch ?? null;
    const earlier = options.continueFrom;
    // Redacted here, not only in the file: `run` returns and --json prints what result.json says.
    return dir.redacted(
      "result.json",
      buildRunResult({
        runId: dir.runId,
        runDir: dir.path,
        verdict: decideOutcome(facts),
        source,
        backendName: backend.name,
        agent: facts.agent,
        extraction: patch?.extraction ?? null,
        extraWarnings: [...this.#run.warnings, ...containmentFindings(containment)],
        containment,
        network: this.#made.containment?.networkRecord() ?? null,
        setupRecords: this.#gates.setup,
        verification: facts.verification,
        held: facts.held,
        baseline: facts.baseline,
        verify: options.verify,
        testEdits: facts.testEdits,
        inputViolations: patch?.inputs.violations ?? [],
        holdouts: verificationBase.holdouts,
        tests: facts.tests,
        verificationSkipped: options.noVerify ? "no_verify" : null,
        sourceChanged: facts.sourceChanged,
        startedAt,
        phases: this.#record.phases,
        workspace: keep ? this.#gates.clone!.workspace.workTree : null,
        attempts: this.#gates.attempts.map((record) => ({
          attempt: record.number,
          verdict: record.verdict,
          sessionId: record.attempt.agent?.sessionId ?? null,
          patchSha256: record.attempt.patch?.saved ? record.attempt.patch.extraction.sha256 : null,
          usage: record.attempt.agent?.usage ?? null,
          durationMs: record.durationMs,
          feedback: record.feedback,
        })),
        attemptsStopped: this.#run.attemptsStopped,
        session: {
          kept: this.#run.sessionKept,
          home: this.#run.sessionKept ? this.#home.path : null,
          keptUntil: this.#run.sessionKept ? new Date(Date.now() + KEPT_SESSION_MS).toISOString() : null,
        },
        resumedFrom: earlier ? { runId: earlier.runId, runDir: earlier.runDir, sessionId: earlier.sessionId } : null,
        environment: this.#env.record(),
      }),
    );
  }

  // ---- what the run made: its containment, its jails, and their clean-up ----

  /** What every process of this run may see: hidden are the source, handoff's own dirs, the user's home, /tmp. */
  #containment(scratch: string | null): Containment {
    const { dir, source, options, sandbox } = this.#setup;
    const hidden = hiddenPaths({
      sourceTop: source.topLevel,
      runsDir: options.runsDir,
      workspacesDir: options.workspacesDir,
      cliHomesDir: options.cliHomesDir,
      cacheDir: options.cacheDir,
      holdouts: options.holdouts.map((holdout) => holdout.source),
    });
    this.#made.containment = new Containment({
      choice: sandbox,
      caps: options.caps,
      verifyNetwork: options.verifyNetwork,
      egress: { rules: options.allowNet, setupRules: setupRules(options.setup) },
      onEgressBlocked: (event) => {
        this.#run.egressBlocked.push(event);
        this.#record.emit({
          type: "egress.blocked",
          role: event.role === "verify" ? "setup" : event.role,
          label: event.label,
          host: event.host,
          port: event.port,
          reason: event.reason,
          attempts: event.attempts,
        });
      },
      runId: dir.runId,
      nonce: dir.nonce,
      hidden,
      sourceRoot: source.topLevel,
      scratch: scratch ?? "",
      path: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      toolchains: findToolchains(process.env.PATH ?? "", userHome(), options.expose),
      onCgroup: (dirs) => dir.track({ cgroups: [...dirs] }),
    });
    return this.#made.containment;
  }

  /** A jail in the agent's workspace: it may write its work tree, home and tmp; the clone's git metadata is read-only. */
  #jail(clone: DisposableClone, role: "setup" | "agent", label: string, extraWritable: readonly string[] = []): ProcessJail {
    const ws = clone.workspace;
    return this.#made.containment!.jail({
      role,
      label,
      cwd: ws.workTree,
      writable: [ws.workTree, ws.home, ws.tmp, ...extraWritable],
      // The clone's git metadata and the gitfile that points at it: readable, never writable.
      readOnly: [ws.agentGitDir, join(ws.workTree, ".git")],
    });
  }

  #noteSourceChanges(before: SourceSnapshot, after: SourceSnapshot, when: "after_agent" | "at_end"): void {
    const changed = compareSnapshots(before, after);
    if (changed.length === 0) return;
    this.#record.emit({ type: "source.changed", when, changed: changed.slice(0, 200) });
    this.#run.sourceChanged = [...new Set([...this.#run.sourceChanged, ...changed])];
  }

  /** backend-result.json: what the backend returned, or `ran: false`; again at the end if it could not be written. */
  #writeBackendResult(agent: ExternalAgentResult | null): void {
    if (this.#run.backendResultCurrent) return;
    const record = backendRecord(this.#setup.backend.name, agent);
    this.#run.backendResultCurrent = this.#record.tryWrite(() => this.#setup.dir.writeJson("backend-result.json", record));
  }

  /** result.json, into the space the run directory reserved for it. */
  #writeResult(result: RunResult): boolean {
    return this.#record.tryWrite(() => this.#setup.dir.writeReserved("result.json", `${JSON.stringify(result, null, 2)}\n`));
  }

  /** Stops the containment and removes the run's directories; false when something could not be removed. */
  async #cleanUp(keep: boolean): Promise<boolean> {
    let cleaned = true;
    const remove = (path: string) => {
      try {
        removeTree(path);
      } catch {
        cleaned = false;
      }
    };
    const home = this.#home.toRemove;
    const trees = [this.#made.scratch, keep ? null : home, keep || !this.#gates.clone ? null : this.#gates.clone.workspace.root];
    const toRemove = trees.filter((tree) => tree != null);
    // The views mounted in them detached beside the containment's close (an umount process each, side by side):
    // each removal then finds none to detach itself.
    const detached = unmountAllUnderEach(toRemove).catch(() => {});
    try {
      await this.#made.containment?.close();
    } catch {
      cleaned = false;
    }
    await detached;
    for (const tree of toRemove) remove(tree);
    // What was started early and never judged (an earlier step failed) ends before the environment is let go.
    await this.#env.settle();
    this.#env.release();
    return cleaned;
  }
}

/** The patch as the decider sees it: known only once changes.patch holds it; `--test-edits reject` adds its violations. */
function patchFacts(patch: JudgedPatch): RunFacts["patch"] {
  if (!patch.saved) return null;
  return { empty: patch.extraction.patch.length === 0, violations: [...patch.extraction.violations, ...patch.inputs.violations] };
}

/** backend-result.json: what the backend returned, or `ran: false`. */
function backendRecord(backend: string, agent: ExternalAgentResult | null): BackendResultJson {
  return agent ? { backend, ...agent } : { backend, ran: false };
}
