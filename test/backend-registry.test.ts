import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { CLI_BACKEND_ROWS, CLI_INFOS, DEFAULT_BACKEND, backendNamesText } from "../backends/index.js";
import { type CliBackendDefinition, type StreamParser, BACKEND_NAMES, defineCliBackend, resolveBackend } from "../src/index.js";
import { HELP } from "../src/cli/help.js";
import { riskWarnings } from "../src/patch/rules/risk-paths.js";
import { resumeBackend, runBackend } from "./helpers/backend-fixtures.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";

describe("the backend registry", () => {
  test("names, infos, the help text and resolveBackend all derive from the one table", () => {
    const names = CLI_BACKEND_ROWS.map((row) => row.name);
    expect(CLI_INFOS.map((info) => info.name)).toEqual(names);
    expect(BACKEND_NAMES).toEqual([...names, "command"]);
    expect(DEFAULT_BACKEND).toBe(names[0]);
    // The help is filled to 100 columns: the words, wherever its lines break.
    expect(HELP.replace(/\s+/g, " ")).toContain(
      `--backend NAME ${backendNamesText()} (default: from .handoff.json, else ${DEFAULT_BACKEND})`,
    );
    for (const name of names) expect(resolveBackend({ name }).name).toBe(name);
    for (const info of CLI_INFOS) expect(info.executable).toBe(info.name);
  });

  test("a change to any CLI's project files (its instructions, its config folder) is flagged agent_instructions", () => {
    for (const info of CLI_INFOS) {
      expect(info.projectFiles.length, info.name).toBeGreaterThan(0);
      for (const file of info.projectFiles) {
        const path = file.endsWith("/") ? `${file}settings.json` : file;
        expect(
          riskWarnings(path, "added").map((finding) => finding.rule),
          `${info.name}: ${path}`,
        ).toContain("agent_instructions");
      }
    }
    // docs/backends/omp.md: a committed .omp/ steers omp.
    expect(riskWarnings(".omp/config.yml", "modified").map((finding) => finding.rule)).toContain("agent_instructions");
  });

  test("the Action's backend input names the registry's backends and default", () => {
    const actionYml = readFileSync(new URL("../action.yml", import.meta.url), "utf8");
    expect(actionYml).toContain(`the agent CLI (${backendNamesText()}); empty: \`backend\` in .handoff.json, else ${DEFAULT_BACKEND}`);
  });
});

/** A sixth agent CLI, as a new backend file pair would define it: argv/env/home, and a parser for its JSON lines. */
const sixth: CliBackendDefinition = {
  info: {
    name: "sixth",
    executable: "sixth",
    testedVersion: "1.0.0",
    install: "npm install -g sixth@1.0.0",
    login: "log in with `sixth login`",
    projectFiles: ["SIXTH.md", ".sixth/"],
  },
  home: (homeDir) => ({ env: { SIXTH_HOME: join(homeDir, "sixth") }, dirs: [join(homeDir, "sixth")], links: [] }),
  network: () => ({ endpoints: [{ url: "api.sixth.example", why: "its model API" }] }),
  command: (invocation) => ({ file: invocation.executable, args: ["run", "--json"], stdin: invocation.task }),
  parser: (_invocation, info): StreamParser => {
    let finalMessage: string | null = null;
    let done = false;
    return {
      push(line) {
        const value = JSON.parse(line) as { type: string; text?: string };
        if (value.type === "done") done = true;
        if (value.type !== "message" || value.text === undefined) return [];
        finalMessage = value.text;
        return [{ type: "agent.message", text: `${info.name}: ${value.text}` }];
      },
      finish: () => ({ verdict: done ? { kind: "finished" } : { kind: "incomplete" }, sessionId: null, finalMessage, usage: null }),
    };
  },
};

/** A fake `sixth` executable: its version, then the home handoff gave it, then a done line (or a 401 on stderr). */
function fakeSixth(body: string): string {
  const dir = tempDir("handoff-sixth-cli");
  const bin = join(dir, "sixth");
  writeFileSync(bin, `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "sixth 1.0.0"; exit 0; fi\ncat >/dev/null\n${body}\n`);
  chmodSync(bin, 0o755);
  return bin;
}

