import { BACKEND_NAMES, CLI_BACKEND_ROWS, CLI_BACKENDS, COMMAND_BACKEND, type CliName, unknownBackend } from "../../backends/index.js";
import { hintFor } from "../agent/cli-failures.js";
import { type ExecutableSource, probeVersion, resolveExecutable } from "../agent/executable.js";
import { UsageError } from "../lib/errors.js";

export interface BackendAvailability {
  readonly name: string;
  readonly executable: string | null;
  /** Where the executable was found: `bin` (--bin), `path` (PATH) or `handoff` (handoff's install dir); null when not found. */
  readonly foundIn: ExecutableSource | null;
  readonly version: string | null;
  /** The version handoff's conformance suite runs against. */
  readonly testedVersion: string | null;
  readonly usable: boolean;
  readonly hint: string | null;
}

/** `handoff backends [-b NAME] [--bin PATH]`: which backends to look at, and the executable `--bin` names for the one. */
export interface BackendsQuery {
  /** Only this backend (`-b NAME`); every backend when absent. */
  readonly only?: string;
  /** The executable of the one backend `-b` names, resolved as `handoff run -b NAME --bin PATH` resolves it. */
  readonly bin?: string;
}

/**
 * What `handoff backends` reports: for each agent CLI, the executable `handoff run` would start (--bin, else PATH,
 * else handoff's install dir: src/agent/executable.ts), where it was found, its version, and whether it runs here.
 */
export async function listBackends(
  pathEnv: string | undefined = process.env.PATH,
  query: BackendsQuery = {},
): Promise<BackendAvailability[]> {
  const { only, bin } = query;
  if (only !== undefined && !BACKEND_NAMES.includes(only as CliName)) throw unknownBackend(only);
  if (bin !== undefined && only === undefined)
    throw new UsageError(
      "bin_without_backend",
      "--bin names one backend's executable: say which with -b NAME (handoff backends -b claude --bin PATH)",
    );
  if (bin !== undefined && only === COMMAND_BACKEND)
    throw new UsageError("bin_with_command", "--bin does not apply to the command backend: its program is --agent-cmd");
  const rows = CLI_BACKEND_ROWS.filter(({ name }) => only === undefined || name === only);
  const report = await Promise.all(
    rows.map(async ({ name, definition }): Promise<BackendAvailability> => {
      const { info } = CLI_BACKENDS[name];
      const executable = resolveExecutable(info, bin ?? null, pathEnv);
      if (!executable) {
        return {
          name: info.name,
          executable: null,
          foundIn: null,
          version: null,
          testedVersion: info.testedVersion,
          usable: false,
          hint: bin !== undefined ? `--bin ${bin} is not an executable file` : hintFor("executable_unavailable", info),
        };
      }
      const probe = await probeVersion(executable.path, executable.pathEnv, definition.home);
      if (!probe.ok) {
        return {
          name: info.name,
          executable: executable.path,
          foundIn: executable.foundIn,
          version: null,
          testedVersion: info.testedVersion,
          usable: false,
          hint: `${probe.reason}; ${info.install}`,
        };
      }
      const drift =
        probe.version !== info.testedVersion
          ? `works with your own login; handoff was tested with ${info.testedVersion}`
          : "works with your own login";
      return {
        name: info.name,
        executable: executable.path,
        foundIn: executable.foundIn,
        version: probe.version,
        testedVersion: info.testedVersion,
        usable: true,
        hint: `${drift}: ${info.login}`,
      };
    }),
  );
  if (only === undefined || only === COMMAND_BACKEND)
    report.push({
      name: COMMAND_BACKEND,
      executable: "/bin/sh",
      foundIn: null,
      version: null,
      testedVersion: null,
      usable: true,
      hint: "any program as the agent: --backend command --agent-cmd CMD",
    });
  return report;
}

/** How the text listing names where an executable was found. */
export function foundInText(source: ExecutableSource | null): string {
  switch (source) {
    case "bin":
      return "--bin";
    case "path":
      return "PATH";
    case "handoff":
      return "handoff's install dir";
    case null:
      return "";
  }
}
