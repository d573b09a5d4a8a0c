import { UsageError } from "../lib/errors.js";
import type { WorkspaceModeOption } from "../run/options.js";
import { overlayUnavailable } from "./overlay.js";
import type { WorkspaceMode } from "./view.js";

/** The workspace mode a run uses, and why it is not an overlay when `auto` fell back to copies. */
export interface WorkspaceModeChoice {
  readonly mode: WorkspaceMode;
  readonly reason: string | null;
}

/**
 * `overlay` where it cannot work is a usage error; `auto` falls back to copies and says why. `cacheDir`: where a
 * mount that worked is remembered for this boot (boot-probes.ts); null probes every time.
 */
export async function chooseWorkspaceMode(
  option: WorkspaceModeOption,
  workspacesDir: string,
  cacheDir: string | null = null,
): Promise<WorkspaceModeChoice> {
  if (option === "copy") return { mode: "copy", reason: "--workspace-mode copy" };
  const unavailable = await overlayUnavailable(workspacesDir, cacheDir);
  if (unavailable === null) return { mode: "overlay", reason: null };
  if (option === "overlay")
    throw new UsageError("overlay_unavailable", ({ surface, name }) => {
      const asked = surface === "library" ? `${name("workspaceMode")}: "overlay"` : `${name("workspaceMode")} overlay`;
      return `${asked} cannot work here: ${unavailable}`;
    });
  return { mode: "copy", reason: unavailable };
}
