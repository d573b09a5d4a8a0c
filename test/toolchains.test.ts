import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, test } from "vitest";
import { decideOutcome, NO_FACTS } from "../src/verdict/decide.js";
import { programsOf, startFailure } from "../src/verify/program-check.js";
import { type CliOutcome, commandRunArgs, expectUsageError, runCli } from "./helpers/cli.js";
import { makeRepo, tempDir } from "./helpers/repo.js";
import { readEvents } from "./helpers/run.js";
import { probeBubblewrap } from "../src/containment/sandbox.js";

const bwrap = await probeBubblewrap();
if (!bwrap.ok && process.env.HANDOFF_SANDBOX_TESTS === "required") throw new Error(`bubblewrap is required here: ${bwrap.reason}`);

// The user's toolchains in their home, as version managers lay them out: a shim that runs its manager by absolute
// path (pyenv, asdf), a proxy linked to its manager's binary that finds its toolchains through a variable (rustup).
// Each test has its own home; handoff runs as the CLI with HOME pointing there.

function script(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  chmodSync(path, 0o755);
}

/** A pyenv-like manager in `home`: shims/greet runs libexec/mgr by absolute path, which runs versions/1/bin/greet. */
function shimManager(home: string): string {
  const root = join(home, ".mgr");
  script(join(root, "versions/1/bin/greet"), "#!/bin/sh\necho hello from version 1\n");
  script(join(root, "libexec/mgr"), `#!/bin/sh\nshift\nprogram="$1"; shift\nexec "${root}/versions/1/bin/$program" "$@"\n`);
  script(join(root, "shims/greet"), `#!/bin/sh\nexec "${root}/libexec/mgr" exec "\${0##*/}" "$@"\n`);
  writeFileSync(join(root, "credentials.toml"), "token = 'secret-token'\n");
  return root;
}

/** A rustup-like manager: .cargo/bin/greet links to .cargo/bin/rustup, which finds its toolchain in $RUSTUP_HOME. */
function proxyManager(home: string): void {
  script(join(home, ".rustup/toolchains/stable/bin/greet"), "#!/bin/sh\necho hello from the stable toolchain\n");
  // Its text names no path: like the real binary, it knows its toolchains only through $RUSTUP_HOME (or $HOME/.rustup).
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, expanded by sh
  script(join(home, ".cargo/bin/rustup"), '#!/bin/sh\nexec "${RUSTUP_HOME:-$HOME/.rustup}/toolchains/stable/bin/${0##*/}" "$@"\n');
  symlinkSync("rustup", join(home, ".cargo/bin/greet"));
  writeFileSync(join(home, ".cargo/credentials.toml"), "token = 'cargo-secret'\n");
}

async function runIn(home: string, pathDirs: readonly string[], options: readonly string[], agentCmd = "echo fixed > fixed.txt") {
  const repo = await makeRepo({ "README.md": "toolchains\n" });
  const outcome = await runCli([...commandRunArgs(repo, agentCmd, ["--yes", "--json", ...options], "use the toolchain")], {
    env: { HOME: home, PATH: [...pathDirs, process.env.PATH].join(":") },
  });
  return { outcome, result: resultOf(outcome) };
}

function resultOf(outcome: CliOutcome): Record<string, any> {
  expect(outcome.stdout, outcome.stderr).not.toBe("");
  return JSON.parse(outcome.stdout);
}

function testLog(result: Record<string, any>): string {
  return readFileSync(join(result.runDir, "test.log"), "utf8");
}

