import { resolve } from "node:path";
import { runOptionsFromFlags } from "../cli/run-and-report.js";
import { UsageError } from "../lib/errors.js";
import { existingRealPath, isInside } from "../lib/paths.js";
import { defaultRunsDir } from "../run-dir/default-places.js";
import type { RunOptions } from "../run/options.js";
import { type FlagValues, optionsFromFlags } from "../settings/command-line.js";

/** What the user fixed by starting `handoff mcp`: the same for every tool call, never widened by one. */
export interface McpServerSettings {
  /** The server's repository (`-C`, else its working directory): where `delegate` runs and `apply_run` stages. */
  readonly repo: string;
  /** `--allow-repo`: real paths of directories whose repositories a call may name besides the server's. */
  readonly allowRepos: readonly string[];
  /** `--yes`: the user's consent for every delegated task; else each is asked through MCP elicitation. */
  readonly yes: boolean;
  /** `--allow-dirty`: delegate from, and apply to, a repository with uncommitted changes. */
  readonly allowDirty: boolean;
  readonly runsDir: string;
  /** The `RunOptions` the command line gives every run (approval aside). */
  readonly runOptions: Omit<RunOptions, "task" | "approve">;
  /** The same, as set by the command line alone: what a call's `chooses` and `first` settings are held to. */
  readonly commandLine: Readonly<Record<string, unknown>>;
}

/** The server's settings from its parsed command line (the `run` options, and `--allow-repo`). */
export function serverSettings(values: FlagValues, cwd: string): McpServerSettings {
  const { approve: _asked, ...runOptions } = runOptionsFromFlags("run", values, false);
  const allowRepos = ((values["allow-repo"] as string[] | undefined) ?? []).map((dir) => {
    const real = existingRealPath(resolve(cwd, dir));
    if (real === null) throw new UsageError("bad_directory", `--allow-repo ${dir}: no such directory`);
    return real;
  });
  return {
    repo: resolve(cwd, (values.repo as string | undefined) ?? "."),
    allowRepos,
    yes: values.yes === true,
    allowDirty: values["allow-dirty"] === true,
    runsDir: (values["runs-dir"] as string | undefined) ?? defaultRunsDir(),
    runOptions,
    commandLine: optionsFromFlags("run", values),
  };
}

/** The repository a call names, or the server's: another only inside a directory `--allow-repo` names. */
export function allowedRepo(settings: McpServerSettings, asked: string | undefined): string {
  if (asked === undefined) return settings.repo;
  const real = existingRealPath(resolve(settings.repo, asked));
  const server = existingRealPath(settings.repo);
  if (real !== null && (real === server || settings.allowRepos.some((dir) => isInside(real, dir)))) return real;
  throw new UsageError(
    "repo_not_allowed",
    `repository ${asked} is not this server's (${settings.repo})${settings.allowRepos.length > 0 ? " nor inside a directory --allow-repo names" : "; start handoff mcp with --allow-repo DIR to allow others"}`,
  );
}

/** Whether a run's repository is one this server may act on: its own, or one inside an `--allow-repo` directory. */
export function isAllowedRepo(settings: McpServerSettings, repo: string): boolean {
  const real = existingRealPath(repo);
  if (real === null) return false;
  return real === existingRealPath(settings.repo) || settings.allowRepos.some((dir) => isInside(real, dir));
}
