import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, onTestFinished, test, vi } from "vitest";
import { createCommandParser } from "../backends/command-stream.js";
import { runAgentCommand } from "../src/agent/agent-process.js";
import type { AgentEvent } from "../src/vocabulary/events.js";
import { type SpawnRequest, captureProcess, runProcess } from "../src/process/process.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, delegate, delegateWithoutSandbox, makeHarness, readEvents } from "./helpers/run.js";
import { TEST_ENV_NAMES, agentOutputDir, isRunning } from "./helpers/processes.js";

afterEach(() => {
  vi.unstubAllEnvs();
});

const PATH_ONLY = { PATH: "/usr/local/bin:/usr/bin:/bin" };

/** `/bin/sh -c script` through the process module, in a temp dir, with collected output. */
async function sh(script: string, request: Partial<SpawnRequest> = {}) {
  let stdout = "";
  let stderr = "";
  const outcome = await runProcess({
    file: "/bin/sh",
    args: ["-c", script],
    cwd: tempDir("handoff-proc"),
    env: PATH_ONLY,
    onStdout: (chunk) => (stdout += chunk.toString("utf8")),
    onStderr: (chunk) => (stderr += chunk.toString("utf8")),
    ...request,
  });
  return { outcome, stdout, stderr };
}

/** A script that backgrounds a long sleep and writes its pid to `pidFile` before going on with `then`. */
function sleeperScript(pidFile: string, then = "wait"): string {
  return `sleep 300 & echo $! > '${pidFile}.tmp' && mv '${pidFile}.tmp' '${pidFile}'; ${then}`;
}

