import { UsageError } from "../lib/errors.js";
import { git } from "../process/git.js";
import { type SourceRepo, sourceTarget } from "../clone/source-repo.js";
import { HandoffConfig } from "../settings/file-schema.js";

export const CONFIG_FILE = ".handoff.json";

/** The largest `.handoff.json` handoff reads: a config is a few hundred bytes; more is a mistake, never a crash. */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/** Read from the base commit, not the work tree: an uncommitted edit cannot steer the run. */
export async function readConfig(source: SourceRepo): Promise<HandoffConfig> {
  const object = `${source.baseCommit}:${CONFIG_FILE}`;
  const size = await git(sourceTarget(source), ["cat-file", "-s", object], { okExitCodes: [128] });
  if (size.exitCode !== 0) return {};
  const bytes = Number(size.stdout.toString("utf8").trim());
  if (!(bytes <= MAX_CONFIG_BYTES)) {
    throw new UsageError(
      "invalid_config",
      `${CONFIG_FILE} at ${source.baseCommit.slice(0, 12)} is ${bytes} bytes; the most handoff reads is ${MAX_CONFIG_BYTES} (1 MiB)`,
    );
  }
  const out = await git(sourceTarget(source), ["cat-file", "-p", object], { okExitCodes: [128], maxBuffer: MAX_CONFIG_BYTES });
  if (out.exitCode !== 0) return {};
  let json: unknown;
  try {
    json = JSON.parse(out.stdout.toString("utf8"));
  } catch (error) {
    throw new UsageError(
      "invalid_config",
      `${CONFIG_FILE} at ${source.baseCommit.slice(0, 12)} is not valid JSON: ${(error as Error).message}`,
    );
  }
  const parsed = HandoffConfig.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = issue.code === "unrecognized_keys" ? issue.keys.join(", ") : issue.path.join(".") || "(root)";
    throw new UsageError("invalid_config", `${CONFIG_FILE}: bad key '${key}': ${issue.message}`);
  }
  return parsed.data;
}
