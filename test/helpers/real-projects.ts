import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import fg from "fast-glob";
import { expect } from "vitest";
import { gitIn, makeRepo } from "./repo.js";
import { type DelegateOutcome, delegate } from "./run.js";

/** Small fixtures recorded from real projects (test/fixtures/real-projects/NAME/README.md says from where). */
export const REAL_PROJECTS = resolve(import.meta.dirname, "../fixtures/real-projects");

/** The project's tree as a repository at the parent of the upstream fix, with `variant.patch` committed on top when given. */
export async function realProjectRepo(name: string, variant?: string): Promise<string> {
  const tree = join(REAL_PROJECTS, name, "tree");
  const paths = fg.sync("**", { cwd: tree, dot: true, onlyFiles: true });
  const repo = await makeRepo(Object.fromEntries(paths.map((path) => [path, readFileSync(join(tree, path), "utf8")])));
  if (variant !== undefined) {
    execFileSync("git", ["-C", repo, "apply", "--index", join(REAL_PROJECTS, name, variant)]);
    gitIn(repo, "commit", "-q", "-m", variant);
  }
  return repo;
}

/** Whether `program` starts here (the user's python3 with pytest, rustup's cargo): the suites below need it. */
export function starts(program: string, ...args: string[]): boolean {
  try {
    execFileSync(program, args, { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Runs the project's scripted agent (`agent.sh KIND`: the upstream fix or one kind of tampering) through handoff, sandboxed. */
export function runAgent(
  repo: string,
  name: string,
  kind: string,
  commands: { readonly setup: readonly string[]; readonly verify: readonly string[] },
): Promise<DelegateOutcome> {
  return delegate(repo, `sh ${join(REAL_PROJECTS, name, "agent.sh")} ${kind}`, {
    setup: [...commands.setup],
    verify: [...commands.verify],
  });
}

export function expectVerified(run: DelegateOutcome): void {
  expect(run.result.terminalReason, run.result.summary).toBe("verified");
  expect(run.sourceChanged).toEqual([]);
}

/** The tampering never verifies: verification fails with `detail` (held to the base, or the runner's summary). */
export function expectRefused(run: DelegateOutcome, detail: string): void {
  expect(run.result.terminalReason, run.result.summary).toBe("verification_failed");
  expect(run.result.detail, run.result.summary).toBe(detail);
  expect(run.sourceChanged).toEqual([]);
}
