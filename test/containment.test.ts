import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, expect, test, vi } from "vitest";
import { detectCgroupSupport } from "../src/containment/cgroup.js";
import type { ExternalAgentBackend } from "../src/agent/backend.js";
import { probeBubblewrap } from "../src/containment/sandbox.js";
import { runCli, commandRunArgs } from "./helpers/cli.js";
import { processesOfRun } from "./helpers/conformance.js";
import { FAILING_ADD_PROJECT, fingerprintTree, diffFingerprints, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, delegate, delegateWithoutSandbox } from "./helpers/run.js";
import { FIX_LINE, expectVerifiedFix } from "./helpers/verdicts.js";

/**
 * Issue 4's containment, end to end through the pipeline with real bubblewrap, real cgroups and real processes.
 * Each test names the threat row (docs/threat-model.md) it proves: what the hostile agent or test tried, that it failed,
 * and that the run's result says so.
 */
const bwrap = await probeBubblewrap();
// CI installs bubblewrap: there a sandbox that cannot run fails these tests instead of skipping them.
if (!bwrap.ok && process.env.HANDOFF_SANDBOX_TESTS === "required") throw new Error(`bubblewrap is required here: ${bwrap.reason}`);
const cgroups = detectCgroupSupport();
const VERIFY = { verify: ["npm test"] };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!bwrap.ok)("with the sandbox (bubblewrap)", () => {
  test("the run records the sandbox it used: bwrap, the agent's and setup's network filtered, none for verification, no uncontained rows", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add.sh"), VERIFY);
    expectVerifiedFix(run);
    expect(run.result.containment).toMatchObject({
      sandbox: "bwrap",
      requested: "auto",
      reason: null,
      network: { agent: "filtered", setup: "filtered", verify: "none" },
      uncontained: [],
    });
    expect(run.result.policy.warnings.map((w) => w.rule)).not.toContain("no_sandbox");
  });

  test("P1, H12: a setsid daemon meant to edit the workspace after the agent exits dies with the agent's PID namespace", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add-and-leaves-a-late-writer.sh"), { ...VERIFY, keepWorkspace: true });
    expectVerifiedFix(run);
    expect(run.patch).not.toContain("tampered");
    await sleep(1500); // past the daemon's moment
    expect(existsSync(join(run.result.workspace!, "late.txt"))).toBe(false);
    expect(readFileSync(join(run.result.workspace!, "math.js"), "utf8")).not.toContain("tampered");
    expect(processesOfRun(run.result.runId)).toEqual([]);
  });

  test("P5: the agent cannot read another process's environment through /proc: its PID namespace shows only its own", async () => {
    const sibling = spawnSibling({ SECRET_TOKEN: "sk-live-sibling-4242" });
    try {
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const run = await delegate(repo, agent("fixes-add-and-reads-other-environments.sh"), VERIFY);
      expect(run.result.terminalReason).toBe("verified");
      expect(run.patch).not.toContain("sk-live-sibling-4242");
      expect(Number(/processes-seen\.txt[\s\S]*?\n\+(\d+)/.exec(run.patch)?.[1])).toBeLessThan(10);
    } finally {
      sibling.kill("SIGKILL");
    }
  });

  test("S1–S5 prevented, not just detected: a write to the source by absolute path lands in a trap and is reported", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, `${agent("fixes-add-and-writes-source.sh")} test.js`, { ...VERIFY, env: ["HANDOFF_TEST_SOURCE"] });
    expectVerifiedFix(run);
    expect(run.result.sourceInvariant).toEqual({ matched: true, changed: [] });
    expect(run.result.policy.warnings).toContainEqual(expect.objectContaining({ rule: "blocked_write", path: join(repo, "test.js") }));
    expect(run.result.containment?.events).toContainEqual(expect.objectContaining({ kind: "blocked_write", role: "agent" }));
  });

  test("a source file named in --agent-cmd is shown alone: the ignored .env beside it stays unreadable, writes there still trapped", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    writeFileSync(join(repo, ".gitignore"), "node_modules/\n.env\n");
    execFileSync("git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "ignore .env"]);
    writeFileSync(join(repo, ".env"), "API_TOKEN=sk-live-from-dotenv\n");
    // The command names the source's math.js (shown alone, read-only); the agent then reaches for the .env beside it.
    const cmd = `sed -i 's/a - b/a + b/' math.js; src=$(dirname ${join(repo, "math.js")}); cat "$src/.env" > seen.txt 2>&1; echo x > "$src/owned.txt"; true`;
    const run = await delegate(repo, cmd, VERIFY);
    expect(run.result.terminalReason).toBe("verified");
    expect(run.patch).not.toContain("sk-live-from-dotenv");
    // The one write reported is the agent's: not the mount point bubblewrap made for math.js.
    expect(run.result.containment?.events.filter((e) => e.kind === "blocked_write")).toEqual([
      expect.objectContaining({ path: join(repo, "owned.txt") }),
    ]);
    expect(run.sourceChanged).toEqual([]);
  });

  test("F6: a hard link to a source file cannot be made: the source is not there to link to", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("hard-links-a-source-file.sh"), { ...VERIFY, env: ["HANDOFF_TEST_SOURCE"] });
    expectVerifiedFix(run);
    expect(run.result.policy.violations).toEqual([]);
    expect(readFileSync(join(repo, "math.js"), "utf8")).toBe(FAILING_ADD_PROJECT["math.js"]);
  });

  test("P7: a verification command cannot reach the network, and --verify-network gives it back", async () => {
    const { server, url, requests } = await listen();
    try {
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const fetchIt = `node -e "fetch('${url}').then((r) => r.text()).then(console.log, (e) => { console.error('unreachable:', e.cause?.code ?? e.message); process.exit(7); })"`;
      const offline = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test", fetchIt] });
      expect(offline.result).toMatchObject({ terminalReason: "verification_failed" });
      expect(offline.result.verification.commands[1]).toMatchObject({ exitCode: 7 });
      expect(readFileSync(join(offline.runDir, "test.log"), "utf8")).toContain("unreachable: ECONNREFUSED");
      expect(requests()).toBe(0);

      const online = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test", fetchIt], verifyNetwork: true });
      expect(online.result.terminalReason).toBe("verified");
      expect(online.result.containment?.network.verify).toBe("host");
      expect(requests()).toBe(1);
    } finally {
      server.close();
    }
  });

  test("G14, P6: the user's home is invisible: no key read, no ~/.gitconfig or ~/.bashrc written", async () => {
    const userHome = tempDir("handoff-user-home");
    mkdirSync(join(userHome, ".ssh"));
    mkdirSync(join(userHome, ".aws"));
    writeFileSync(join(userHome, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\nuser-key-material\n");
    writeFileSync(join(userHome, ".aws", "credentials"), "aws_secret_access_key = user-aws-secret\n");
    writeFileSync(join(userHome, ".gitconfig"), "[user]\n\tname = me\n");
    const before = fingerprintTree(userHome);
    vi.stubEnv("HOME", userHome);
    vi.stubEnv("HANDOFF_TEST_USER_HOME", userHome);
    try {
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const run = await delegate(repo, agent("fixes-add-and-raids-the-user-home.sh"), { ...VERIFY, env: ["HANDOFF_TEST_USER_HOME"] });
      expect(run.result.terminalReason).toBe("verified");
      expect(run.patch).not.toContain("user-key-material");
      expect(run.patch).not.toContain("user-aws-secret");
      expect(diffFingerprints(before, fingerprintTree(userHome))).toEqual([]);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  test("G1, G2, G10, H3: the clone's git metadata is read-only to the agent: no fsmonitor, hook, commit or repointed gitfile", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add-and-rewrites-its-git-metadata.sh"), VERIFY);
    expect(run.result.terminalReason).toBe("verified");
    const attempts = /\+\+\+ b\/git-attempts\.txt\n@@[^\n]*\n([\s\S]*?)(?:\ndiff|$)/.exec(run.patch)?.[1] ?? "";
    expect(attempts.split("\n").filter(Boolean)).toEqual([
      expect.stringMatching(/^\+refused: git config core.fsmonitor/),
      expect.stringMatching(/^\+refused: sh -c echo .*hooks\/post-index-change/),
      expect.stringMatching(/^\+refused: git .* commit/),
      expect.stringMatching(/^\+refused: sh -c echo "gitdir: \/elsewhere" > \.git/),
    ]);
    expect(run.payloadsRan).toEqual([]);
  });

  test("P8: a test script the agent rewrote runs sandboxed in verification: no network, no user home, and it is flagged", async () => {
    const { server, url, requests } = await listen();
    const userHome = tempDir("handoff-user-home");
    writeFileSync(join(userHome, ".bashrc"), "# mine\n");
    vi.stubEnv("HOME", userHome);
    try {
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const run = await delegate(repo, `${agent("fixes-add-and-rewrites-the-test-script.sh")} '${url}' '${userHome}'`, VERIFY);
      expect(run.result.terminalReason).toBe("verified");
      expect(run.result.policy.warnings).toContainEqual(expect.objectContaining({ rule: "package_manifest", path: "package.json" }));
      expect(requests()).toBe(0);
      expect(readFileSync(join(userHome, ".bashrc"), "utf8")).toBe("# mine\n");
    } finally {
      vi.unstubAllEnvs();
      server.close();
    }
  });

  test("P10: inside the sandbox the agent is in the sandbox's own session (bwrap --new-session), without a controlling terminal", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, `sed -i 's/a - b/a + b/' math.js; cut -d')' -f2- /proc/$$/stat > stat.txt; echo $$ > pid.txt`, VERIFY);
    const added = (file: string) => new RegExp(`\\+\\+\\+ b/${file}\\n@@[^\\n]*\\n\\+([^\\n]*)`).exec(run.patch)?.[1] ?? "";
    const [, , , session, ttyNr] = added("stat.txt").trim().split(" ");
    // pid 1 is bubblewrap's init, which made the session; the agent comes after it (and after the Node forwarder, where socat is not installed).
    expect(Number(added("pid.txt").trim())).toBeGreaterThan(1);
    expect(session).toBe("1");
    expect(ttyNr).toBe("0");
  });

  test("G15: handoff's pristine store is out of the agent's sight: nothing planted, nothing tampered, the fix verified", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("reaches-handoff-pristine-store.sh"), VERIFY);
    expectVerifiedFix(run);
    expect(run.result.policy.violations).toEqual([]);
  });

  test("S1–S5 prevented in verification too: a verify command writing the source is sent to a trap and reported", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test", `echo owned >> '${join(repo, "test.js")}'`] });
    expect(run.result.terminalReason).toBe("verified");
    expect(run.sourceChanged).toEqual([]);
    expect(run.result.containment?.events).toContainEqual(
      expect.objectContaining({ kind: "blocked_write", role: "verify", path: join(repo, "test.js") }),
    );
  });

  test("a library backend that spawns outside the jail it was given is reported as running outside the sandbox", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const backend: ExternalAgentBackend = {
      name: "careless",
      async run(_task, context) {
        writeFileSync(join(context.cwd, "math.js"), FAILING_ADD_PROJECT["math.js"]!.replace("a - b", "a + b"));
        return {
          outcome: { kind: "finished" },
          executable: null,
          version: null,
          sessionId: null,
          exitCode: 0,
          signal: null,
          finalMessage: null,
          usage: null,
          stderrTail: "",
          durationMs: 0,
        };
      },
    };
    const run = await delegate(repo, "", { ...VERIFY, backend });
    expect(run.result.terminalReason).toBe("verified");
    expect(run.result.policy.warnings).toContainEqual(expect.objectContaining({ rule: "backend_outside_sandbox" }));
  });

  test("F9: a root agent cannot make a device node: every capability is dropped", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add-and-makes-a-device.sh"), VERIFY);
    expect(run.result.terminalReason).toBe("verified");
    expect(run.patch).toContain("+refused");
  });

  test("P1: a wall-clock timeout leaves no process of the run behind", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, `setsid sleep 300 & sleep 300 & ${agent("does-nothing.sh")}; sleep 300`, {
      timeoutMs: 1500,
      noVerify: true,
    });
    expect(run.result).toMatchObject({ terminalReason: "timeout", detail: "wall_timeout" });
    expect(processesOfRun(run.result.runId)).toEqual([]);
  });

  test("P1: cancelling mid-agent leaves no process of the run behind", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const controller = new AbortController();
    const runId = `cancel-${Date.now()}`;
    const running = delegate(repo, "setsid sleep 300 & echo started; sleep 300", { signal: controller.signal, runId, noVerify: true });
    await waitFor(() => processesOfRun(runId).length >= 3);
    controller.abort();
    const run = await running;
    expect(run.result).toMatchObject({ terminalReason: "user_cancelled", detail: "interrupted" });
    expect(processesOfRun(run.result.runId)).toEqual([]);
  });
});

