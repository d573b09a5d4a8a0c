import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { RunNotFoundError } from "./errors.js";
import { defaultRunsDir } from "./options.js";
import { RunResult } from "./result.js";

export interface LoadedRun {
  readonly dir: string;
  readonly result: RunResult;
}

/** A run named by id (looked up in the runs directory) or by its directory path. */
export function loadRun(ref: string, runsDir: string = defaultRunsDir()): LoadedRun {
  const candidates = ref.includes("/") || ref.startsWith(".") ? [resolve(ref)] : [join(runsDir, ref), resolve(ref)];
  const dir = candidates.find((path) => existsSync(join(path, "result.json")) && statSync(path).isDirectory());
  if (!dir) {
    const exists = candidates.find((path) => existsSync(path));
    throw new RunNotFoundError(ref, exists ? "it has no result.json (still running, or crashed)" : `looked in ${candidates.join(" and ")}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(join(dir, "result.json"), "utf8"));
  } catch (error) {
    throw new RunNotFoundError(ref, `result.json is not valid JSON (${(error as Error).message})`);
  }
  const parsed = RunResult.safeParse(json);
  if (!parsed.success) throw new RunNotFoundError(ref, `result.json does not match schema version 1 (${parsed.error.issues[0]?.message})`);
  return { dir, result: parsed.data };
}
