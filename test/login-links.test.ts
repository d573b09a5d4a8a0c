import { lstatSync, mkdirSync, readFileSync, readlinkSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { installMounts } from "../src/agent/executable.js";
import { linkLogins, loginMounts, replacedLinks } from "../src/agent/login-links.js";
import { runBackend } from "./helpers/backend-fixtures.js";
import { tempDir } from "./helpers/repo.js";

describe("the user's CLI login in a run's private home", () => {
  test("links each login file that exists and skips the ones that do not", () => {
    const user = tempDir();
    const home = tempDir();
    writeFileSync(join(user, "auth.json"), "{}");
    const made = linkLogins([
      { at: join(home, "cfg", "auth.json"), target: join(user, "auth.json") },
      { at: join(home, "cfg", "config.toml"), target: join(user, "config.toml") },
    ]);
    expect(made).toEqual([join(home, "cfg", "auth.json")]);
    expect(lstatSync(made[0]!).isSymbolicLink()).toBe(true);
    expect(readlinkSync(made[0]!)).toBe(join(user, "auth.json"));
    expect(lstatSync(join(home, "cfg")).mode & 0o777).toBe(0o700);
  });

  test("notices a link the CLI replaced with a file of its own", () => {
    const user = tempDir();
    const home = tempDir();
    writeFileSync(join(user, "a.json"), "{}");
    writeFileSync(join(user, "b.json"), "{}");
    const links = [
      { at: join(home, "a.json"), target: join(user, "a.json") },
      { at: join(home, "b.json"), target: join(user, "b.json") },
    ];
    const made = linkLogins(links);
    writeFileSync(join(home, "b.tmp"), "new");
    // rename over the link, as a CLI saving a refreshed token does
    renameSync(join(home, "b.tmp"), join(home, "b.json"));
    expect(replacedLinks(links, made).map((link) => link.target)).toEqual([join(user, "b.json")]);
  });

  test("a CLI that refreshes its login through the link leaves the user's file alone and the run warns", async () => {
    const userHome = tempDir("handoff-user");
    mkdirSync(join(userHome, ".claude"));
    writeFileSync(join(userHome, ".claude", ".credentials.json"), '{"old":true}\n');
    const { result } = await runBackend("claude", {
      executable: resolve(import.meta.dirname, "../fixtures/fake-clis/claude-refreshes-login.sh"),
      userEnv: { HOME: userHome },
      timeoutMs: 30_000,
    });
    expect(result.outcome.kind).toBe("finished");
    expect(readFileSync(join(userHome, ".claude", ".credentials.json"), "utf8")).toBe('{"old":true}\n');
    expect(result.warnings).toEqual([
      expect.objectContaining({
        rule: "cli_login_replaced",
        path: join(userHome, ".claude", ".credentials.json"),
        message: expect.stringContaining("claude setup-token"),
      }),
    ]);
  });
});

describe("what the sandbox shows of the user's CLI login and install", () => {
  test("login files are shown where their links point: refreshed credentials writable, config read-only, missing ones not at all", () => {
    const user = tempDir();
    const home = tempDir();
    for (const name of ["auth.json", "config.toml", ".credentials.json", "settings.json"]) writeFileSync(join(user, name), "{}");
    const links = ["auth.json", "config.toml", ".credentials.json", "settings.json", "agent.db"].map((name) => ({
      at: join(home, name),
      target: join(user, name),
    }));
    const mounts = loginMounts(links, linkLogins(links));
    expect(mounts.writable.sort()).toEqual([join(user, ".credentials.json"), join(user, "auth.json")]);
    expect(mounts.readOnly.sort()).toEqual([join(user, "config.toml"), join(user, "settings.json")]);
  });

  test("an npm-installed CLI brings its bin dir, the prefix's lib, and the node_modules its real path lies in", () => {
    const prefix = tempDir();
    const pkg = join(prefix, "lib", "node_modules", "@acme", "agent");
    mkdirSync(join(pkg, "bin"), { recursive: true });
    mkdirSync(join(prefix, "bin"));
    writeFileSync(join(pkg, "bin", "agent.js"), "#!/usr/bin/env node\n", { mode: 0o755 });
    symlinkSync(join(pkg, "bin", "agent.js"), join(prefix, "bin", "agent"));
    const { readOnly } = installMounts(join(prefix, "bin", "agent"), `${join(prefix, "bin")}:/usr/bin:relative/dir`);
    expect(readOnly).toEqual(
      expect.arrayContaining([join(prefix, "bin"), join(prefix, "lib"), join(prefix, "lib", "node_modules"), "/usr/bin"]),
    );
    expect(readOnly).not.toContain("relative/dir");
  });
});