describe.skipIf(!bwrap.ok)("the user's toolchains in the sandbox", () => {
  test("a shim that runs its manager by absolute path works in verification; result.json names the manager's root and why; its credentials file is empty there", async () => {
    const home = tempDir("handoff-home");
    const root = shimManager(home);
    const { outcome, result } = await runIn(
      home,
      [join(root, "shims")],
      ["--verify", "greet | grep -q 'hello from version 1'", "--verify", `test ! -s ${join(root, "credentials.toml")}`],
    );
    expect(outcome.code, testLog(result)).toBe(0);
    expect(result.terminalReason).toBe("verified");
    expect(result.containment.fromHome).toContainEqual({
      path: root,
      why: expect.stringContaining(`${join(root, "shims/greet")} runs ${join(root, "libexec/mgr")}`),
    });
    expect(result.containment.masked).toEqual([join(root, "credentials.toml")]);
  });

  test("a proxy that finds its toolchains through a variable (rustup) works with the private HOME: RUSTUP_HOME is set to the real root, ~/.cargo stays hidden but for its bin", async () => {
    const home = tempDir("handoff-home");
    proxyManager(home);
    const { outcome, result } = await runIn(
      home,
      [join(home, ".cargo/bin")],
      [
        "--verify",
        "greet | grep -q 'hello from the stable toolchain'",
        "--verify",
        `test "$RUSTUP_HOME" = ${join(home, ".rustup")}`,
        "--verify",
        `test ! -e ${join(home, ".cargo/credentials.toml")}`,
      ],
    );
    expect(outcome.code, testLog(result)).toBe(0);
    expect(result.containment.fromHome).toEqual([
      { path: join(home, ".rustup"), why: `rustup (${join(home, ".cargo/bin/greet")} links to ${join(home, ".cargo/bin/rustup")})` },
    ]);
  });

  test("a verify program that is not on PATH ends environment_unavailable (exit 7) before the agent starts, naming the program", async () => {
    const home = tempDir("handoff-home");
    const { outcome, result } = await runIn(home, [], ["--verify", "no-such-tool-here --check"], "touch agent-ran");
    expect(outcome.code).toBe(7);
    expect(result).toMatchObject({
      terminalReason: "environment_unavailable",
      detail: "verify_command_unavailable",
      summary: expect.stringContaining(
        "`no-such-tool-here` (in verify command `no-such-tool-here --check`) is not found on the PATH the sandbox sees; the agent did not run",
      ),
      hint: expect.stringContaining("--expose PATH"),
    });
    expect(
      readEvents(result.runDir)
        .filter((event) => event.type === "phase.started")
        .map((event) => event.phase),
    ).not.toContain("agent");
    expect(readFileSync(join(result.runDir, "changes.patch"), "utf8")).toBe("");
  });

  test("with setup, the verify commands' programs are looked up in the setup check's sandbox: found outside the home, not again; not found, checked after setup as before", async () => {
    const home = tempDir("handoff-home");
    const phases = (result: Record<string, any>) =>
      readEvents(result.runDir)
        .filter((event) => event.type === "phase.started")
        .map((event) => event.phase);
    const found = await runIn(home, [], ["--setup", "touch set-up", "--verify", "git --version"]);
    expect(found.outcome.code, testLog(found.result)).toBe(0);
    expect(phases(found.result)).toEqual(expect.arrayContaining(["setup-programs", "setup", "agent"]));
    expect(phases(found.result)).not.toContain("verify-programs");
    const missing = await runIn(home, [], ["--setup", "touch set-up", "--verify", "no-such-tool-here --check"], "touch agent-ran");
    expect(missing.outcome.code).toBe(7);
    expect(missing.result).toMatchObject({ terminalReason: "environment_unavailable", detail: "verify_command_unavailable" });
    const order = phases(missing.result);
    expect(order.indexOf("verify-programs")).toBeGreaterThan(order.indexOf("setup"));
    expect(order).not.toContain("agent");
  });

  test("a manager's shims directory is a copy of its own in each sandboxed process: what the agent writes there reaches neither verification nor the user's home", async () => {
    const home = tempDir("handoff-home");
    // rbenv's layout (pyenv's, whose PYENV_ROOT this machine may set): shims it writes in ordinary use (a rehash lock).
    const root = join(home, ".rbenv");
    script(join(root, "versions/1/bin/greet"), "#!/bin/sh\necho hello from version 1\n");
    script(join(root, "shims/greet"), `#!/bin/sh\nexec "${root}/versions/1/bin/\${0##*/}" "$@"\n`);
    const planted = join(root, "shims/planted");
    const { outcome, result } = await runIn(
      home,
      [join(root, "shims")],
      [
        "--setup",
        `test ! -e ${planted} && echo setup > ${planted}`,
        "--verify",
        `test ! -e ${planted} && greet | grep -q 'hello from version 1'`,
      ],
      // The change exists only if the write into the shims went through.
      `test ! -e ${planted} && echo agent > ${planted} && echo fixed > fixed.txt`,
    );
    expect(outcome.code, testLog(result)).toBe(0);
    expect(result.terminalReason).toBe("verified");
    expect(existsSync(planted)).toBe(false);
  });

  test("with setup, a verify program that resolves into the home (a shim) is still started in the workspace after setup", async () => {
    const home = tempDir("handoff-home");
    const root = shimManager(home);
    const { outcome, result } = await runIn(home, [join(root, "shims")], ["--setup", "touch set-up", "--verify", "greet"]);
    expect(outcome.code, testLog(result)).toBe(0);
    expect(
      readEvents(result.runDir)
        .filter((event) => event.type === "phase.started")
        .map((event) => event.phase),
    ).toContain("verify-programs");
  });

  test("a setup program that cannot be found ends setup_command_unavailable before any setup command ran", async () => {
    const home = tempDir("handoff-home");
    const { outcome, result } = await runIn(
      home,
      [],
      ["--setup", "touch set-up && no-such-installer", "--verify", "true"],
      "touch agent-ran",
    );
    expect(outcome.code).toBe(7);
    expect(result).toMatchObject({ terminalReason: "environment_unavailable", detail: "setup_command_unavailable" });
    expect(testLog(result)).toBe("");
  });

  test("a shim whose manager the sandbox hides is caught by starting it, with the place it tried and the --expose that fixes it; with --expose it verifies", async () => {
    const home = tempDir("handoff-home");
    const manager = join(home, ".hidden-mgr");
    script(join(manager, "greet"), "#!/bin/sh\necho hello\n");
    // The shim reaches its manager through a path built at run time: nothing to follow without running it.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, expanded by sh
    script(join(home, ".tools/bin/greet"), '#!/bin/sh\nexec "${0%/*}/../../.hidden-mgr/greet" "$@"\n');
    const args = ["--verify", "greet"];
    const first = await runIn(home, [join(home, ".tools/bin")], args);
    expect(first.outcome.code).toBe(7);
    expect(first.result).toMatchObject({
      terminalReason: "environment_unavailable",
      detail: "verify_command_unavailable",
      summary: expect.stringMatching(
        /`greet` \(in verify command `greet`, found at .*\.tools\/bin\/greet\) cannot start in the sandbox: .*not found/,
      ),
      hint: expect.stringContaining(`--expose ${manager}`),
    });
    const second = await runIn(home, [join(home, ".tools/bin")], [...args, "--expose", manager]);
    expect(second.outcome.code, testLog(second.result)).toBe(0);
    expect(second.result.containment.fromHome).toContainEqual({ path: manager, why: "--expose" });
  });

  const hasPyenv = existsSync(join(homedir(), ".pyenv/shims/python3"));
  test.skipIf(!hasPyenv)("pyenv as the user has it: `python3` from its shims runs in verification", async () => {
    const { outcome, result } = await runIn(homedir(), [], ["--verify", "python3 -c 'import sys; assert sys.prefix'"]);
    expect(outcome.code, testLog(result)).toBe(0);
    expect(result.containment.fromHome.map((entry: { path: string }) => entry.path)).toContain(join(homedir(), ".pyenv"));
  });

  const hasRustup = existsSync(join(homedir(), ".cargo/bin/rustup"));
  test.skipIf(!hasRustup)("rustup as the user has it: `cargo --version` runs in verification", async () => {
    const { outcome, result } = await runIn(homedir(), [], ["--verify", "cargo --version"]);
    expect(outcome.code, testLog(result)).toBe(0);
    expect(result.containment.fromHome.map((entry: { path: string }) => entry.path)).toContain(join(homedir(), ".rustup"));
  });
});

