import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { installMounts } from "../src/agent/executable.js";
import { linkLogins, loginMounts, replacedLinks, unlinkLogins } from "../src/agent/login-links.js";
import { copyInsideHome, SessionCopyError } from "../src/agent/session-copies.js";
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

describe("the login across the turns of one home (a repair attempt, handoff resume)", () => {
  function userAndLinks() {
    const user = tempDir();
    const home = tempDir();
    writeFileSync(join(user, "a.json"), "{}");
    writeFileSync(join(user, "b.json"), "{}");
    const links = [
      { at: join(home, "cfg", "a.json"), target: join(user, "a.json") },
      { at: join(home, "cfg", "b.json"), target: join(user, "b.json") },
    ];
    return { user, home, links };
  }

  test("a second turn in the same home does not fail on the links the first made (EEXIST): they are reused and counted", () => {
    const { links } = userAndLinks();
    const first = linkLogins(links);
    expect(linkLogins(links)).toEqual(first);
    expect(first).toHaveLength(2);
  });

  test("a file the CLI put at a link's place is left alone, not overwritten, and a replacement in a later turn still warns", () => {
    const { home, links } = userAndLinks();
    linkLogins(links);
    writeFileSync(join(home, "cfg", "a.tmp"), "refreshed");
    renameSync(join(home, "cfg", "a.tmp"), join(home, "cfg", "a.json"));
    const second = linkLogins(links);
    expect(second).toEqual([join(home, "cfg", "b.json")]);
    expect(readFileSync(join(home, "cfg", "a.json"), "utf8")).toBe("refreshed");
    writeFileSync(join(home, "cfg", "b.tmp"), "refreshed");
    renameSync(join(home, "cfg", "b.tmp"), join(home, "cfg", "b.json"));
    expect(replacedLinks(links, second).map((link) => link.at)).toEqual([join(home, "cfg", "b.json")]);
  });

  test("unlinkLogins removes every link and a file that replaced one, never the user's files, and a relink restores them", () => {
    const { user, home, links } = userAndLinks();
    linkLogins(links);
    writeFileSync(join(home, "cfg", "b.tmp"), "refreshed");
    renameSync(join(home, "cfg", "b.tmp"), join(home, "cfg", "b.json"));
    expect(unlinkLogins(links)).toEqual([join(home, "cfg", "a.json"), join(home, "cfg", "b.json")]);
    expect(existsSync(join(home, "cfg", "a.json")) || existsSync(join(home, "cfg", "b.json"))).toBe(false);
    expect(readFileSync(join(user, "a.json"), "utf8")).toBe("{}");
    expect(unlinkLogins(links)).toEqual([]);
    expect(linkLogins(links)).toHaveLength(2);
  });
});

describe("files a resumed turn copies inside the private home", () => {
  test("copies a transcript into a new folder (0700), replacing an older copy", () => {
    const home = tempDir();
    mkdirSync(join(home, "projects", "old"), { recursive: true });
    writeFileSync(join(home, "projects", "old", "s.jsonl"), "line\n");
    const copy = { from: join(home, "projects", "old", "s.jsonl"), to: join(home, "projects", "new", "s.jsonl") };
    copyInsideHome([copy], home);
    expect(readFileSync(copy.to, "utf8")).toBe("line\n");
    expect(lstatSync(join(home, "projects", "new")).mode & 0o777).toBe(0o700);
    writeFileSync(copy.from, "line\nmore\n");
    copyInsideHome([copy], home);
    expect(readFileSync(copy.to, "utf8")).toBe("line\nmore\n");
  });

  test("refuses a path outside the home, lexically or through a linked folder, and never follows a link at either end", () => {
    const home = tempDir();
    const outside = tempDir();
    writeFileSync(join(outside, "secret"), "s");
    writeFileSync(join(home, "t.jsonl"), "t");
    symlinkSync(outside, join(home, "escape"));
    symlinkSync(join(outside, "secret"), join(home, "link.jsonl"));
    symlinkSync(join(outside, "planted"), join(home, "dangling.jsonl"));
    const refused = [
      { from: join(outside, "secret"), to: join(home, "x") },
      { from: join(home, "t.jsonl"), to: join(home, "..", "x") },
      { from: join(home, "escape", "secret"), to: join(home, "x") },
      { from: join(home, "t.jsonl"), to: join(home, "escape", "x") },
      { from: join(home, "link.jsonl"), to: join(home, "x") },
      { from: join(home, "t.jsonl"), to: join(home, "dangling.jsonl") },
    ];
    for (const copy of refused) expect(() => copyInsideHome([copy], home), JSON.stringify(copy)).toThrow(SessionCopyError);
    expect(existsSync(join(outside, "x")) || existsSync(join(outside, "planted")) || existsSync(join(home, "x"))).toBe(false);
  });
});

describe("what the sandbox shows of the user's CLI login and install", () => {
  test("login files are shown where their links point: refreshed credentials writable, config read-only, missing ones not at all", () => {
    const user = tempDir();
    const home = tempDir();
    for (const name of ["auth.json", "config.toml", ".credentials.json", "settings.json", "oauth_creds.json"])
      writeFileSync(join(user, name), "{}");
    const links = ["auth.json", "config.toml", ".credentials.json", "settings.json", "agent.db", "oauth_creds.json"].map((name) => ({
      at: join(home, name),
      target: join(user, name),
    }));
    const mounts = loginMounts(links, linkLogins(links));
    // Gemini's Google login (oauth_creds.json) is rewritten in place on a refresh, like the others.
    expect(mounts.writable.sort()).toEqual([join(user, ".credentials.json"), join(user, "auth.json"), join(user, "oauth_creds.json")]);
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