describe.skipIf(!bwrap.ok || cgroups.kind === "unavailable")("resource caps (cgroup)", () => {
  test("P2: a fork bomb in a verification command ends as a failed command at the process cap", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const bomb = "bomb() { bomb | bomb & }; bomb; sleep 2";
    const run = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test", bomb], caps: { processes: 64 } });
    expect(run.result).toMatchObject({ terminalReason: "verification_failed", detail: "resource_cap_hit" });
    expect(run.result.summary).toBe(`\`${bomb}\` ran into the process cap`);
    expect(run.result.verification.commands[1]).toMatchObject({ command: bomb, limitHit: "processes" });
    expect(readFileSync(join(run.runDir, "test.log"), "utf8")).toContain("stopped by the process cap");
    expect(run.result.policy.warnings).toContainEqual(expect.objectContaining({ rule: "resource_cap_hit" }));
  });

  test("P2: a memory bomb in a verification command is killed at the memory cap and fails the run", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const bomb = `node -e "const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))"`;
    const run = await delegate(repo, agent("fixes-add.sh"), { verify: ["npm test", bomb], caps: { memoryBytes: 256 * 1024 * 1024 } });
    expect(run.result.terminalReason).toBe("verification_failed");
    expect(run.result.verification.commands[1]).toMatchObject({ limitHit: "memory" });
    expect(run.result.containment?.caps).toMatchObject({
      memoryBytes: 256 * 1024 * 1024,
      enforcedBy: expect.stringMatching(/^cgroup_v[12]$/),
    });
  });
});

