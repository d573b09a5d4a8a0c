import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gitOut } from "./git.mjs";
import { editedContent, textContent } from "./synthetic-content.mjs";

const BINARY_EXTENSIONS = /\.(png|bin|woff2)$/;

/**
 * What the simulated agent does to a checkout (the extraction workload): inserts a line in 1% of the tracked
 * text files (every 100th in `ls-files` order) and adds 20 new files. Applied identically to handoff's workspace and
 * to the anchor's clone, so both extract the same change.
 */
export async function planAgentEdit(repoPath) {
  const tracked = (await gitOut(repoPath, ["ls-files", "-z"])).split("\0").filter(Boolean);
  const text = tracked.filter((path) => !BINARY_EXTENSIONS.test(path) && path !== ".gitignore");
  const modified = text.filter((_, index) => index % 100 === 0);
  const added = Array.from({ length: 20 }, (_, i) => {
    const dir = modified[i % modified.length].split("/").slice(0, -1).join("/");
    return dir ? `${dir}/agent_added_${i}.js` : `agent_added_${i}.js`;
  });
  return { modified, added };
}

export function applyAgentEdit(workTree, plan) {
  for (const path of plan.modified) {
    const abs = join(workTree, path);
    writeFileSync(abs, editedContent(readFileSync(abs), `agent ${path}`, 1));
  }
  for (const [i, path] of plan.added.entries()) writeFileSync(join(workTree, path), textContent(`agent added ${i}`, 500 + i * 97));
}
