import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { downloadCacheEnv } from "../src/environment/download-caches.js";
import { tempDir } from "./helpers/repo.js";

/** Real npm with the download caches' variables and nothing else of this process's npm settings. */
function npm(args: string[], env: Record<string, string>): { stdout: string; stderr: string } {
  const home = tempDir("handoff-npm-home");
  const run = spawnSync("npm", args, { env: { PATH: process.env.PATH ?? "", HOME: home, ...env }, encoding: "utf8" });
  expect(run.status, run.stderr).toBe(0);
  return { stdout: run.stdout, stderr: run.stderr };
}

describe("the download caches' variables", () => {
  test("npm uses its cache and warns about nothing it does not know: an npm setup gets no npm_config_store_dir", () => {
    const root = tempDir("handoff-downloads");
    const env = downloadCacheEnv(root, ["npm ci"]);
    const { stdout, stderr } = npm(["config", "get", "cache"], env);
    expect(stdout.trim()).toBe(join(root, "npm"));
    expect(stderr).not.toContain("Unknown env config");
    expect(env).not.toHaveProperty("npm_config_store_dir");
  });

  test("a setup that names pnpm gets the store under both of pnpm's names: npm_config_ (pnpm 10 and earlier), pnpm_config_ (11 on)", () => {
    const root = tempDir("handoff-downloads");
    for (const setup of [["corepack enable", "pnpm install --frozen-lockfile"], ["npx pnpm@10 i"], ["cd web && pnpm i"]]) {
      const env = downloadCacheEnv(root, setup);
      expect(env.npm_config_store_dir, setup.join("; ")).toBe(join(root, "pnpm-store"));
      expect(env.pnpm_config_store_dir).toBe(join(root, "pnpm-store"));
    }
    for (const setup of [["npm ci"], ["cp pnpm-lock.yaml /tmp/x && npm ci"], ["yarn install"]])
      expect(downloadCacheEnv(root, setup), setup.join("; ")).not.toHaveProperty("npm_config_store_dir");
  });
});
