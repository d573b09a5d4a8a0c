import { z } from "zod";
import { SandboxUnavailableError } from "../lib/errors.js";
import { captureProcess } from "../process/process.js";
import { which } from "../process/which.js";
import { TrialFailed, cachedProbe } from "./boot-probes.js";
import { type WatchSupport, probeNetworkWatch } from "./network-watch.js";
import { ROOT_MOUNTS } from "./sandbox-profile.js";

/** `--sandbox`: bubblewrap when it works here (`auto`), bubblewrap or fail (`bwrap`), or no sandbox (`none`). */
export const SANDBOX_MODES = ["auto", "bwrap", "none"] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** What a run actually gets, decided once before it starts. */
export type SandboxChoice =
  | {
      readonly kind: "bwrap";
      readonly requested: "auto" | "bwrap";
      readonly executable: string;
      readonly version: string | null;
      /** Whether a filtered sandbox's attempts around the proxy can be watched and recorded (src/containment/network-watch.ts). */
      readonly watch: WatchSupport;
    }
  /** `reason` says why `auto` could not use bubblewrap; null when the user asked for none. */
  | { readonly kind: "none"; readonly requested: SandboxMode; readonly reason: string | null };

type Probe =
  | { readonly ok: true; readonly executable: string; readonly version: string | null }
  | { readonly ok: false; readonly reason: string };

let cached: Promise<Probe> | null = null;

/**
 * Whether bubblewrap can build the sandbox handoff uses (user namespaces may be off, or bwrap missing). Cached in the
 * process; with `cacheDir`, a success is also remembered for this boot, this bwrap binary and this user
 * (boot-probes.ts), so a run starts no trial when the last one passed.
 */
export function probeBubblewrap(path: string | undefined = process.env.PATH, cacheDir: string | null = null): Promise<Probe> {
  cached ??= probe(path, cacheDir);
  return cached;
}

const Trial = z.object({
  ok: z.literal(true),
  version: z
    .string()
    .regex(/^\d+\.\d+(?:\.\d+)?$/)
    .nullable(),
});
const TRIAL_ARGS = [
  ...ROOT_MOUNTS,
  "--unshare-user",
  "--uid",
  "1000",
  "--gid",
  "1000",
  "--unshare-all",
  "--die-with-parent",
  "--",
  "/bin/true",
];

async function probe(path: string | undefined, cacheDir: string | null): Promise<Probe> {
  const executable = which("bwrap", path);
  if (!executable) return { ok: false, reason: "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)" };
  const context = { programs: [executable, "/bin/true"], extra: TRIAL_ARGS };
  const tried = await cachedProbe(
    cacheDir,
    "bwrap",
    context,
    Trial.or(TrialFailed),
    () => trial(executable),
    (t) => t.ok,
  );
  return tried.ok ? { ok: true, executable, version: tried.version } : tried;
}

/** bubblewrap's trial run (every namespace, as the sandbox will ask) and its version. */
async function trial(
  executable: string,
): Promise<{ readonly ok: true; readonly version: string | null } | { readonly ok: false; readonly reason: string }> {
  const env = { PATH: "/usr/bin:/bin" };
  const trial = await captureProcess({
    file: executable,
    args: TRIAL_ARGS,
    cwd: "/",
    env,
    maxBuffer: 64 * 1024,
  }).catch((error: Error) => ({ exitCode: null, stderr: error.message, stdout: Buffer.alloc(0), truncated: false }));
  if (trial.exitCode !== 0) {
    const said = trial.stderr.trim().split("\n")[0] ?? "";
    return { ok: false, reason: `bwrap failed its trial run${said ? `: ${said}` : ""} (are unprivileged user namespaces disabled?)` };
  }
  const version = await captureProcess({ file: executable, args: ["--version"], cwd: "/", env, maxBuffer: 4096 }).catch(() => null);
  const match = version?.stdout.toString("utf8").match(/\d+\.\d+(?:\.\d+)?/);
  return { ok: true, version: match ? match[0] : null };
}

/** `cacheDir`: where a passed probe is remembered for this boot (boot-probes.ts); null probes every time. */
export async function chooseSandbox(mode: SandboxMode, cacheDir: string | null = null): Promise<SandboxChoice> {
  if (mode === "none") return { kind: "none", requested: "none", reason: null };
  const [probed, watch] = await Promise.all([probeBubblewrap(process.env.PATH, cacheDir), probeNetworkWatch(cacheDir)]);
  if (probed.ok) return { kind: "bwrap", requested: mode, executable: probed.executable, version: probed.version, watch };
  if (mode === "bwrap") throw new SandboxUnavailableError(probed.reason);
  return { kind: "none", requested: "auto", reason: probed.reason };
}