describe("adding a backend", () => {
  test("a sixth CLI from a new definition gets executable lookup, the version probe, its private home and the ending ladder from defineCliBackend", async () => {
    const backend = defineCliBackend(sixth);
    expect(backend.name).toBe("sixth");
    const bin = fakeSixth(`echo "{\\"type\\":\\"message\\",\\"text\\":\\"home $SIXTH_HOME\\"}"\necho '{"type":"done"}'`);
    const { result, events } = await runBackend(backend, { executable: bin });
    expect(result.outcome).toEqual({ kind: "finished" });
    expect(result.version).toBe("1.0.0");
    expect(result.executable).toBe(bin);
    expect(result.finalMessage).toMatch(/^home \/.*\/sixth$/);
    expect(events).toContainEqual({ type: "agent.message", text: `sixth: ${result.finalMessage}` });

    const dies = fakeSixth(`echo "Error: 401 Unauthorized" >&2\nexit 1`);
    expect((await runBackend(backend, { executable: dies })).result.outcome).toEqual({
      kind: "failed",
      detail: "auth_failed",
      message: "sixth exited with code 1 before writing any event: Error: 401 Unauthorized",
      hint: "log in with `sixth login`",
    });
    expect((await runBackend(backend)).result.outcome).toMatchObject({
      detail: "executable_unavailable",
      message: "sixth could not be started: 'sixth' is not on PATH",
    });
  });
});

describe("a resumed turn's commands before it (CliResumeCommand.before)", () => {
  /** `sixth` whose resume first runs `sixth prepare <session>` (and `sixth <step>` for each extra step), then the turn. */
  function preparingSixth(steps: readonly string[]): CliBackendDefinition {
    return {
      ...sixth,
      resume: (invocation) => ({
        before: [invocation.resumeId, ...steps].map((step) => ({
          file: invocation.executable,
          args: ["prepare", step],
          stdin: "",
          env: { STEP: step },
        })),
        command: { file: invocation.executable, args: ["run", "--json", "--resume", invocation.resumeId], stdin: invocation.task },
      }),
    };
  }

  /** Logs each call's first two args, the home and cwd it ran with; `prepare fail` says why on stderr (in colour) and exits 3. */
  function loggingSixth(log: string): string {
    return fakeSixth(
      [
        `echo "$1 $2 STEP=$STEP home=$SIXTH_HOME cwd=$PWD" >> ${log}`,
        `if [ "$1 $2" = "prepare fail" ]; then printf 'working\\n\\033[91mError:\\033[0m no such column: directory\\n\\n' >&2; exit 3; fi`,
        `if [ "$1" = "prepare" ]; then echo "not the agent's stream"; exit 0; fi`,
        `echo '{"type":"message","text":"resumed"}'; echo '{"type":"done"}'`,
      ].join("\n"),
    );
  }

  test("run in order in the clone with the home's env, then the turn; their stdout is not the agent's stream", async () => {
    const log = join(tempDir("handoff-sixth-log"), "calls");
    const clone = await makeRepo(FAILING_ADD_PROJECT);
    const { outcome, events } = await resumeBackend(
      defineCliBackend(preparingSixth(["second"])),
      { sessionId: "s-1", cwd: "/old/clone", attempt: 1 },
      "go on",
      {
        executable: loggingSixth(log),
        cwd: clone,
      },
    );
    expect(outcome).toMatchObject({ kind: "resumed", result: { outcome: { kind: "finished" }, finalMessage: "resumed" } });
    const calls = readFileSync(log, "utf8").trim().split("\n");
    expect(calls.map((call) => call.split(" home=")[0])).toEqual([
      "prepare s-1 STEP=s-1",
      "prepare second STEP=second",
      "run --json STEP=",
    ]);
    for (const call of calls) expect(call).toMatch(new RegExp(`home=/\\S+/sixth cwd=${clone}$`));
    expect(events).toEqual([{ type: "agent.message", text: "sixth: resumed" }]);
  });

  test("a failing one makes the turn cannot_resume with the last line of its stderr, and neither the rest nor the turn runs", async () => {
    const log = join(tempDir("handoff-sixth-log"), "calls");
    const clone = await makeRepo(FAILING_ADD_PROJECT);
    const { outcome } = await resumeBackend(
      defineCliBackend(preparingSixth(["fail", "never"])),
      { sessionId: "s-1", cwd: "/old/clone", attempt: 1 },
      "go on",
      {
        executable: loggingSixth(log),
        cwd: clone,
      },
    );
    expect(outcome).toEqual({
      kind: "cannot_resume",
      reason: `sixth could not prepare the session for ${clone}: \`sixth prepare\` exited 3: Error: no such column: directory`,
    });
    expect(
      readFileSync(log, "utf8")
        .trim()
        .split("\n")
        .map((call) => call.split(" STEP=")[0]),
    ).toEqual(["prepare s-1", "prepare fail"]);
  });
});
