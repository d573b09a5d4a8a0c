import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { runProcess } from "./process.js";

export interface BackendAvailability {
  readonly name: string;
  readonly executable: string | null;
  readonly version: string | null;
  readonly usable: boolean;
  readonly hint: string | null;
}

const EXECUTABLES: Readonly<Record<string, string>> = { codex: "codex", claude: "claude", opencode: "opencode", pi: "pi", omp: "omp" };

function which(name: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  return null;
}

async function versionOf(executable: string): Promise<string | null> {
  let out = "";
  const outcome = await runProcess({
    file: executable,
    args: ["--version"],
    cwd: "/",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/" },
    timeoutMs: 10_000,
    onStdout: (chunk) => (out += chunk.toString("utf8")),
  });
  return outcome.exitCode === 0 ? out.trim().split("\n")[0]!.slice(0, 100) : null;
}

/** What `handoff backends` reports: found executables and whether this version of handoff can drive them. */
export async function listBackends(names: readonly string[]): Promise<BackendAvailability[]> {
  const report: BackendAvailability[] = [];
  for (const name of names) {
    if (name === "command") {
      report.push({ name, executable: "/bin/sh", version: null, usable: true, hint: "any program as the agent: --backend command --agent-cmd CMD" });
      continue;
    }
    const executable = which(EXECUTABLES[name] ?? name);
    report.push({
      name,
      executable,
      version: executable ? await versionOf(executable) : null,
      usable: false,
      hint: `this version of handoff cannot drive ${name} yet${executable ? "" : ` (and no '${EXECUTABLES[name]}' on PATH)`}; use --backend command`,
    });
  }
  return report;
}
