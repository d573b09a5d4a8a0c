import { UsageError } from "../lib/errors.js";
import { type GitTarget, git, splitNul } from "../process/git.js";

/**
 * The source's own filter drivers. A `filter.<driver>.clean`/`.process` in your `.git/config` (or a file it
 * includes) would run whenever handoff's `git status` re-reads a racily clean file, about twenty times a run, and a
 * broken `.process` filter made git die. handoff's reads of the source run no program from the source's config:
 * every driver named there is switched off for handoff's git calls on the source (empty commands, not required),
 * so a `.gitattributes` `filter=<driver>` is a no-op there, as it is in every git dir handoff makes itself.
 * threat-model.md G18.
 */

/** Driver names of every `filter.<driver>.*` key the source's config holds (one `git config` call, nothing runs). */
export async function readFilterDrivers(target: GitTarget): Promise<string[]> {
  const out = await git(target, ["config", "-z", "--name-only", "--get-regexp", "^filter\\."], { okExitCodes: [1] });
  const drivers = new Set<string>();
  for (const record of splitNul(out.stdout)) {
    const key = record.toString("utf8");
    const lastDot = key.lastIndexOf(".");
    if (lastDot <= "filter.".length) continue; // `filter.x` has no driver name: git ignores it too
    const driver = key.slice("filter.".length, lastDot);
    if (!Buffer.from(driver, "utf8").equals(record.subarray("filter.".length, record.lastIndexOf(0x2e)))) {
      throw new UsageError(
        "unsupported_filter",
        `the repository's config names a filter driver whose name is not UTF-8 (${JSON.stringify(driver)}); handoff cannot switch it off`,
      );
    }
    drivers.add(driver);
  }
  return [...drivers];
}

/** Config that switches every named driver off: passed through GIT_CONFIG_KEY_n (a driver name may hold `=`). */
export function filterOverrides(drivers: readonly string[]): [string, string][] {
  return drivers.flatMap((driver): [string, string][] => [
    [`filter.${driver}.clean`, ""],
    [`filter.${driver}.smudge`, ""],
    [`filter.${driver}.process`, ""],
    [`filter.${driver}.required`, "false"],
  ]);
}

/**
 * Of `paths`, those whose `filter` attribute names one of `drivers`: with the filter off, git compares such a
 * file's raw bytes with the filtered blob (an LFS pointer), so "modified" says nothing about it.
 */
export async function pathsUnderFilter(target: GitTarget, paths: readonly Buffer[], drivers: readonly string[]): Promise<Set<string>> {
  const named = new Set(drivers);
  const filtered = new Set<string>();
  if (paths.length === 0 || named.size === 0) return filtered;
  const nul = Buffer.from([0]);
  const out = await git(target, ["check-attr", "-z", "--stdin", "filter"], { input: Buffer.concat(paths.flatMap((path) => [path, nul])) });
  const records = splitNul(out.stdout);
  for (let i = 0; i + 2 < records.length; i += 3) {
    if (named.has(records[i + 2]!.toString("utf8"))) filtered.add(records[i]!.toString("latin1"));
  }
  return filtered;
}
