import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { captureProcess } from "../process/process.js";
import type { BaseEnvironment } from "./environment.js";
import { mountOverlay } from "./overlay.js";

/**
 * Workspaces made from a base environment. An overlay view costs O(1): the environment's tree is the read-only
 * lower layer, the view's writes go to its own upper dir (which then tells extraction exactly what changed). A copy
 * view is a checkout made as before plus a copy of what setup created (copyOutputs).
 */
export type WorkspaceMode = "overlay" | "copy";

export interface OverlayView {
  readonly merged: string;
  readonly upper: string;
  readonly lower: string;
}

/** Mounts an overlay of the environment's tree at `merged`, its upper and work dirs in `layers` (same filesystem). */
export async function mountView(environment: BaseEnvironment, merged: string, layers: string): Promise<OverlayView> {
  const upper = join(layers, "upper");
  await mountOverlay({ lower: environment.tree, upper, work: join(layers, "work"), merged });
  return { merged, upper, lower: environment.tree };
}

/** Copies what setup made (its untracked outputs) into a checkout of the base at `tree`, modes and times kept. */
export async function copyOutputs(environment: BaseEnvironment, tree: string, signal?: AbortSignal): Promise<void> {
  const outputs = environment.record.outputs.map((path) => path.replace(/\/$/u, "")).filter((path) => path !== "");
  for (let at = 0; at < outputs.length; at += 500) await copy(environment.tree, outputs.slice(at, at + 500), tree, signal);
}

/** The HOME setup ran with, copied for one workspace (what setup installed there, such as `pip install --user`). */
export async function copyHome(environment: BaseEnvironment, home: string, signal?: AbortSignal): Promise<void> {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  await cp(environment.home, ["-a", "--reflink=auto", "--", `${environment.home}/.`, home], signal);
}

async function copy(from: string, paths: readonly string[], to: string, signal?: AbortSignal): Promise<void> {
  await cp(from, ["-a", "--parents", "--reflink=auto", "--", ...paths, `${to}/`], signal);
}

async function cp(cwd: string, args: readonly string[], signal?: AbortSignal): Promise<void> {
  const result = await captureProcess({
    file: "cp",
    args,
    cwd,
    env: { PATH: "/usr/bin:/bin", LC_ALL: "C" },
    maxBuffer: 1024 * 1024,
    timeoutMs: 3_600_000,
    signal,
  });
  if (result.exitCode !== 0) throw new Error(`copying from the base environment failed: ${result.stderr.trim().slice(0, 300)}`);
}
