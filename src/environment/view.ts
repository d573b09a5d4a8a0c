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
  await copyWithCp(environment.home, ["-a", "--reflink=auto", "--", `${environment.home}/.`, home], signal);
}

/**
 * A throw-away copy of the persistent download caches at `to`, for a setup on a patched manifest: it may read what
 * earlier setups fetched, and nothing it writes reaches a later run. A copy that fails leaves an empty cache (slower,
 * never wrong).
 */
export async function copyDownloads(persistent: string, to: string, signal?: AbortSignal): Promise<void> {
  mkdirSync(to, { recursive: true, mode: 0o700 });
  await copyWithCp(persistent, ["-a", "--reflink=auto", "--", `${persistent}/.`, to], signal).catch(() => {});
}

async function copy(from: string, paths: readonly string[], to: string, signal?: AbortSignal): Promise<void> {
  await copyWithCp(from, ["-a", "--parents", "--reflink=auto", "--", ...paths, `${to}/`], signal);
}

/** The system's `cp -a` (never Node's own tree copy, docs/threat-model.md F5): links copied as links, nothing followed. */
async function copyWithCp(cwd: string, args: readonly string[], signal?: AbortSignal): Promise<void> {
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