describe("runProcess", () => {
  test("the wall-clock limit stops the whole process group, grandchildren included", async () => {
    const pidFile = join(tempDir(), "sleeper.pid");
    const { outcome } = await sh(sleeperScript(pidFile), { timeoutMs: 2000 });
    expect(outcome).toMatchObject({ timedOut: "wall", cancelled: false, spawnError: null, exitCode: null, signal: "SIGTERM" });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(1900);
    expect(isRunning(Number(readFileSync(pidFile, "utf8")))).toBe(false);
  });

  test("the idle limit fires on silence and stops the group", async () => {
    const pidFile = join(tempDir(), "sleeper.pid");
    const { outcome, stdout } = await sh(`echo started; ${sleeperScript(pidFile)}`, { timeoutMs: 60_000, idleTimeoutMs: 1500 });
    expect(stdout).toBe("started\n");
    expect(outcome.timedOut).toBe("idle");
    expect(outcome.durationMs).toBeLessThan(30_000);
    expect(isRunning(Number(readFileSync(pidFile, "utf8")))).toBe(false);
  });

  test("output resets the idle timer: a chatty process outlives the idle limit", async () => {
    const { outcome, stdout } = await sh("for i in 1 2 3 4 5 6; do echo tick; sleep 0.25; done", { idleTimeoutMs: 3000 });
    expect(outcome).toMatchObject({ exitCode: 0, timedOut: null });
    expect(stdout.split("\n").filter(Boolean)).toHaveLength(6);
  });

  test("stdin gets the given text and is then closed, so `cat` finishes; without text stdin is closed from the start", async () => {
    const withText = await sh("cat; echo '<eof>'", { stdin: "the task\n", idleTimeoutMs: 20_000 });
    expect(withText.outcome).toMatchObject({ exitCode: 0, timedOut: null });
    expect(withText.stdout).toBe("the task\n<eof>\n");
    const without = await sh("cat; echo '<eof>'", { idleTimeoutMs: 20_000 });
    expect(without.outcome).toMatchObject({ exitCode: 0, timedOut: null });
    expect(without.stdout).toBe("<eof>\n");
  });

  test("a process that ignores SIGTERM is SIGKILLed after the grace period", async () => {
    const pidFile = join(tempDir(), "sleeper.pid");
    const controller = new AbortController();
    const { outcome } = await sh(`trap '' TERM; ${sleeperScript(pidFile, "echo ready; wait")}`, {
      signal: controller.signal,
      graceMs: 500,
      onStdout: (chunk) => {
        if (chunk.toString("utf8").includes("ready")) controller.abort();
      },
    });
    expect(outcome).toMatchObject({ cancelled: true, timedOut: null, signal: "SIGKILL", exitCode: null });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(500);
    expect(isRunning(Number(readFileSync(pidFile, "utf8")))).toBe(false);
  });

  test("a background process left behind by a child that exited normally is killed with its group", async () => {
    const pidFile = join(tempDir(), "sleeper.pid");
    const { outcome } = await sh(sleeperScript(pidFile, "exit 0"));
    expect(outcome).toMatchObject({ exitCode: 0, killedLeftovers: true });
    expect(isRunning(Number(readFileSync(pidFile, "utf8")))).toBe(false);
  });

  test("P1 (partial): a grandchild that left the group with setsid and holds stdout open does not keep handoff waiting", async () => {
    const pidFile = join(tempDir(), "escaped.pid");
    // Containment of such a process needs a PID namespace (docs/threat-model.md P1); the process module only must not hang.
    onTestFinished(() => {
      if (existsSync(pidFile)) process.kill(Number(readFileSync(pidFile, "utf8")), "SIGKILL");
    });
    const { outcome } = await sh(`setsid sleep 300 & echo $! > '${pidFile}'; sleep 0.3; exit 0`, { graceMs: 500 });
    expect(outcome).toMatchObject({ exitCode: 0, timedOut: null });
    expect(outcome.durationMs).toBeLessThan(10_000);
  });

  test("a member that already exited (a zombie nobody reaps) does not count as a process left behind", async () => {
    const pidFile = join(tempDir(), "parent.pid");
    onTestFinished(() => {
      if (existsSync(pidFile)) process.kill(Number(readFileSync(pidFile, "utf8")), "SIGKILL");
    });
    // The inner shell forks `true` into the group, then leaves the group as a sleep that never reaps it.
    const { outcome } = await sh(`sh -c 'true & exec setsid sleep 300' >/dev/null 2>&1 & echo $! > '${pidFile}'; sleep 0.3; exit 0`);
    expect(outcome).toMatchObject({ exitCode: 0, killedLeftovers: false });
  });

  test("output is streamed, never buffered whole: 48 MiB of stderr arrives in chunks", async () => {
    let bytes = 0;
    let largest = 0;
    const outcome = await runProcess({
      file: "/bin/sh",
      args: ["-c", "head -c 50331648 /dev/zero >&2"],
      cwd: tempDir(),
      env: PATH_ONLY,
      onStderr: (chunk) => {
        bytes += chunk.length;
        largest = Math.max(largest, chunk.length);
      },
    });
    expect(outcome.exitCode).toBe(0);
    expect(bytes).toBe(50331648);
    expect(largest).toBeLessThan(4 * 1024 * 1024);
  });

  test("an executable that does not exist is a spawn error, not a crash", async () => {
    const outcome = await runProcess({ file: "/nonexistent/agent-cli", args: [], cwd: tempDir(), env: PATH_ONLY });
    expect(outcome.exitCode).toBeNull();
    expect(outcome.spawnError?.code).toBe("ENOENT");
  });

  test("a 140,000-byte argument, which the kernel refuses (E2BIG), is a spawn error at once, not a wait for the wall-clock limit", async () => {
    const { outcome } = await sh(`echo ${"x".repeat(140_000)}`, { timeoutMs: 600_000 });
    expect(outcome).toMatchObject({ exitCode: null, signal: null, timedOut: null, cancelled: false });
    expect(outcome.spawnError?.code).toBe("E2BIG");
  });

  test("a NUL byte in an argument or in the environment is a spawn error (ERR_INVALID_ARG_VALUE), not a throw or a hang", async () => {
    const inArgument = await sh("echo a\0b", { timeoutMs: 600_000 });
    expect(inArgument.outcome.spawnError?.code).toBe("ERR_INVALID_ARG_VALUE");
    const inEnvironment = await sh("true", { timeoutMs: 600_000, env: { ...PATH_ONLY, TASK: "a\0b" } });
    expect(inEnvironment.outcome.spawnError).not.toBeNull();
    expect(inEnvironment.outcome.exitCode).toBeNull();
  });

  test("the child gets exactly the given environment, nothing of handoff's own", async () => {
    vi.stubEnv("SECRET_TOKEN", "sk-live-123");
    const { stdout } = await sh("env", { env: { ...PATH_ONLY, ONLY_THIS: "1" } });
    expect(stdout).toContain("ONLY_THIS=1");
    expect(stdout).not.toContain("SECRET_TOKEN");
    expect(stdout).not.toContain("sk-live-123");
  });

  test("an already aborted signal starts nothing", async () => {
    const controller = new AbortController();
    controller.abort();
    const marker = join(tempDir(), "ran");
    const { outcome } = await sh(`touch '${marker}'`, { signal: controller.signal });
    expect(outcome.cancelled).toBe(true);
    expect(readdirSync(join(marker, ".."))).toEqual([]);
  });
});

