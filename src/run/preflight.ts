import { resolveBackend } from "../../backends/index.js";
import type { ExternalAgentBackend } from "../agent/backend.js";
import { requireApprover } from "../approval/approval.js";
import { type SourceRepo, inspectSource, readSourceStatus } from "../clone/source-repo.js";
import { type SandboxChoice, chooseSandbox } from "../containment/sandbox.js";
import { type WorkspaceModeChoice, chooseWorkspaceMode } from "../environment/workspace-mode.js";
import { DirtySourceError, UsageError } from "../lib/errors.js";
import { checkContinuation } from "../repair/continue-run.js";
import { readConfig } from "./config.js";
import { type ResolvedOptions, type RunOptions, resolveOptions } from "./options.js";

/** What a run learned before it created anything. */
export interface Preflight {
  readonly source: SourceRepo;
  readonly options: ResolvedOptions;
  readonly backend: ExternalAgentBackend;
  /** The source's uncommitted changes (allowed only with --allow-dirty), and the filtered files it could not judge. */
  readonly dirty: readonly string[];
  readonly unverified: readonly string[];
  readonly sandbox: SandboxChoice;
  readonly workspaceMode: WorkspaceModeChoice;
}

/**
 * Every check a run makes before it creates anything, in one place: bad input of any kind (options, config, backend,
 * a dirty source, no approver, a sandbox or overlay that cannot work) is a UsageError here, with nothing on disk.
 * A plain run and a candidates run (which must refuse before it makes its own directory) both start with it.
 */
export async function preflightRun(request: RunOptions): Promise<Preflight> {
  const source = await inspectSource(sourceOf(request));
  // Read beside the config (git status only reads); its failure is thrown where it always was, after the options'.
  const status = readSourceStatus(source);
  status.catch(() => {});
  const options = resolveOptions(request, await readConfig(source), source.topLevel);
  checkContinuation(source, options);
  const backend: ExternalAgentBackend =
    typeof request.backend === "object"
      ? request.backend
      : resolveBackend({ name: options.backendName, agentCmd: request.agentCmd, bin: request.bin });
  const { dirty, unverified } = await status;
  if (dirty.length > 0 && !options.allowDirty) throw new DirtySourceError(dirty);
  requireApprover(options.approval);
  // A probe that passed is remembered for this boot in handoff's cache (boot-probes.ts): a later run starts no trial.
  const sandbox = await chooseSandbox(options.sandbox, options.cacheDir);
  const workspaceMode = await chooseWorkspaceMode(options.workspaceMode, options.workspacesDir, options.cacheDir);
  return { source, options, backend, dirty, unverified, sandbox, workspaceMode };
}

/** The library never falls back to its process's directory: `repo` is what the caller names (the CLI, its `-C` or cwd). */
function sourceOf(request: RunOptions): string {
  const repo: unknown = request.repo;
  if (typeof repo !== "string" || repo === "")
    throw new UsageError("no_repo", ({ name }) => `${name("repo")} is required: the source repository's directory`);
  return repo;
}
