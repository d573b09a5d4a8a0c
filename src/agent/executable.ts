import { accessSync, constants, existsSync, mkdtempSync, realpathSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, delimiter, dirname, isAbsolute, join, resolve, sep } from "node:path";
import type { CliHome } from "./cli-contract.js";
import { prepareCliHome } from "./cli-home-prepare.js";
import { removeTree } from "../clone/workspace.js";
import { runProcess } from "../process/process.js";
import { which } from "../process/which.js";
import { packageRoot } from "../lib/package-root.js";

/** Where an agent CLI's executable was found: `--bin`, PATH, or the directory handoff installs CLIs into. */
export type ExecutableSource = "bin" | "path" | "handoff";

export interface ResolvedExecutable {
  readonly path: string;
  /** PATH for the agent: with `--bin` or handoff's install dir, its directory comes first (npm's .bin dirs hold the CLI's runtime, e.g. bun for omp). */
  readonly pathEnv: string;
  readonly foundIn: ExecutableSource;
}

/** The CLI a backend runs: its `--backend` name (its folder in handoff's install dir) and its executable's name. */
export interface CliExecutableName {
  readonly name: string;
  readonly executable: string;
}

/**
 * Where handoff itself installs agent CLIs (`npm run agent-clis`, and `npm run demo` for Claude Code): one pinned
 * package per CLI in `test/agent-clis/<name>/` of handoff's clone. `HANDOFF_AGENT_CLIS_DIR` names another such
 * directory (an empty value: none). Null when handoff runs from a package without that folder.
 */
export function handoffCliInstallDir(env: Readonly<Record<string, string | undefined>> = process.env): string | null {
  const named = env.HANDOFF_AGENT_CLIS_DIR;
  if (named !== undefined) return named === "" ? null : resolve(named);
  const root = packageRoot();
  return root === null ? null : join(root, "test", "agent-clis");
}

/**
 * The one resolver of an agent CLI's executable, for `handoff run` and `handoff backends` alike: `--bin` if given (it
 * must be executable; nothing else is tried), else the CLI's name on PATH, else `<install dir>/<name>/node_modules/.bin/<executable>`
 * in the directory handoff installs CLIs into (handoffCliInstallDir).
 */
export function resolveExecutable(
  cli: CliExecutableName,
  bin: string | null,
  pathEnv: string | undefined,
  installDir: string | null = handoffCliInstallDir(),
): ResolvedExecutable | null {
  const path = pathEnv ?? "/usr/local/bin:/usr/bin:/bin";
  if (bin) {
    const absolute = resolve(bin);
    return isExecutable(absolute) ? { path: absolute, pathEnv: `${dirname(absolute)}${delimiter}${path}`, foundIn: "bin" } : null;
  }
  const found = which(cli.executable, path);
  if (found) return { path: found, pathEnv: path, foundIn: "path" };
  if (installDir === null) return null;
  const installed = join(installDir, cli.name, "node_modules", ".bin", cli.executable);
  return isExecutable(installed) ? { path: installed, pathEnv: `${dirname(installed)}${delimiter}${path}`, foundIn: "handoff" } : null;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export type VersionProbe = { readonly ok: true; readonly version: string } | { readonly ok: false; readonly reason: string };

/**
 * `<cli> --version` in a throwaway home: even `--version` makes some CLIs write state (Codex into CODEX_HOME,
 * OpenCode into its XDG dirs), and none of that may land in the user's real home. `cliHome` is the backend's own
 * private home (its env), made in the throwaway dir without any login links.
 */
export async function probeVersion(
  executable: string,
  pathEnv: string,
  cliHome: (homeDir: string, userEnv: Readonly<Record<string, string | undefined>>) => CliHome,
): Promise<VersionProbe> {
  const home = mkdtempSync(join(tmpdir(), "handoff-probe-"));
  let out = "";
  let err = "";
  try {
    const cli = cliHome(join(home, "cli"), { HOME: home });
    prepareCliHome(cli);
    const outcome = await runProcess({
      file: executable,
      args: ["--version"],
      cwd: home,
      env: {
        PATH: pathEnv,
        HOME: home,
        TMPDIR: home,
        XDG_CONFIG_HOME: join(home, ".config"),
        XDG_DATA_HOME: join(home, ".local/share"),
        XDG_CACHE_HOME: join(home, ".cache"),
        XDG_STATE_HOME: join(home, ".local/state"),
        ...cli.env,
      },
      timeoutMs: 20_000,
      onStdout: (chunk) => (out += chunk.toString("utf8")),
      onStderr: (chunk) => (err += chunk.toString("utf8")),
    });
    // pi prints its version on stderr.
    const printed = out.trim() !== "" ? out : err;
    if (outcome.exitCode === 0 && printed.trim() !== "") return { ok: true, version: versionNumber(printed) };
    const why =
      outcome.spawnError?.message ??
      (outcome.timedOut ? "timed out" : err.trim().split("\n")[0] || `exit ${outcome.exitCode ?? outcome.signal}`);
    return { ok: false, reason: `\`${executable} --version\` failed: ${why.slice(0, 200)}` };
  } finally {
    removeTree(home);
  }
}

/** "codex-cli 0.171.0", "2.1.197 (Claude Code)", "omp/18.2.3" → the version number; other text as printed. */
export function versionNumber(printed: string): string {
  const first = printed.trim().split("\n")[0]!;
  return (/\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?/.exec(first)?.[0] ?? first).slice(0, 100);
}

/**
 * What the CLI needs to see inside the sandbox when it is installed in a hidden place (under the home, say): its
 * PATH dirs, the npm prefix's lib beside a `bin` dir (global installs link bin/x to lib/node_modules/…), and the
 * outermost node_modules its real path lies in (an npm CLI loads its platform binary from a sibling package).
 */
export function installMounts(executable: string, pathEnv: string): { readOnly: string[] } {
  const readOnly = new Set<string>([dirname(executable)]);
  for (const dir of pathEnv.split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    readOnly.add(dir);
    if (basename(dir) === "bin" && existsSync(join(dirname(dir), "lib", "node_modules"))) readOnly.add(join(dirname(dir), "lib"));
  }
  let real: string;
  try {
    real = realpathSync(executable);
  } catch {
    return { readOnly: [...readOnly] };
  }
  const parts = real.split(sep);
  const outermost = parts.indexOf("node_modules");
  readOnly.add(outermost > 0 ? parts.slice(0, outermost + 1).join(sep) : dirname(real));
  return { readOnly: [...readOnly] };
}
