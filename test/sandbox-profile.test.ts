import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { commandPrograms } from "../backends/command-backend.js";
import { bwrapArgs } from "../src/containment/sandbox-profile.js";
import { tempDir } from "./helpers/repo.js";

/** The mount part of the argv: pairs and triples between the fixed prefix and the namespace flags. */
function mounts(args: string[]): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < args.length; i++) {
    const width = args[i] === "--tmpfs" ? 1 : args[i] === "--bind" || args[i] === "--ro-bind" ? 2 : 0;
    if (width > 0) out.push(args.slice(i, i + width + 1));
    i += width;
  }
  return out.slice(1); // the read-only root comes first, always
}

describe("the bubblewrap profile", () => {
  test("hides come before the binds that pierce them, parents before children, a read-only bind inside a writable one last", () => {
    const root = tempDir();
    const home = join(root, "home");
    const ws = join(root, "home", "ws");
    mkdirSync(join(ws, "tree"), { recursive: true });
    writeFileSync(join(ws, "tree", ".git"), "gitdir: x\n");
    writeFileSync(join(root, "socket-like"), "");
    const args = bwrapArgs({
      hide: [home, join(root, "socket-like"), join(root, "missing")],
      binds: [
        { source: join(ws, "tree", ".git"), dest: join(ws, "tree", ".git"), writable: false },
        { source: join(ws, "tree"), dest: join(ws, "tree"), writable: true },
      ],
      traps: [],
      network: false,
      cwd: join(ws, "tree"),
      uid: 1000,
      gid: 1000,
    });
    expect(args.slice(0, 7)).toEqual(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
    expect(mounts(args)).toEqual([
      ["--tmpfs", home],
      ["--ro-bind", "/dev/null", join(root, "socket-like")],
      ["--bind", join(ws, "tree"), join(ws, "tree")],
      ["--ro-bind", join(ws, "tree", ".git"), join(ws, "tree", ".git")],
    ]);
    expect(args).toContain("--unshare-net");
    expect(args.slice(-3)).toEqual(["--chdir", join(ws, "tree"), "--"]);
    expect(args).toEqual(expect.arrayContaining(["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--unshare-pid"]));
  });

  test("network is shared only when asked, and / itself is never hidden", () => {
    const args = bwrapArgs({ hide: ["/"], binds: [], traps: [], network: true, cwd: "/", uid: 1000, gid: 1000 });
    expect(args).not.toContain("--unshare-net");
    expect(args).not.toContain("--tmpfs");
  });
});

describe("what the sandbox shows of an --agent-cmd", () => {
  test("the files named by absolute path are the programs to show; directories, missing paths and relative words are not", () => {
    const root = tempDir();
    mkdirSync(join(root, "agents", "lib"), { recursive: true });
    writeFileSync(join(root, "agents", "fix.sh"), "#!/bin/sh\n", { mode: 0o755 });
    writeFileSync(join(root, "loose.sh"), "#!/bin/sh\n", { mode: 0o755 });
    const cmd = `trap '' TERM; ${join(root, "agents", "fix.sh")} --flag=${join(root, "loose.sh")} && cd ${root}; sleep 1 /nonexistent/x ./local.sh`;
    expect(commandPrograms(cmd).sort()).toEqual([join(root, "agents", "fix.sh"), join(root, "loose.sh")].sort());
  });
});
