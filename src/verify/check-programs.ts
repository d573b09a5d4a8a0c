import { mkdirSync, mkdtempSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import type { Containment, JailRole } from "../containment/containment.js";
import { hiddenPathsNamed, userHome } from "../containment/hidden-paths.js";
import { existingRealPath, isInside } from "../lib/paths.js";
import { captureProcess } from "../process/process.js";
import { buildEnvironment } from "../process/env.js";
import type { ProgramUnavailable } from "../vocabulary/events.js";
import { programsOf, saidLines, startProblem } from "./program-check.js";

export interface ProgramCheckRequest {
  readonly phase: "setup" | "verify";
  readonly commands: readonly string[];
  /** Where the commands will run (read-only here): the project's version files (.python-version) count. */
  readonly cwd: string;
  /** A directory for the check's private HOME and TMPDIR. */
  readonly scratch: string;
  readonly containment: Containment;
  readonly signal?: AbortSignal;
  /** Later commands whose programs are looked up in the same sandbox start, not judged here (`found`, `lookupSettles`). */
  readonly lookUpFor?: readonly string[];
}

/** Where the sandbox's PATH lookup found each program (only those it found), when the lookup itself succeeded. */
export type ProgramsFound = ReadonlyMap<string, string>;

const LOOKUP = 'for p do if r=$(command -v -- "$p"); then printf "%s\\t%s\\n" "$p" "$r"; else printf "%s\\t\\n" "$p"; fi; done';
const START_TIMEOUT_MS = 30_000;

/**
 * Before the agent starts: in the same sandbox the commands will get, each program they start is looked up on PATH,
 * and one that resolves into the user's home (a pyenv shim, a rustup proxy) is started once (`--version`). The
 * first that cannot be found or started is returned; null when all can.
 */
export async function checkPrograms(request: ProgramCheckRequest): Promise<ProgramUnavailable | null> {
  return (await checkProgramsAndLookUp(request)).unavailable;
}

/** `checkPrograms`, and where the lookup found each program (its own and `lookUpAlso`'s); `found` null when it failed. */
export async function checkProgramsAndLookUp(
  request: ProgramCheckRequest,
): Promise<{ readonly unavailable: ProgramUnavailable | null; readonly found: ProgramsFound | null }> {
  const firstCommand = new Map<string, string>();
  for (const command of request.commands)
    for (const program of programsOf(command)) if (!firstCommand.has(program)) firstCommand.set(program, command);
  const also = [...new Set((request.lookUpFor ?? []).flatMap((command) => programsOf(command)))].filter(
    (program) => !firstCommand.has(program),
  );
  if (firstCommand.size === 0 && also.length === 0) return { unavailable: null, found: new Map() };
  const root = mkdtempSync(join(request.scratch, `program-check-${request.phase}-`));
  const home = join(root, "home");
  const tmp = join(root, "tmp");
  for (const dir of [home, tmp]) mkdirSync(dir, { mode: 0o700 });
  // The environment the commands get: the allowlist, no --env names (those are the agent's).
  const env = buildEnvironment({ home, tmp, set: { CI: "true" } });
  const role: JailRole = request.phase;
  const run = async (label: string, file: string, args: readonly string[]) => {
    const jail = request.containment.jail({ role, label, cwd: request.cwd, writable: [home, tmp], readOnly: [request.cwd], offline: true });
    const wrapped = jail.wrap({ file, args: [...args] });
    try {
      return await captureProcess({
        file: wrapped.file,
        args: wrapped.args,
        cwd: request.cwd,
        env: { ...env, ...wrapped.env },
        maxBuffer: 256 * 1024,
        timeoutMs: START_TIMEOUT_MS,
        signal: request.signal,
      });
    } finally {
      await jail.finish();
    }
  };

  const programs = [...firstCommand.keys()];
  const lookup = await run("program check", "/bin/sh", ["-c", LOOKUP, "sh", ...programs, ...also]);
  const found = new Map<string, string>();
  for (const line of lookup.stdout.toString("utf8").split("\n")) {
    const [program, resolved] = line.split("\t");
    if (program && resolved) found.set(program, resolved);
  }
  const looked = lookup.exitCode === 0 && !request.signal?.aborted ? found : null;
  return { unavailable: await judge(request, firstCommand, found, lookup.exitCode, run), found: looked };
}

async function judge(
  request: ProgramCheckRequest,
  firstCommand: ReadonlyMap<string, string>,
  found: ReadonlyMap<string, string>,
  lookupExit: number | null,
  run: (label: string, file: string, args: readonly string[]) => Promise<{ exitCode: number | null; stdout: Buffer; stderr: string }>,
): Promise<ProgramUnavailable | null> {
  const programs = [...firstCommand.keys()];
  const home0 = existingRealPath(userHome()) ?? userHome();
  for (const program of programs) {
    const command = firstCommand.get(program)!;
    const resolved = found.get(program) ?? null;
    if (resolved === null) {
      if (lookupExit !== 0 || request.signal?.aborted) return null; // the check itself failed: the commands will tell
      return {
        phase: request.phase,
        command,
        program,
        resolved,
        problem: "not_found",
        said: `${program}: not found on PATH in the sandbox`,
      };
    }
    // Only what lives in the home needs a start: a shim or proxy whose manager may be out of the sandbox's sight.
    const real = existingRealPath(resolved);
    if (!real || !isInside(real, home0)) continue;
    const started = await run(`${program} --version`, resolved, ["--version"]);
    if (request.signal?.aborted) return null;
    const output = `${started.stderr}\n${started.stdout.toString("utf8")}`;
    if (startProblem(started.exitCode, output)) {
      // What it reached for in the home that the sandbox does not show (a path like bin/../../x, normalised).
      const settings = request.containment.settings;
      const visible = [
        ...settings.path.split(delimiter).map((dir) => existingRealPath(dir) ?? dir),
        ...(settings.toolchains?.exposed ?? []).map((entry) => entry.path),
      ];
      const tried = hiddenPathsNamed(output, [home0], [])
        .map((path) => resolve(path))
        .filter((path) => isInside(path, home0) && !visible.some((dir) => isInside(path, dir)))
        .map((path) => topBelow(path, home0));
      return {
        phase: request.phase,
        command,
        program,
        resolved,
        problem: "cannot_start",
        said: saidLines(output) || `exit ${started.exitCode}`,
        tried: [...new Set(tried)],
      };
    }
  }
  return null;
}

/**
 * Whether checking `commands` again in the same sandbox, in another directory and after setup ran, must find what
 * `found` (an earlier lookup of theirs) says: every program of theirs was found at an absolute path outside the home
 * (so the check would start none of them), and PATH has only absolute entries (so neither the directory nor setup's
 * work tree, home or caches, all hidden places the check does not see, can change what a name resolves to). Then that
 * check cannot say any is unavailable, and is not run again.
 */
export function lookupSettles(commands: readonly string[], found: ProgramsFound, pathVariable: string): boolean {
  if (pathVariable.split(delimiter).some((dir) => !isAbsolute(dir))) return false;
  const home0 = existingRealPath(userHome()) ?? userHome();
  for (const command of commands)
    for (const program of programsOf(command)) {
      const resolved = found.get(program);
      if (resolved === undefined || !isAbsolute(resolved)) return false;
      const real = existingRealPath(resolved);
      if (!real || isInside(real, home0)) return false;
    }
  return true;
}

/** The directory right below the home that holds `path` (`~/.pyenv` for `~/.pyenv/libexec/pyenv`): what to expose. */
function topBelow(path: string, home: string): string {
  const rest = path.slice(home.length + 1).split("/")[0];
  return rest ? join(home, rest) : path;
}