describe("captureProcess", () => {
  test("a call that blocks (git opening a planted FIFO) is killed at its timeout and says so", async () => {
    const result = await captureProcess({ file: "sleep", args: ["30"], cwd: "/", env: { PATH: "/usr/bin:/bin" }, timeoutMs: 200 });
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBeNull();
    expect(result.stderr).toContain("killed after 200 ms");
  });

  test("bytes in and out unchanged: the input on stdin, stdout whole, stderr as text, the exit code", async () => {
    const input = Buffer.from([0, 1, 0xff, 0x0a]);
    const result = await captureProcess({ file: "sh", args: ["-c", "cat; printf 'é' >&2; exit 3"], cwd: "/", env: PATH_ONLY, input });
    expect(result).toEqual({ exitCode: 3, stdout: input, stderr: "é", truncated: false, timedOut: false });
  });

  test("output past maxBuffer is cut at it and the call says so, without waiting for an endless writer", async () => {
    const result = await captureProcess({ file: "yes", args: [], cwd: "/", env: PATH_ONLY, maxBuffer: 1000, timeoutMs: 20_000 });
    expect(result.truncated).toBe(true);
    expect(result.timedOut).toBe(false);
    expect(result.stdout).toEqual(Buffer.from("y\n".repeat(500)));
    expect(result.stderr).toContain("(output exceeded 1000 bytes)");
  });

  test("an output of exactly maxBuffer bytes is whole, not cut", async () => {
    const result = await captureProcess({ file: "head", args: ["-c", "1000", "/dev/zero"], cwd: "/", env: PATH_ONLY, maxBuffer: 1000 });
    expect(result).toMatchObject({ exitCode: 0, truncated: false });
    expect(result.stdout.length).toBe(1000);
  });

  test("a program that cannot start (missing, not executable, no such cwd) is exit code null with no output", async () => {
    for (const request of [
      { file: "/nonexistent/program", cwd: "/" },
      { file: "/etc/passwd", cwd: "/" },
      { file: "sh", cwd: "/nonexistent-directory" },
    ]) {
      const result = await captureProcess({ ...request, args: [], env: PATH_ONLY });
      expect(result).toEqual({ exitCode: null, stdout: Buffer.alloc(0), stderr: "", truncated: false, timedOut: false });
    }
  });

  test("a cancelled call is stopped (exit code null), one cancelled before it starts never runs", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const during = await captureProcess({
      file: "sh",
      args: ["-c", "printf started; exec sleep 30"],
      cwd: "/",
      env: PATH_ONLY,
      signal: controller.signal,
    });
    expect(during).toMatchObject({ exitCode: null, timedOut: false, truncated: false });
    expect(during.stdout.toString()).toBe("started");
    const marker = join(tempDir("capture-cancel-"), "ran");
    const before = await captureProcess({ file: "touch", args: [marker], cwd: "/", env: PATH_ONLY, signal: AbortSignal.abort() });
    expect(before.exitCode).toBeNull();
    expect(existsSync(marker)).toBe(false);
  });
});

describe("runAgentCommand", () => {
  test("an agent executable that cannot start ends failed with executable_unavailable and the install hint", async () => {
    const events: AgentEvent[] = [];
    const result = await runAgentCommand(
      {
        command: { file: "/nonexistent/agent-cli", args: ["exec"], stdin: "task" },
        parser: createCommandParser(),
        executableLabel: "/nonexistent/agent-cli",
        version: null,
        installHint: "install agent-cli",
      },
      {
        cwd: tempDir(),
        env: PATH_ONLY,
        signal: new AbortController().signal,
        deadline: Date.now() + 30_000,
        idleTimeoutMs: 30_000,
        model: null,
        executable: null,
        homeDir: tempDir(),
        userEnv: {},
        emit: (event) => events.push(event),
      },
    );
    expect(result.outcome).toMatchObject({ kind: "failed", detail: "executable_unavailable", hint: "install agent-cli" });
    expect(result.exitCode).toBeNull();
  });
});