describe.skipIf(cgroups.kind === "unavailable")("resource caps without the sandbox", () => {
  test("P1: a daemon that dropped the marker and left the clone is still held by the run's cgroup, killed and reported", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, agent("fixes-add-and-leaves-an-escaped-daemon.sh"), VERIFY);
    expect(run.result.terminalReason).toBe("verified");
    expect(run.result.containment?.events).toContainEqual(
      expect.objectContaining({ kind: "leftover_killed", found: "in_cgroup", command: "sleep 300" }),
    );
  });

  test("P2: the caps hold without bubblewrap too: a fork bomb in verification ends at the process cap", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const bomb = "bomb() { bomb | bomb & }; bomb; sleep 2";
    const run = await delegateWithoutSandbox(repo, agent("fixes-add.sh"), { verify: ["npm test", bomb], caps: { processes: 64 } });
    expect(run.result.terminalReason).toBe("verification_failed");
    expect(run.result.verification.commands[1]).toMatchObject({ limitHit: "processes" });
  });
});

describe("without the sandbox (--sandbox none)", () => {
  test("the run says it had no sandbox and what that left open", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, agent("fixes-add.sh"), VERIFY);
    expectVerifiedFix(run);
    expect(run.result.containment).toMatchObject({ sandbox: "none", requested: "none", reason: null });
    expect(run.result.containment?.uncontained.length).toBeGreaterThan(0);
    expect(run.result.policy.warnings).toContainEqual(expect.objectContaining({ rule: "no_sandbox" }));
  });

  test("P1: a setsid daemon that escaped the process group is found by the run's marker and killed, and reported", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, agent("fixes-add-and-leaves-a-late-writer.sh"), VERIFY);
    expect(run.result.terminalReason).toBe("verified");
    expect(run.patch).toContain(FIX_LINE);
    expect(run.result.policy.warnings).toContainEqual(
      expect.objectContaining({ rule: "leftover_process_killed", message: expect.stringContaining("marker") }),
    );
    expect(processesOfRun(run.result.runId)).toEqual([]);
  });

  test("P1: a daemon that dropped the marker but sits in the clone is found by its hold on the workspace", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, agent("fixes-add-and-leaves-a-markerless-daemon.sh"), VERIFY);
    expect(run.result.terminalReason).toBe("verified");
    expect(run.result.containment?.events).toContainEqual(expect.objectContaining({ kind: "leftover_killed", found: "holds_workspace" }));
  });
});

