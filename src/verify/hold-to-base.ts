import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type GitTarget, git, splitNul } from "../process/git.js";

/**
 * One changed verification input, put back for the run held to the base: its base content restored (a deleted one
 * comes back), a runner config the patch added removed, or, for package.json, the patch's file with the base's
 * scripts (written by handoff, never read from the agent's tree).
 */
export type HoldStep =
  | { readonly kind: "restore"; readonly path: string }
  | { readonly kind: "remove"; readonly path: string }
  | { readonly kind: "write"; readonly path: string; readonly bytes: Buffer };

const literal = (path: string) => `:(literal)${path}`;
const nulList = (items: readonly string[]) => Buffer.concat(items.flatMap((item) => [Buffer.from(item), Buffer.from([0])]));

/** Applies the steps to a checkout (work tree and index), with git plumbing only: no filter or hook of the repository runs. */
export async function holdToBase(
  target: GitTarget & { workTree: string },
  baseCommit: string,
  steps: readonly HoldStep[],
  signal?: AbortSignal,
): Promise<void> {
  const restore = steps.filter((step) => step.kind === "restore").map((step) => literal(step.path));
  if (restore.length > 0) {
    await git(target, ["restore", `--source=${baseCommit}`, "--staged", "--worktree", "--pathspec-from-file=-", "--pathspec-file-nul"], {
      input: nulList(restore),
      signal,
    });
  }
  const remove = steps.filter((step) => step.kind === "remove").map((step) => literal(step.path));
  if (remove.length > 0) {
    await git(target, ["rm", "-q", "-f", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"], {
      input: nulList(remove),
      signal,
    });
  }
  for (const step of steps) {
    if (step.kind !== "write") continue;
    const entry = splitNul((await git(target, ["ls-files", "-s", "-z", "--", literal(step.path)], { signal })).stdout)[0]?.toString("utf8");
    const mode = entry?.split(" ")[0] === "100755" ? "100755" : "100644";
    const oid = (await git(target, ["hash-object", "-w", "--no-filters", "--stdin"], { input: step.bytes, signal })).stdout
      .toString("utf8")
      .trim();
    await git(target, ["update-index", "--add", "--cacheinfo", `${mode},${oid},${step.path}`], { signal });
    writeFileSync(join(target.workTree, step.path), step.bytes);
  }
  await git(target, ["update-index", "-q", "--refresh"], { okExitCodes: [1], signal });
}