describe("--expose", () => {
  test.each([
    [".ssh", /--expose '.*\.ssh' would show .*\.ssh, which holds credentials/],
    ["", /would show your whole home/],
    [".config", /would show .*\.config\/\S+, which holds credentials/],
    ["does-not-exist", /does not exist/],
  ])("--expose ~/%s is a usage error", async (below, says) => {
    const home = tempDir("handoff-home");
    for (const dir of [".ssh", ".config/gh"]) mkdirSync(join(home, dir), { recursive: true });
    const repo = await makeRepo({ "README.md": "x\n" });
    const outcome = await runCli(commandRunArgs(repo, "true", ["--yes", "--verify", "true", "--expose", join(home, below)], "t"), {
      env: { HOME: home },
    });
    expectUsageError(outcome, says);
  });
});

describe("a command's own program that cannot start is the environment's failure, not the patch's", () => {
  test("the shells' words and a shim's are read; a script of the project failing the same way is not", () => {
    expect(
      startFailure(
        "python3 -m pytest",
        127,
        "/root/.pyenv/shims/python3: line 12: /root/.pyenv/libexec/pyenv: No such file or directory\n",
      ),
    ).toEqual({
      program: "python3",
      said: "/root/.pyenv/shims/python3: line 12: /root/.pyenv/libexec/pyenv: No such file or directory",
    });
    expect(startFailure("cargo test", 127, "sh: 1: cargo: not found\n")?.program).toBe("cargo");
    expect(startFailure("cd sub && make check", 127, "/bin/sh: make: command not found\n")?.program).toBe("make");
    expect(startFailure("npm test", 126, "sh: 1: npm: Permission denied\n")?.program).toBe("npm");
    // npm's script ran a program the project lacks: the command's failure, the patch's business.
    expect(startFailure("npm test", 127, "> x@1.0.0 test\n> mocha\n\nsh: 1: mocha: not found\n")).toBeNull();
    expect(startFailure("./test.sh", 127, "sh: 1: ./test.sh: not found\n")).toBeNull();
    expect(startFailure("cargo test", 1, "sh: 1: cargo: not found\n")).toBeNull();
  });

  test("the programs a command starts: first words, no builtins, no project scripts, no expansions", () => {
    expect(programsOf("cd sub && CI=1 python3 -m pytest -q | tee out.txt; ./run.sh && $TOOL x && test -f a && /usr/bin/env true")).toEqual([
      "python3",
      "tee",
      "/usr/bin/env",
    ]);
    // A function or alias the command defines is no program to find: a fork bomb still reaches its cap.
    expect(programsOf("bomb() { bomb | bomb & }; bomb; sleep 2")).toEqual(["sleep"]);
    expect(programsOf("function check { true; }; check && alias t=true; t; make")).toEqual(["make"]);
  });

  test("a verify command whose program could not start decides environment_unavailable, as patched or held to the base", () => {
    const failed = {
      command: "python3 -m pytest",
      phase: "verify" as const,
      exitCode: 127,
      signal: null,
      timedOut: false,
      durationMs: 5,
      startFailure: { program: "python3", said: "sh: 1: python3: not found" },
    };
    const verdict = decideOutcome({
      ...NO_FACTS,
      agent: { outcome: { kind: "finished" } } as never,
      patch: { empty: false, violations: [] },
      verifyCommands: ["python3 -m pytest"],
      verification: { kind: "command_failed", commands: [failed], failed, tests: null },
    });
    expect(verdict).toMatchObject({ terminalReason: "environment_unavailable", detail: "verify_command_unavailable" });
    expect(verdict.summary).toContain("which says nothing about the patch");
  });
});
