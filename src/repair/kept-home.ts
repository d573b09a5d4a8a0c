import { lstatSync } from "node:fs";
import { isAbsolute, join, normalize } from "node:path";
import type { RequestJson } from "../run-dir/artifacts/request.js";
import { isRunNonce, runNames } from "../vocabulary/run-names.js";

/**
 * How long a kept session (`--keep-session`) stays: after this, the next handoff start removes it, and `handoff gc`
 * does so at any time. A kept home holds the CLI's transcript of the run, never the user's login.
 */
export const KEPT_SESSION_DAYS = 7;
export const KEPT_SESSION_MS = KEPT_SESSION_DAYS * 24 * 60 * 60 * 1000;

/** What result.json says of a kept session (`session`), as `handoff resume` and `handoff gc` read it. */
export interface SessionRecord {
  readonly kept: boolean;
  readonly home: string | null;
  readonly keptUntil: string | null;
}

/** A finished run's kept CLI home, as found on disk now. Keyed on `kind`. */
export type KeptHome =
  /** The home is there, exactly where and as handoff made it; `expired` once `keptUntil` has passed (or cannot be read). */
  | { readonly kind: "kept"; readonly home: string; readonly keptUntil: string | null; readonly expired: boolean }
  /** The run kept nothing (no `--keep-session`, or no agent turn ran). */
  | { readonly kind: "not_kept" }
  /** It was kept, and is gone now: continued by `handoff resume`, or removed by the age limit or `handoff gc`. */
  | { readonly kind: "gone"; readonly home: string; readonly keptUntil: string | null }
  /** Something is there that handoff did not make for this run: never used, never removed. */
  | { readonly kind: "not_ours"; readonly home: string; readonly why: string };

/**
 * The kept home of run `runId`, checked before handoff moves or removes it: result.json's `session.home` must be
 * exactly the name runNames() gives this run's home (run id + the nonce request.json recorded) inside the CLI-homes
 * directory the run used, and a real directory, not a link. A result.json is the agent's to tamper with when it ran
 * without the sandbox: this keeps a doctored one from pointing `gc` or `resume` at any other directory.
 */
export function keptHomeOf(runId: string, session: SessionRecord | undefined, request: RequestJson | null, now = Date.now()): KeptHome {
  if (!session?.kept || session.home === null) return { kind: "not_kept" };
  const home = session.home;
  const notOurs = (why: string): KeptHome => ({ kind: "not_ours", home, why });
  if (request === null) return notOurs("its request.json is missing or not valid");
  if (request.runId !== runId) return notOurs(`its request.json names run ${request.runId}`);
  if (request.nonce === undefined || !isRunNonce(request.nonce)) return notOurs("its request.json records no nonce");
  if (request.cliHomesDir === undefined || !isAbsolute(request.cliHomesDir))
    return notOurs("its request.json records no CLI-homes directory");
  const expected = join(request.cliHomesDir, runNames(runId, request.nonce).cliHome);
  if (!isAbsolute(home) || normalize(home) !== home || home !== expected)
    return notOurs(`it is not ${expected}, the home handoff made for the run`);
  let stats: ReturnType<typeof lstatSync>;
  try {
    stats = lstatSync(home);
  } catch {
    return { kind: "gone", home, keptUntil: session.keptUntil };
  }
  if (stats.isSymbolicLink()) return notOurs("it is a symbolic link");
  if (!stats.isDirectory()) return notOurs("it is not a directory");
  if (process.getuid && stats.uid !== process.getuid()) return notOurs(`it is owned by uid ${stats.uid}, not by you`);
  return { kind: "kept", home, keptUntil: session.keptUntil, expired: hasExpired(session.keptUntil, now) };
}

/** Past its `keptUntil`; a date that cannot be read counts as passed: nothing is kept for ever by mistake. */
export function hasExpired(keptUntil: string | null, now = Date.now()): boolean {
  const until = keptUntil === null ? Number.NaN : Date.parse(keptUntil);
  return Number.isNaN(until) || until <= now;
}

/** Why a resume did not get the kept home it checked: gc (or another resume) took it in between. */
export function keptHomeTaken(home: string): string {
  return `its kept session ${home} was taken after this resume checked it: handoff gc removed it, or another handoff resume continued it first`;
}
