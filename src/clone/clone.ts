import { mkdirSync } from "node:fs";
import type { SourceRepo } from "./source-repo.js";
import { type PristineStore, type Workspace, createPristineStore } from "./workspace.js";

/**
 * Gate 2: a disposable clone of the source. handoff's pristine object store (base.git, in its private scratch
 * dir) and the agent's workspace made from it; the source itself is only read.
 */
export interface DisposableClone {
  /** handoff's private dir beside the workspace: the pristine store, and later the extraction's git dir. */
  readonly scratch: string;
  readonly pristine: PristineStore;
  readonly workspace: Workspace;
}

export interface CloneRequest {
  readonly source: SourceRepo;
  /** The parent of `scratch` and `workspaceRoot`, made (0700) if missing. */
  readonly workspacesDir: string;
  readonly scratch: string;
  readonly workspaceRoot: string;
  readonly signal?: AbortSignal;
  /** Called before anything is created, so that a crash in between leaves nothing the caller does not know of. */
  readonly onPlanned?: (paths: { readonly scratch: string; readonly workspaceRoot: string }) => void;
  /** Called once the scratch dir exists: it is the caller's to remove, even if the clone then fails. */
  readonly onScratch?: (scratch: string) => void;
}

/**
 * The first half of a clone: the scratch dir and the pristine store. The workspace follows once the base
 * environment it is made from is ready (the environment is built from the pristine store).
 */
export async function startClone(request: CloneRequest): Promise<Omit<DisposableClone, "workspace">> {
  const { source, scratch, workspaceRoot } = request;
  request.onPlanned?.({ scratch, workspaceRoot });
  mkdirSync(request.workspacesDir, { recursive: true, mode: 0o700 });
  mkdirSync(scratch, { mode: 0o700 });
  request.onScratch?.(scratch);
  const pristine = await createPristineStore(source, scratch, request.signal);
  return { scratch, pristine };
}
