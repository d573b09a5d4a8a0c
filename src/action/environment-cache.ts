import { mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { inspectSource } from "../clone/source-repo.js";
import { defaultCacheDir } from "../environment/cache-store.js";
import { environmentIdentity } from "../environment/environment-key.js";
import { exportEnvironment, importEnvironment } from "../environment/environment-transfer.js";
import { setupInputs } from "../environment/setup-inputs.js";
import { readConfig } from "../run/config.js";

/**
 * The base environment across workflow runs (a runner starts with an empty handoff cache): restored from the Actions
 * cache before `handoff run`, saved after a run that built it. The Actions cache key is handoff's own environment key
 * (environment-key.ts, computed here the way the run computes it) and the archive's sha256:
 * `handoff-environment-<key>-<sha256>`. handoff's import proves what it can before the run may take it
 * (environment-transfer.ts); the run then proves it as any cached environment.
 */

/**
 * Where the archive goes: beside the workspace (`/home/runner/work/<repo>/.handoff-environment/`), a path that is the
 * same in every run, as the Actions cache needs (the path is part of an entry's version, and it is restored there).
 */
function archivePath(workspace: string): string {
  return join(dirname(resolve(workspace)), ".handoff-environment", "environment.tar");
}
const PREFIX = "handoff-environment-";

export type EnvironmentCachePlan =
  | {
      readonly kind: "planned";
      readonly archive: string;
      readonly key: string;
      readonly cacheDir: string;
      readonly gitDir: string;
      readonly baseCommit: string;
      readonly setup: readonly string[];
    }
  | { readonly kind: "skipped"; readonly why: string };

export type EnvironmentRestore =
  | { readonly kind: "restored"; readonly cacheKey: string }
  | { readonly kind: "missed" }
  | { readonly kind: "refused"; readonly cacheKey: string; readonly why: string }
  | { readonly kind: "skipped"; readonly why: string };

export type EnvironmentSave = { readonly kind: "saved"; readonly cacheKey: string } | { readonly kind: "not_saved"; readonly why: string };

/** The values of one flag in `handoff run`'s arguments (the action inputs as options). */
function flagValues(args: readonly string[], flag: string): string[] {
  return args.flatMap((arg, index) => (arg === flag && index + 1 < args.length ? [args[index + 1]!] : []));
}

/** The environment this run will look up, computed as the run computes it: setup from the inputs, else .handoff.json. */
export async function planEnvironmentCache(
  workspace: string,
  cliArgs: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<EnvironmentCachePlan> {
  if (flagValues(cliArgs, "--sandbox").at(-1) === "none")
    return { kind: "skipped", why: "sandbox: none (a run without the sandbox builds its own environment and keeps none)" };
  if (!(await import("@actions/cache")).isFeatureAvailable()) return { kind: "skipped", why: "no Actions cache service in this job" };
  const source = await inspectSource(workspace);
  const config = await readConfig(source);
  const given = flagValues(cliArgs, "--setup");
  const setup = given.length > 0 ? given : (config.setup ?? []);
  if (setup.length === 0) return { kind: "skipped", why: "no setup commands" };
  const identity = await environmentIdentity(source.gitDir, source.baseCommit, setup, setupInputs(setup, config.setupInputs ?? []));
  return {
    kind: "planned",
    archive: archivePath(workspace),
    key: identity.key,
    cacheDir: defaultCacheDir(env),
    gitDir: source.gitDir,
    baseCommit: source.baseCommit,
    setup,
  };
}

/** Any cache library failure is a miss: the run builds the environment, as without the cache. */
export async function restoreEnvironment(plan: EnvironmentCachePlan): Promise<EnvironmentRestore> {
  if (plan.kind === "skipped") return plan;
  const cache = await import("@actions/cache");
  const prefix = `${PREFIX}${plan.key}-`;
  const cacheKey = await cache.restoreCache([plan.archive], `${PREFIX}${plan.key}`, [prefix]);
  if (cacheKey === undefined) return { kind: "missed" };
  const archive = plan.archive;
  try {
    const imported = await importEnvironment({
      cacheDir: plan.cacheDir,
      key: plan.key,
      archive,
      sha256: cacheKey.startsWith(prefix) ? cacheKey.slice(prefix.length) : "",
      gitDir: plan.gitDir,
      baseCommit: plan.baseCommit,
      setup: plan.setup,
    });
    return imported.kind === "imported" ? { kind: "restored", cacheKey } : { kind: "refused", cacheKey, why: imported.why };
  } finally {
    rmSync(join(archive, ".."), { recursive: true, force: true });
  }
}

/** After a run that built the environment of the plan: exported, proven, and saved under its key and sha256. */
export async function saveEnvironment(
  plan: EnvironmentCachePlan,
  built: { readonly key: string | null; readonly source: string; readonly cacheDir: string } | null | undefined,
): Promise<EnvironmentSave> {
  if (plan.kind === "skipped") return { kind: "not_saved", why: plan.why };
  if (built?.source !== "built" || built.key !== plan.key)
    return { kind: "not_saved", why: built?.source === "reused" ? "the run reused it" : "the run did not build it in the shared cache" };
  const archive = plan.archive;
  mkdirSync(join(archive, ".."), { recursive: true });
  try {
    // The cache the run used (result.json says which), where it committed what it built.
    const exported = await exportEnvironment(built.cacheDir, plan.key, archive);
    if (exported.kind === "refused") return { kind: "not_saved", why: exported.why };
    const cacheKey = `${PREFIX}${plan.key}-${exported.sha256}`;
    const cache = await import("@actions/cache");
    const id = await cache.saveCache([plan.archive], cacheKey);
    return id === -1
      ? { kind: "not_saved", why: "the Actions cache did not take it (see the warning above)" }
      : { kind: "saved", cacheKey };
  } finally {
    rmSync(join(archive, ".."), { recursive: true, force: true });
  }
}
