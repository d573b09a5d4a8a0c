import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { simpleGit } from "simple-git";
import { expect, onTestFinished } from "vitest";
import { makeRepo, tempDir } from "./repo.js";
import type { DelegateOutcome, Harness } from "./run.js";

/**
 * Helpers for the threat tests (docs/threat-model.md, rows G and H): prove a planted trap was live by springing it with a plain,
 * unhardened git call after the run, and build the odd fixture repositories those tests need.
 */

/** Names of the payload markers that exist now. */
export function markers(harness: Harness): string[] {
  return readdirSync(harness.markerDir).sort();
}

export interface NaiveGitOutput {
  readonly exitCode: number;
  readonly stdout: string;
}

/**
 * git as a careless tool would run it: discovery from `cwd`, the repo's own config, no `-c` hardening. The test's
 * GIT_* variables are dropped and HOME is an empty dir unless given, so only what the agent planted can act.
 */
export function naiveGit(cwd: string, args: readonly string[], env: Record<string, string> = {}): Promise<NaiveGitOutput> {
  const base: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith("GIT_") && name !== "XDG_CONFIG_HOME") base[name] = value;
  }
  base.HOME = tempDir("handoff-naive-home");
  base.GIT_CONFIG_NOSYSTEM = "1";
  return new Promise((resolve) => {
    execFile("git", [...args], { cwd, env: { ...base, ...env }, encoding: "utf8" }, (error, stdout) => {
      const code = error && typeof (error as { code?: unknown }).code === "number" ? (error as { code: number }).code : error ? -1 : 0;
      resolve({ exitCode: code, stdout });
    });
  });
}

/** A plain git call in the agent's clone sees nothing changed: no status entry (untracked files included), no diff against HEAD. */
export async function expectHiddenFromClone(workTree: string): Promise<void> {
  expect((await naiveGit(workTree, ["status", "--porcelain", "--untracked-files=all"])).stdout).toBe("");
  expect((await naiveGit(workTree, ["diff", "--quiet", "HEAD"])).exitCode).toBe(0);
}

/** The kept workspace of a run made with `keepWorkspace: true`: its work tree and the agent's private HOME. */
export function keptWorkspace(run: DelegateOutcome): { workTree: string; home: string } {
  const workTree = run.result.workspace;
  if (!workTree) throw new Error("run with keepWorkspace: true to inspect the workspace");
  return { workTree, home: join(dirname(workTree), "home") };
}

/**
 * A fixture repo whose base commit holds a gitlink (mode 160000) at `path`, left unpopulated (an empty directory),
 * the way a clone without `--recurse-submodules` has it.
 */
export async function makeRepoWithGitlink(files: Record<string, string>, path: string): Promise<string> {
  const repo = await makeRepo(files);
  const git = simpleGit(repo);
  const head = (await git.revparse(["HEAD"])).trim();
  await git.raw(["update-index", "--add", "--cacheinfo", `160000,${head},${path}`]);
  await git.commit("add a submodule");
  mkdirSync(join(repo, path));
  return repo;
}

/**
 * Sets process environment variables for the rest of the current test and restores them after it. handoff must
 * not let any of them reach its own git calls.
 */
export function withProcessEnv(vars: Record<string, string>): void {
  const saved = new Map<string, string | undefined>();
  for (const [name, value] of Object.entries(vars)) {
    saved.set(name, process.env[name]);
    process.env[name] = value;
  }
  onTestFinished(() => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
}

/** Writes an executable payload script outside any repo that touches `<markerDir>/<name>` when run. */
export function writePayload(dir: string, markerDir: string, name: string): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\ntouch "${markerDir}/${name}"\nexit 0\n`, { mode: 0o755 });
  return path;
}
