import { lstatSync } from "node:fs";
import { sep } from "node:path";
import { existingRealPath } from "../lib/paths.js";

/** The root every sandbox starts from, the trial run's included: the host read-only, a fresh /dev and /proc. */
export const ROOT_MOUNTS = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"] as const;

/**
 * What one sandboxed process may see, as data, and the bubblewrap argv that enforces it. The root file system is
 * read-only, `hide` paths are replaced by empty ones, `binds` re-expose single paths (read-only or writable), and
 * `traps` put an empty host directory where a hidden one was, so a write there can be reported afterwards.
 */
export interface Bind {
  /** The host path (symlinks resolved). */
  readonly source: string;
  /** Where it appears inside the sandbox. */
  readonly dest: string;
  readonly writable: boolean;
}

export interface SandboxProfile {
  readonly hide: readonly string[];
  readonly binds: readonly Bind[];
  readonly traps: readonly { readonly path: string; readonly hostDir: string }[];
  readonly network: boolean;
  readonly cwd: string;
  /** The uid and gid inside the sandbox's user namespace. */
  readonly uid: number;
  readonly gid: number;
}

const depth = (path: string) => path.split(sep).filter(Boolean).length;

type Mount = { readonly dest: string; readonly args: readonly string[]; readonly order: number };

/** Mounts run in argv order: a parent before anything inside it, and a hide before the binds that pierce it. */
export function bwrapArgs(profile: SandboxProfile): string[] {
  const mounts: Mount[] = [];
  for (const path of profile.hide) {
    const real = existingRealPath(path);
    if (!real || real === sep) continue;
    const isDir = lstatSync(real).isDirectory();
    mounts.push({ dest: real, args: isDir ? ["--tmpfs", real] : ["--ro-bind", "/dev/null", real], order: 0 });
  }
  for (const trap of profile.traps) mounts.push({ dest: trap.path, args: ["--bind", trap.hostDir, trap.path], order: 1 });
  for (const bind of profile.binds)
    mounts.push({ dest: bind.dest, args: [bind.writable ? "--bind" : "--ro-bind", bind.source, bind.dest], order: 2 });
  mounts.sort((a, b) => depth(a.dest) - depth(b.dest) || a.order - b.order);

  return [
    ...ROOT_MOUNTS,
    ...mounts.flatMap((mount) => mount.args),
    "--unshare-user",
    "--uid",
    String(profile.uid),
    "--gid",
    String(profile.gid),
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-uts",
    "--unshare-cgroup-try",
    ...(profile.network ? [] : ["--unshare-net"]),
    // Every process dies with the sandbox; no controlling terminal to inject input into (TIOCSTI).
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--chdir",
    profile.cwd,
    "--",
  ];
}
