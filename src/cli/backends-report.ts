import { CLI_BACKEND_ROWS, CLI_BACKENDS, COMMAND_BACKEND } from "../../backends/index.js";
import { hintFor } from "../../backends/failures.js";
import { probeVersion, resolveExecutable } from "../agent/executable.js";

export interface BackendAvailability {
  readonly name: string;
  readonly executable: string | null;
  readonly version: string | null;
  /** The version handoff's conformance suite runs against. */
  readonly testedVersion: string | null;
  readonly usable: boolean;
  readonly hint: string | null;
}

/** What `handoff backends` reports: for each agent CLI, the executable on PATH, its version, and whether it runs here. */
export async function listBackends(pathEnv: string | undefined = process.env.PATH): Promise<BackendAvailability[]> {
  const report = await Promise.all(
    CLI_BACKEND_ROWS.map(async ({ name, definition }): Promise<BackendAvailability> => {
      const { info } = CLI_BACKENDS[name];
      const executable = resolveExecutable(info.executable, null, pathEnv);
      if (!executable) {
        return {
          name: info.name,
          executable: null,
          version: null,
          testedVersion: info.testedVersion,
          usable: false,
          hint: hintFor("executable_unavailable", info),
        };
      }
      const probe = await probeVersion(executable.path, executable.pathEnv, definition.home);
      if (!probe.ok) {
        return {
          name: info.name,
          executable: executable.path,
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
        version: probe.version,
        testedVersion: info.testedVersion,
        usable: true,
        hint: `${drift}: ${info.login}`,
      };
    }),
  );
  report.push({
    name: COMMAND_BACKEND,
    executable: "/bin/sh",
    version: null,
    testedVersion: null,
    usable: true,
    hint: "any program as the agent: --backend command --agent-cmd CMD",
  });
  return report;
}
