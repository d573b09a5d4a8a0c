import { EnvironmentCache, cacheLimitBytes, defaultCacheDir } from "../../environment/cache-store.js";
import { UsageError } from "../../lib/errors.js";
import { escapeControls } from "../../vocabulary/display.js";
import { clearCache, listCache, renderCacheClearing, renderCacheListing } from "../cache-report.js";
import { parseOptions } from "../parse-options.js";

export const CACHE_OPTIONS = { json: { type: "boolean" }, "keep-downloads": { type: "boolean" } } as const;
const CACHE_USAGE = "usage: handoff cache list [--json] | handoff cache clear [--keep-downloads] [--json]";

/** `handoff cache list|clear`: the cached base environments ($HANDOFF_CACHE_DIR, else $XDG_CACHE_HOME/handoff), listed or removed. */
export function command(args: readonly string[]): number {
  const { values, positionals } = parseOptions("cache", args, CACHE_OPTIONS);
  const [subcommand, ...extra] = positionals;
  if (subcommand === undefined || extra.length > 0) throw new UsageError("bad_arguments", CACHE_USAGE);
  if (subcommand !== "list" && subcommand !== "clear")
    throw new UsageError("unknown_subcommand", `unknown cache subcommand '${escapeControls(subcommand.slice(0, 100))}' (${CACHE_USAGE})`);
  if (subcommand === "list" && values["keep-downloads"])
    throw new UsageError("bad_option", "--keep-downloads is an option of 'handoff cache clear', not of 'handoff cache list'");
  const cache = new EnvironmentCache(defaultCacheDir(), cacheLimitBytes());
  const report = subcommand === "list" ? listCache(cache) : clearCache(cache, values["keep-downloads"] === true);
  if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else process.stdout.write("limitBytes" in report ? renderCacheListing(report) : renderCacheClearing(report));
  return 0;
}