describe("the agent process in the pipeline", () => {
  test("--timeout ends `timeout` (wall_timeout) with no process left behind", async () => {
    const out = agentOutputDir();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, agent("spawns-sleeper-and-waits.sh"), {
      env: [...TEST_ENV_NAMES],
      timeoutMs: 2000,
      noVerify: true,
    });
    expect(run.result).toMatchObject({ terminalReason: "timeout", detail: "wall_timeout", status: "failed" });
    expect(isRunning(await out.sleeperPid())).toBe(false);
    expect(run.sourceChanged).toEqual([]);
  });

  test("--idle-timeout ends `timeout` (idle_timeout) with no process left behind", async () => {
    const out = agentOutputDir();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegateWithoutSandbox(repo, agent("spawns-sleeper-and-waits.sh"), {
      env: [...TEST_ENV_NAMES],
      timeoutMs: 120_000,
      idleTimeoutMs: 1500,
      noVerify: true,
    });
    expect(run.result).toMatchObject({ terminalReason: "timeout", detail: "idle_timeout" });
    expect(isRunning(await out.sleeperPid())).toBe(false);
  });

  test("an agent that ignores SIGTERM is SIGKILLed after the grace", async () => {
    const out = agentOutputDir();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    // The trap in the agent's own shell: SIGTERM stays ignored in everything it starts.
    const run = await delegateWithoutSandbox(repo, `trap '' TERM; ${agent("spawns-sleeper-and-waits.sh")}`, {
      env: [...TEST_ENV_NAMES],
      timeoutMs: 1500,
      noVerify: true,
    });
    expect(run.result).toMatchObject({ terminalReason: "timeout", detail: "wall_timeout" });
    expect(run.result.backend.signal).toBe("SIGKILL");
    expect(isRunning(await out.sleeperPid())).toBe(false);
  });

  test("stdin is closed after the task: an agent reading it to the end with cat finishes", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("reads-task-from-stdin.sh"), { verify: ["npm test"], idleTimeoutMs: 20_000 });
    expect(run.result.terminalReason).toBe("verified");
    expect(run.result.agent.finalMessage).toBe(`read ${"fix the failing test".length} characters from stdin`);
  });

  test("cancelling through the AbortSignal mid-agent ends user_cancelled, writes every artifact, leaves no process", async () => {
    const out = agentOutputDir();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const controller = new AbortController();
    const running = delegateWithoutSandbox(repo, agent("spawns-sleeper-and-waits.sh"), {
      env: [...TEST_ENV_NAMES],
      signal: controller.signal,
      noVerify: true,
    });
    const sleeper = await out.sleeperPid();
    controller.abort();
    const run = await running;

    expect(run.result).toMatchObject({ terminalReason: "user_cancelled", detail: "interrupted", status: "cancelled" });
    expect(isRunning(sleeper)).toBe(false);
    expect(JSON.parse(readFileSync(join(run.runDir, "checkpoint.json"), "utf8"))).toMatchObject({
      done: true,
      terminalReason: "user_cancelled",
    });
    expect(JSON.parse(readFileSync(join(run.runDir, "backend-result.json"), "utf8")).outcome).toEqual({ kind: "cancelled" });
    expect(readEvents(run.runDir).at(-1)).toMatchObject({ type: "run.finished", terminalReason: "user_cancelled" });
    expect(run.sourceChanged).toEqual([]);
  });

  test("cancelling during verification ends user_cancelled and stops the verification command", async () => {
    const out = agentOutputDir();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const controller = new AbortController();
    const pidFile = join(out.dir, "sleeper.pid");
    const verify = `sleep 300 & echo $! > '${pidFile}.tmp' && mv '${pidFile}.tmp' '${pidFile}'; wait`;
    const running = delegateWithoutSandbox(repo, agent("fixes-add.sh"), { verify: [verify], signal: controller.signal });
    const sleeper = await out.sleeperPid();
    controller.abort();
    const run = await running;

    expect(run.result).toMatchObject({ terminalReason: "user_cancelled", detail: "interrupted", status: "cancelled" });
    expect(run.result.patch?.files.map((file) => file.path)).toEqual(["math.js"]);
    expect(isRunning(sleeper)).toBe(false);
  });

  test("P3: a 48 MiB stderr flood is bounded: the run completes and keeps only a short tail", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("floods-stderr.sh"), { verify: ["npm test"] });
    expect(run.result.terminalReason).toBe("verified");
    const backendResult = JSON.parse(readFileSync(join(run.runDir, "backend-result.json"), "utf8"));
    // One 48 MiB run of letters: a token cut at the tail's start, so none of it is kept, and the marker says how much.
    expect(backendResult.stderrTail).toBe("(50331648 earlier bytes) …");
    const runDirBytes = readdirSync(run.runDir).reduce((sum, name) => sum + statSync(join(run.runDir, name)).size, 0);
    expect(runDirBytes).toBeLessThan(1024 * 1024);
  });

  test("P3: an 18 MiB stdout line without a newline becomes a diagnostic event, not a crash", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("prints-huge-unterminated-line.sh"), { verify: ["npm test"] });
    expect(run.result.terminalReason).toBe("verified");
    expect(run.result.agent.finalMessage).toBe("Fixed add(); all tests pass.");
    const diagnostics = readEvents(run.runDir).filter((event) => event.type === "diagnostic");
    expect(diagnostics).toHaveLength(1);
    expect(diagnostics[0]!.message).toContain("18874368 bytes");
    expect(String(diagnostics[0]!.raw).length).toBeLessThanOrEqual(200);
    expect(statSync(join(run.runDir, "events.jsonl")).size).toBeLessThan(64 * 1024);
  });

  test("a command the shell cannot find ends external_agent_error, executable_unavailable, with the shell's complaint kept", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, "/nonexistent/agent-cli --go", { noVerify: true });
    expect(run.result).toMatchObject({ terminalReason: "external_agent_error", detail: "executable_unavailable", status: "failed" });
    expect(run.result.hint).toContain("--agent-cmd");
    expect(run.result.backend.exitCode).toBe(127);
    expect(run.result.summary).toContain("127");
    const backendResult = JSON.parse(readFileSync(join(run.runDir, "backend-result.json"), "utf8"));
    expect(backendResult.stderrTail).toMatch(/\/nonexistent\/agent-cli.*not found/);
  });

  test("P5: the agent's environment is an allowlist: PATH, a private HOME and TMPDIR, the task, and names passed with env", async () => {
    const out = agentOutputDir();
    vi.stubEnv("SECRET_TOKEN", "sk-live-123");
    vi.stubEnv("MY_AGENT_KEY", "named-key");
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const harness = makeHarness();
    const run = await delegateWithoutSandbox(repo, agent("records-its-environment.sh"), {
      harness,
      env: [...TEST_ENV_NAMES, "MY_AGENT_KEY"],
      noVerify: true,
    });
    expect(run.result.terminalReason).toBe("no_changes");

    const text = readFileSync(join(out.dir, "agent.env"), "utf8");
    const env = new Map(
      text
        .split("\n")
        .filter(Boolean)
        .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
    );
    expect(env.get("PATH")).toBeTruthy();
    expect(env.get("MY_AGENT_KEY")).toBe("named-key");
    expect(env.get("HANDOFF_TASK")).toBe("fix the failing test");
    // The run id, and the marker a leftover is found by: the nonce the run recorded (a run id is unique only in its runs directory).
    expect(env.get("HANDOFF_RUN_ID")).toBe(run.result.runId);
    const recorded = ["checkpoint.json", "request.json"].map(
      (name) => (JSON.parse(readFileSync(join(run.runDir, name), "utf8")) as { nonce: string }).nonce,
    );
    expect(recorded).toEqual([env.get("HANDOFF_RUN_NONCE"), env.get("HANDOFF_RUN_NONCE")]);
    expect(env.get("HANDOFF_RUN_NONCE")).toMatch(/^[0-9a-f]{16}$/);
    for (const name of ["HOME", "TMPDIR"]) {
      expect(env.get(name)).not.toBe(homedir());
      expect(env.get(name)?.startsWith(`${harness.workspacesDir}/`), `${name}=${env.get(name)}`).toBe(true);
    }
    expect(env.has("SECRET_TOKEN")).toBe(false);
    expect(text).not.toContain("sk-live-123");
  });

  test("P10: the agent runs in a session of its own, without a controlling terminal", async () => {
    const out = agentOutputDir();
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    // /proc/PID/stat after the command name: state, ppid, pgrp, session, tty_nr (0 = no controlling terminal).
    await delegateWithoutSandbox(repo, `cut -d')' -f2- /proc/$$/stat > "${out.dir}/stat"; echo $$ > "${out.dir}/pid"`, { noVerify: true });
    const [, , , sessionId, ttyNr] = readFileSync(join(out.dir, "stat"), "utf8").trim().split(" ");
    expect(sessionId).toBe(readFileSync(join(out.dir, "pid"), "utf8").trim());
    expect(ttyNr).toBe("0");
  });
});
