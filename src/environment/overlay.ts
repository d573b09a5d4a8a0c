import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { z } from "zod";
import { TrialAnswer, cachedProbe } from "../containment/boot-probes.js";
import { captureProcess, runSystemCommandSync } from "../process/process.js";
import { which } from "../process/which.js";

/**
 * overlayfs, the copy-on-write view of a read-only tree: `merged` shows `lower` with every write going to `upper`
 * (which the kernel writes, so it tells exactly what changed). Mounted with the `mount` program, as root only; a
 * user-namespace mount would be visible inside that namespace alone, not to handoff's own git and scans.
 * `redirect_dir=off` makes renaming a lower directory a full copy (no redirect to follow), `index=off` and
 * `metacopy=off` keep every copied-up file whole in `upper`.
 */
export interface OverlayPaths {
  readonly lower: string;
  readonly upper: string;
  readonly work: string;
  readonly merged: string;
}

const OPTIONS = "redirect_dir=off,index=off,metacopy=off,xino=off";
const ENV = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" };

/** Mounts `paths.merged`; throws with mount's own message when the kernel or the user cannot. */
export async function mountOverlay(paths: OverlayPaths): Promise<void> {
  for (const dir of [paths.upper, paths.work, paths.merged]) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const options = `lowerdir=${paths.lower},upperdir=${paths.upper},workdir=${paths.work},${OPTIONS}`;
  const result = await captureProcess({
    file: "mount",
    args: ["-t", "overlay", "overlay", "-o", options, paths.merged],
    cwd: "/",
    env: ENV,
    maxBuffer: 64 * 1024,
    timeoutMs: 30_000,
  });
  if (result.exitCode !== 0) throw new Error(`mount -t overlay failed: ${result.stderr.trim() || `exit ${result.exitCode}`}`);
}

/** Detaches the mount at `merged` (lazily: a process still inside cannot keep it); a path that is no mount is left as it is. */
export async function unmountOverlay(merged: string): Promise<void> {
  if (!isMountPoint(merged)) return;
  await captureProcess({ file: "umount", args: ["-l", merged], cwd: "/", env: ENV, maxBuffer: 64 * 1024, timeoutMs: 30_000 });
  if (isMountPoint(merged)) throw new Error(`could not unmount ${merged}`);
}

/** Whether `path` is a mount point now (/proc/self/mountinfo, field 5, octal escapes undone). */
export function isMountPoint(path: string): boolean {
  return mountPoints().has(path);
}

export function mountPoints(): Set<string> {
  let text: string;
  try {
    text = readMountInfo();
  } catch {
    return new Set();
  }
  const points = new Set<string>();
  for (const line of text.split("\n")) {
    const field = line.split(" ")[4];
    if (field) points.add(field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8))));
  }
  return points;
}

function readMountInfo(): string {
  // /proc files report size 0; readFileSync reads them to the end all the same.
  return readFileSync("/proc/self/mountinfo", "utf8");
}

let probed: Promise<string | null> | null = null;

/**
 * Whether overlay mounts work here: null when they do, else why not (not root, or the kernel refused). Probed once
 * per process, with a one-file mount in `parent` (the filesystem the workspaces go on); with `cacheDir`, a mount
 * that worked is remembered for this boot, this file system and these mount programs (boot-probes.ts).
 */
export function overlayUnavailable(parent: string, cacheDir: string | null = null): Promise<string | null> {
  probed ??= probe(parent, cacheDir);
  return probed;
}

async function probe(parent: string, cacheDir: string | null): Promise<string | null> {
  if (process.getuid?.() !== 0) return "overlay mounts need root (handoff is not running as root)";
  mkdirSync(parent, { recursive: true, mode: 0o700 });
  const programs = ["mount", "umount"].map((name) => which(name, ENV.PATH) ?? name);
  const context = { programs, extra: [`parent ${parent} device ${statSync(parent).dev}`, OPTIONS] };
  const tried = await cachedProbe(
    cacheDir,
    "overlay",
    context,
    TrialAnswer,
    () => trial(parent),
    (t) => t.ok,
  );
  return tried.ok ? null : tried.reason;
}

async function trial(parent: string): Promise<z.infer<typeof TrialAnswer>> {
  const root = mkdtempSync(join(parent, ".overlay-probe-"));
  const paths = { lower: join(root, "l"), upper: join(root, "u"), work: join(root, "w"), merged: join(root, "m") };
  mkdirSync(paths.lower);
  try {
    await mountOverlay(paths);
    await unmountOverlay(paths.merged);
    return { ok: true };
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  } finally {
    try {
      rmSync(root, { recursive: true, force: true });
    } catch {}
  }
}

/**
 * Detaches every mount at or below `path` (deepest first), synchronously: a removal must never descend into a
 * mounted view, where it would delete through it. Used before any tree handoff made is removed.
 */
export function unmountAllUnder(path: string): void {
  // One that cannot be detached is left to the removal, which then fails and says so.
  for (const point of mountsUnder(path)) runSystemCommandSync("umount", ["-l", point]);
}

/**
 * `unmountAllUnder` for several trees, without blocking: their umount processes run beside other work (a run's
 * clean-up removes its other directories meanwhile). What could not be detached is left to the removal, as there.
 */
export async function unmountAllUnderEach(paths: readonly string[]): Promise<void> {
  await Promise.all(
    paths.map(async (path) => {
      for (const point of mountsUnder(path)) {
        await captureProcess({ file: "umount", args: ["-l", point], cwd: "/", env: ENV, maxBuffer: 64 * 1024, timeoutMs: 30_000 });
      }
    }),
  );
}

/** The mounts at or below `path`, deepest first. */
function mountsUnder(path: string): string[] {
  const prefix = `${path}/`;
  return [...mountPoints()].filter((point) => point === path || point.startsWith(prefix)).sort((a, b) => b.length - a.length);
}
