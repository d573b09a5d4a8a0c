import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { agentCliBin, agentCliPath } from "./helpers/conformance.js";
import { runCli } from "./helpers/cli.js";

const FAKES = resolve(import.meta.dirname, "../fixtures/fake-clis");
const PINNED = { codex: "0.171.0", claude: "2.1.197", opencode: "1.18.33", pi: "0.73.1", omp: "18.2.3" };
const allInstalled = Object.keys(PINNED).every((name) => agentCliBin(name as keyof typeof PINNED) !== null);

interface Entry {
  name: string;
  executable: string | null;
  version: string | null;
  testedVersion: string | null;
  usable: boolean;
  hint: string | null;
}

async function backendsJson(path: string): Promise<Entry[]> {
  const outcome = await runCli(["backends", "--json"], { env: { PATH: path } });
  expect(outcome.code).toBe(0);
  return JSON.parse(outcome.stdout) as Entry[];
}

describe("handoff backends", () => {
  test.runIf(allInstalled || process.env.HANDOFF_CONFORMANCE === "required")("lists all five pinned CLIs as usable, with their versions", async () => {
    const report = await backendsJson(`${agentCliPath()}:${process.env.PATH}`);
    for (const [name, version] of Object.entries(PINNED)) {
      const entry = report.find((candidate) => candidate.name === name)!;
      expect(entry, name).toMatchObject({ usable: true, version, testedVersion: version });
      expect(entry.executable).toContain(join("agent-clis", name));
    }
  });

  test("says how to install each CLI when none is on PATH, and command stays usable", async () => {
    const report = await backendsJson(`${resolve("/nonexistent")}:${process.execPath.replace(/\/node$/, "")}`);
    for (const name of Object.keys(PINNED)) {
      const entry = report.find((candidate) => candidate.name === name)!;
      expect(entry).toMatchObject({ usable: false, executable: null, version: null });
      expect(entry.hint).toMatch(/npm install -g/);
    }
    expect(report.find((entry) => entry.name === "command")?.usable).toBe(true);
  });

  test("marks a CLI unusable, with the reason, when it is found but cannot run", async () => {
    const dir = resolve(FAKES, "broken-omp");
    const report = await backendsJson(`${dir}:/usr/bin:/bin`);
    const omp = report.find((entry) => entry.name === "omp")!;
    expect(omp.usable).toBe(false);
    expect(omp.executable).toBe(join(dir, "omp"));
    expect(omp.hint).toContain("bun");
  });

  test("prints one line per backend for a person", async () => {
    const outcome = await runCli(["backends"], { env: { PATH: `/nonexistent:${process.execPath.replace(/\/node$/, "")}` } });
    expect(outcome.stdout).toMatch(/^codex\s+unusable/m);
    expect(outcome.stdout).toMatch(/^command\s+usable/m);
  });
});
