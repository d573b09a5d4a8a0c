import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { CLI_INFOS } from "../backends/index.js";
import { type CliName, agentCliBin, agentCliPath } from "./helpers/conformance.js";
import { expectUsageError, runCli } from "./helpers/cli.js";
import { makeRepo, tempDir } from "./helpers/repo.js";

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
  foundIn: string | null;
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
    "lists all seven pinned CLIs as usable, with their versions",
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

  test("finds a CLI where handoff installs CLIs (npm run demo, npm run agent-clis) when it is not on PATH, and says where", async () => {
    const installDir = fakeInstallDir("claude", "2.1.197 (Claude Code)");
    const nodeDir = process.execPath.replace(/\/node$/, "");
    const outcome = await runCli(["backends", "--json"], { env: { PATH: `/nonexistent:${nodeDir}`, HANDOFF_AGENT_CLIS_DIR: installDir } });
    const claude = (JSON.parse(outcome.stdout) as Entry[]).find((entry) => entry.name === "claude")!;
    expect(claude).toMatchObject({
      executable: join(installDir, "claude", "node_modules", ".bin", "claude"),
      foundIn: "handoff",
      version: "2.1.197",
      usable: true,
    });
    const text = await runCli(["backends"], { env: { PATH: `/nonexistent:${nodeDir}`, HANDOFF_AGENT_CLIS_DIR: installDir } });
    expect(text.stdout).toMatch(/^claude\s+usable\s+2\.1\.197\s+\S+\/\.bin\/claude \(handoff's install dir\)$/m);
  });

  test("handoff run -b claude starts the CLI the same resolver found in handoff's install dir", async () => {
    const installDir = fakeInstallDir("claude", "2.1.197 (Claude Code)");
    const repo = await makeRepo({ "a.txt": "a\n" });
    const runs = join(tempDir("handoff-runs"), "runs");
    const env = { PATH: `/nonexistent:${process.execPath.replace(/\/node$/, "")}:/usr/bin:/bin`, HANDOFF_AGENT_CLIS_DIR: installDir };
    await runCli(["run", "-C", repo, "-b", "claude", "--yes", "--verify", "true", "--runs-dir", runs, "--run-id", "r", "--", "edit"], {
      env,
    });
    const result = JSON.parse(readFileSync(join(runs, "r", "result.json"), "utf8"));
    expect(result.backend.executable).toBe(join(installDir, "claude", "node_modules", ".bin", "claude"));
    expect(result.detail).not.toBe("executable_unavailable");
  });

  test("--bin with -b reports that executable for that backend, found in --bin", async () => {
    const installDir = fakeInstallDir("claude", "9.9.9 (Claude Code)");
    const bin = join(installDir, "claude", "node_modules", ".bin", "claude");
    const outcome = await runCli(["backends", "-b", "claude", "--bin", bin, "--json"], { env: { HANDOFF_AGENT_CLIS_DIR: "" } });
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(JSON.parse(outcome.stdout)).toEqual([
      expect.objectContaining({ name: "claude", executable: bin, foundIn: "bin", version: "9.9.9", usable: true }),
    ]);
    const missing = await runCli(["backends", "-b", "claude", "--bin", "/nonexistent/claude", "--json"]);
    expect(JSON.parse(missing.stdout)).toEqual([
      expect.objectContaining({
        name: "claude",
        executable: null,
        usable: false,
        hint: "--bin /nonexistent/claude is not an executable file",
      }),
    ]);
  });

  test("--bin without -b, and an unknown -b, are usage errors", async () => {
    expectUsageError(await runCli(["backends", "--bin", "/bin/true"]), /--bin names one backend's executable: say which with -b NAME/);
    expectUsageError(await runCli(["backends", "-b", "nope"]), /unknown backend 'nope'/);
  });

  test("the hint for a missing CLI suggests only options that exist", async () => {
    const report = await backendsJson("/nonexistent");
    const hint = report.find((entry) => entry.name === "claude")!.hint!;
    for (const option of hint.match(/--[a-z-]+/g) ?? []) expect(["--bin"], hint).toContain(option);
    expect(hint).toContain("handoff run -b claude --bin PATH");
  });
});

/** A directory laid out as handoff's install dir, with `name` a script that prints `version`. */
function fakeInstallDir(name: string, version: string): string {
  const installDir = tempDir("handoff-agent-clis");
  const bin = join(installDir, name, "node_modules", ".bin");
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, name), `#!/bin/sh\nif [ "$1" = --version ]; then echo '${version}'; exit 0; fi\necho 'not a stream'; exit 1\n`, {
    mode: 0o755,
  });
  return installDir;
}
