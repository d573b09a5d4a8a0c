import { createHash } from "node:crypto";
import { type BigIntStats, lstatSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { release, version } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { readFileSafely } from "../lib/safe-read.js";
import { writeFileAtomically } from "../many/atomic-file.js";

/**
 * What this machine could do when handoff last tried (bubblewrap's trial run, a network namespace, an overlay mount),
 * remembered in `<cacheDir>/probes/<name>.json` until anything the answer rests on changes: the boot (its
 * /proc/sys/kernel/random/boot_id), the kernel, the user, the sysctls that gate user namespaces, and each program
 * tried (its path and the inode, size, mode, mtime and ctime of what it resolves to), plus what the caller adds
 * (the file system the overlay goes on). Only a success is kept: a failure is tried again every run, so a fix (bwrap
 * installed, a sysctl turned on) is seen at once. A missing, unreadable, corrupt or mismatching file is probed again.
 *
 * The file is 0600 in a 0700 directory of handoff's cache, which every sandboxed process finds hidden (hidden-paths.ts,
 * cacheDir). It holds no program path to run, only "the trial passed for this context": a
 * forged success (possible only for something running as you outside the sandbox, which can do worse) makes a run
 * try what does not work and fail loudly, never choose weaker containment, since failures are never read from it.
 */
export interface ProbeContext {
  /** The programs the probe runs, resolved already (which()): a replaced binary is a new context. */
  readonly programs: readonly string[];
  /** Anything else the answer depends on, as words (the probe's own arguments, a file system's device). */
  readonly extra?: readonly string[];
  /** Where the boot id is read: /proc/sys/kernel/random/boot_id (tests point it elsewhere). */
  readonly bootIdFile?: string;
}

const PROBES_DIR = "probes";
/** Bumped when what a probe tries changes: older answers are then never read. */
const FORMAT = 1;
const MAX_FILE_BYTES = 64 * 1024;

/** The sysctls that turn unprivileged user namespaces on or off (Debian, upstream, Ubuntu's AppArmor restriction). */
const USERNS_SYSCTLS = [
  "/proc/sys/kernel/unprivileged_userns_clone",
  "/proc/sys/user/max_user_namespaces",
  "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
];

/** A trial that failed, and why: never stored (only a success is), but part of what a probe answers. */
export const TrialFailed = z.object({ ok: z.literal(false), reason: z.string() });

/** The answer of a trial that only passes or fails. */
export const TrialAnswer = z.object({ ok: z.literal(true) }).or(TrialFailed);

const Stored = z.object({ format: z.literal(FORMAT), context: z.string(), value: z.unknown() });

/**
 * `probe()`'s answer, from the cache when a success was stored for this exact context, else probed now (and stored
 * when `passed` says it succeeded). `cacheDir` null: no cache, probed every time. The stored value is parsed with
 * `schema` again when read: a value that does not parse is probed again.
 */
export async function cachedProbe<T>(
  cacheDir: string | null,
  name: string,
  context: ProbeContext,
  schema: z.ZodType<T>,
  probe: () => Promise<T>,
  passed: (value: T) => boolean,
): Promise<T> {
  const key = cacheDir === null ? null : contextKey(name, context);
  const file = cacheDir === null ? null : join(cacheDir, PROBES_DIR, `${name}.json`);
  if (key !== null && file !== null) {
    const remembered = readStored(file, key, schema);
    if (remembered !== null) return remembered.value;
  }
  const value = await probe();
  if (key !== null && file !== null && passed(value)) store(cacheDir!, file, key, value);
  return value;
}

/** The context as one digest, or null when the boot cannot be told (no /proc): then nothing is cached. */
export function contextKey(name: string, context: ProbeContext): string | null {
  const boot = readSmall(context.bootIdFile ?? "/proc/sys/kernel/random/boot_id");
  if (boot === null || boot === "") return null;
  const words = [
    `format ${FORMAT}`,
    `probe ${name}`,
    `boot ${boot}`,
    `kernel ${release()} ${version()}`,
    `uid ${process.getuid?.()} ${process.geteuid?.()} gid ${process.getgid?.()}`,
    ...USERNS_SYSCTLS.map((path) => `sysctl ${path} ${readSmall(path) ?? "-"}`),
    ...context.programs.map((program) => `program ${program} ${programStamp(program)}`),
    ...(context.extra ?? []).map((word) => `extra ${word}`),
  ];
  return createHash("sha256").update(words.join("\n")).digest("hex");
}

/** What a program is now: the link itself and what it resolves to (a replaced or re-linked binary is a new stamp). */
function programStamp(path: string): string {
  const stamp = (stats: BigIntStats) => `${stats.dev}:${stats.ino}:${stats.mode}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
  try {
    return `${stamp(lstatSync(path, { bigint: true }))} -> ${stamp(statSync(path, { bigint: true }))}`;
  } catch {
    return "missing";
  }
}

function readSmall(path: string): string | null {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return null;
  }
}

/** The stored answer when the file is ours, private, a regular file, whole, of this context and a valid value. */
function readStored<T>(file: string, key: string, schema: z.ZodType<T>): { readonly value: T } | null {
  let stats: BigIntStats;
  try {
    stats = lstatSync(file, { bigint: true });
  } catch {
    return null;
  }
  const uid = process.getuid?.();
  if (!stats.isFile() || (uid !== undefined && stats.uid !== BigInt(uid)) || (stats.mode & 0o077n) !== 0n) return null;
  const read = readFileSafely(file, MAX_FILE_BYTES);
  if (read.kind !== "bytes") return null;
  let json: unknown;
  try {
    json = JSON.parse(read.bytes.toString("utf8"));
  } catch {
    return null;
  }
  const stored = Stored.safeParse(json);
  if (!stored.success || stored.data.context !== key) return null;
  const value = schema.safeParse(stored.data.value);
  return value.success ? { value: value.data } : null;
}

/** Written whole or not at all (a temp file renamed over it), 0600 in a 0700 directory; a cache that cannot be written is passed over. */
function store(cacheDir: string, file: string, key: string, value: unknown): void {
  try {
    mkdirSync(join(cacheDir, PROBES_DIR), { recursive: true, mode: 0o700 });
    if (!lstatSync(join(cacheDir, PROBES_DIR)).isDirectory()) return;
    writeFileAtomically(file, `${JSON.stringify({ format: FORMAT, context: key, value })}\n`);
  } catch {
    // the next run probes again
  }
}
