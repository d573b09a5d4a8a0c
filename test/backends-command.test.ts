import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { CLI_INFOS } from "../backends/index.js";
import { type CliName, agentCliBin, agentCliPath } from "./helpers/conformance.js";
import { runCli } from "./helpers/cli.js";

const FAKES = resolve(import.meta.dirname, "../fixtures/fake-clis");
const AGENT_CLIS = resolve(import.meta.dirname, "agent-clis");
const allInstalled = CLI_INFOS.every((info) => agentCliBin(info.name) !== null);

function readJson(path: string): { dependencies?: Record<string, string>; bin?: Record<string, string> | string } {
  return JSON.parse(readFileSync(path, "utf8")) as ReturnType<typeof readJson>;
}

/**
 * The version test/agent-clis/<name>/package.json pins: its dependency that provides the `name` executable (omp's
 * install also pins bun, its runtime).
 */
function pinnedVersion(name: CliName): string {
  const dir = join(AGENT_CLIS, name);
  const pins = Object.entries(readJson(join(dir, "package.json")).dependencies ?? {});
  const providesCli = ([dependency]: [string, string]) => {
    const bin = readJson(join(dir, "node_modules", dependency, "package.json")).bin;
    return typeof bin === "object" && name in bin;
  };
  const pinned = pins.length === 1 ? pins : pins.filter(providesCli);
  expect(
    pinned.map(([dependency]) => dependency),
    `the package test/agent-clis/${name} pins for ${name}`,
  ).toHaveLength(1);
  return pinned[0]![1];
}

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
  test.runIf(allInstalled || process.env.HANDOFF_CONFORMANCE === "required")(
    "lists all five pinned CLIs as usable, with their versions",
    async () => {
      const report = await backendsJson(`${agentCliPath()}:${process.env.PATH}`);
      for (const { name, testedVersion } of CLI_INFOS) {
        const version = pinnedVersion(name);
        expect(testedVersion, `${name}'s testedVersion in backends/index.ts`).toBe(version);
        const entry = report.find((candidate) => candidate.name === name)!;
        expect(entry, name).toMatchObject({ usable: true, version, testedVersion: version });
        expect(entry.executable).toContain(join("agent-clis", name));
      }
    },
  );

  test("says how to install each CLI when none is on PATH, and command stays usable", async () => {
    const report = await backendsJson(`${resolve("/nonexistent")}:${process.execPath.replace(/\/node$/, "")}`);
    for (const { name } of CLI_INFOS) {
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