describe("choosing the sandbox", () => {
  test("auto falls back to none with a warning when bubblewrap cannot run here; --sandbox bwrap is then a usage error", async () => {
    // A bwrap that fails like one on a machine with user namespaces turned off.
    const bin = tempDir("handoff-broken-bwrap");
    writeFileSync(join(bin, "bwrap"), "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n", { mode: 0o755 });
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const env = { PATH: `${bin}:${process.env.PATH}` };
    const base = ["run", "-C", repo, "-b", "command", "--agent-cmd", agent("fixes-add.sh"), "--verify", "npm test", "--yes", "--json"];

    const auto = await runCli([...base, "--runs-dir", join(tempDir(), "runs"), "--", "fix it"], { env });
    expect(auto.code, auto.stderr).toBe(0);
    const result = JSON.parse(auto.stdout);
    expect(result.containment).toMatchObject({
      sandbox: "none",
      requested: "auto",
      reason: expect.stringContaining("No permissions to creating new namespace"),
    });
    expect(result.policy.warnings).toContainEqual(expect.objectContaining({ rule: "no_sandbox" }));

    const runsDir = join(tempDir(), "runs");
    const strict = await runCli([...base, "--sandbox", "bwrap", "--runs-dir", runsDir, "--", "fix it"], { env });
    expect(strict.code).toBe(2);
    expect(strict.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^handoff: --sandbox bwrap was asked for, but bubblewrap cannot run here: /),
    ]);
    expect(existsSync(runsDir)).toBe(false);
  });

  test("an unknown --sandbox mode is a usage error", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const outcome = await runCli(commandRunArgs(repo, "true", ["--yes", "--sandbox", "docker"], "x"));
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toContain("--sandbox must be auto, bwrap or none, not 'docker'");
  });
});

/** A process of the same user holding a secret in its environment, as the user's other programs do. */
function spawnSibling(env: Record<string, string>): ChildProcess {
  return spawn("sleep", ["120"], { env: { ...process.env, ...env }, stdio: "ignore" });
}

async function listen(): Promise<{ server: Server; url: string; requests: () => number }> {
  let count = 0;
  const server = createServer((_request, response) => {
    count++;
    response.end("reached");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, requests: () => count };
}

async function waitFor(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await sleep(50);
  }
}
