import type { CliInvocation } from "../../backends/cli-backend.js";

/**
 * What the backend unit tests hand a CLI backend: the task, a clone, a run's private home dir and handoff's session
 * id, with the executable of the CLI under test.
 */
export function cliInvocation(executable: string, overrides: Partial<CliInvocation> = {}): CliInvocation {
  return {
    task: "make add() return the sum",
    cwd: "/work/clone/ws",
    model: null,
    executable,
    homeDir: "/var/handoff/homes/run-1",
    sessionId: "00000000-0000-4000-8000-000000000000",
    ...overrides,
  };
}

/** A stream of JSON lines as a CLI prints it: each value as JSON, a string as it is (to write a bad line). */
export function lines(...values: unknown[]): string {
  return values.map((value) => (typeof value === "string" ? value : JSON.stringify(value))).join("\n");
}
