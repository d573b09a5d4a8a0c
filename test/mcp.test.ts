import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { type CallToolResult, type ClientCapabilities, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, test } from "vitest";
import { HANDOFF_BIN, runCli } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, commitFile, gitIn, makeRepo, tempDir } from "./helpers/repo.js";

const FIX = `printf 'export function add(a, b) {\\n  return a + b;\\n}\\n' > math.js; echo fixed`;
// Claims success, and makes the test pass by editing it: handoff holds the test to the base, so it fails.
const TAMPER = `printf 'console.log("ok")\\n' > test.js; printf 'export function add(a, b) {\\n  return 0;\\n}\\n' > math.js; echo "all tests pass"`;

interface Served {
  readonly client: Client;
  readonly state: string;
  readonly stderr: () => string;
}

/** `handoff mcp` started by the SDK's own client, as a client configuration starts it: its state in a temp dir. */
async function serve(repo: string, args: readonly string[], capabilities: ClientCapabilities = {}): Promise<Served> {
  const state = tempDir("handoff-mcp-state");
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [HANDOFF_BIN, "mcp", ...args],
    cwd: repo,
    stderr: "pipe",
    env: {
      ...(process.env as Record<string, string>),
      XDG_STATE_HOME: join(state, "xdg"),
      HANDOFF_WORKSPACE_DIR: join(state, "ws"),
      HANDOFF_CLI_HOME_DIR: join(state, "homes"),
    },
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const client = new Client({ name: "handoff-test", version: "1.0.0" }, { capabilities });
  await client.connect(transport);
  return { client, state, stderr: () => stderr };
}

function textOf(result: CallToolResult): string {
  return result.content.map((part) => (part.type === "text" ? part.text : "")).join("");
}

async function call(
  served: Served,
  name: string,
  args: Record<string, unknown>,
  options: Parameters<Client["callTool"]>[2] = {},
): Promise<CallToolResult> {
  return (await served.client.callTool({ name, arguments: args }, undefined, { timeout: 180_000, ...options })) as CallToolResult;
}

describe("handoff mcp: delegate from inside an agent", () => {
  test("tools/list offers delegate, list_runs, show_run and apply_run; delegate's input has no sandbox, network or test-edits setting", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const served = await serve(repo, ["--yes", "-b", "command", "--agent-cmd", FIX]);
    try {
      const { tools } = await served.client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(["apply_run", "delegate", "list_runs", "show_run"]);
      const delegate = tools.find((tool) => tool.name === "delegate")!;
      const keys = Object.keys(delegate.inputSchema.properties ?? {});
      expect(keys).toEqual(
        expect.arrayContaining([
          "task",
          "repo",
          "backend",
          "model",
          "verify",
          "setup",
          "attempts",
          "candidates",
          "deny",
          "protect",
          "allow",
          "baseline",
          "timeout",
        ]),
      );
      for (const userOnly of ["sandbox", "allowNet", "testEdits", "env", "noVerify", "agentCmd", "allowConfig", "expose", "verifyNetwork"])
        expect(keys).not.toContain(userOnly);
      expect(delegate.inputSchema.required).toEqual(["task"]);
      expect(delegate.outputSchema?.properties).toHaveProperty("terminalReason");
    } finally {
      await served.client.close();
    }
  });

  test("an honest fix comes back verified with its patch and progress on the way; handoff show and list have the run", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const served = await serve(repo, ["--yes", "-b", "command", "--agent-cmd", FIX]);
    const progress: string[] = [];
    try {
      const result = await call(
        served,
        "delegate",
        { task: "make add add", verify: ["node test.js"] },
        { onprogress: (note) => progress.push(note.message ?? "") },
      );
      expect(result.isError, textOf(result)).toBeFalsy();
      const outcome = result.structuredContent as Record<string, any>;
      expect(outcome.terminalReason).toBe("verified");
      expect(outcome.verified).toBe(true);
      expect(outcome.exitCode).toBe(0);
      expect(outcome.patch.files).toEqual([{ path: "math.js", change: "modified", additions: 1, deletions: 1 }]);
      expect(outcome.patch.diff).toContain("+  return a + b;");
      expect(existsSync(join(outcome.runDir, "result.json"))).toBe(true);
      expect(textOf(result)).toMatch(/^verdict: verified, exit 0$/m);
      expect(textOf(result)).toContain("+  return a + b;");
      expect(progress.some((line) => line.includes("verifying in a fresh checkout"))).toBe(true);
      // The source repository is untouched: delegate never applies.
      expect(readFileSync(join(repo, "math.js"), "utf8")).toContain("a - b");

      const listed = await call(served, "list_runs", {});
      expect((listed.structuredContent as { runs: { id: string }[] }).runs.map((run) => run.id)).toEqual([outcome.runId]);
      const shown = await runCli(["show", outcome.runId], { env: { XDG_STATE_HOME: join(served.state, "xdg") } });
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toContain("verified");
      const markdown = await call(served, "show_run", { runId: outcome.runId, format: "markdown" });
      expect(textOf(markdown)).toContain("math.js");

      const applied = await call(served, "apply_run", { runId: outcome.runId });
      expect(applied.isError, textOf(applied)).toBeFalsy();
      expect(readFileSync(join(repo, "math.js"), "utf8")).toContain("a + b");
      expect(gitIn(repo, "diff", "--cached", "--name-only").trim()).toBe("math.js");
    } finally {
      await served.client.close();
    }
  });

  test("a tampering agent that claims success is told the patch did not verify, and apply_run refuses it", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const served = await serve(repo, ["--yes", "-b", "command", "--agent-cmd", TAMPER]);
    try {
      const result = await call(served, "delegate", { task: "make add add", verify: ["node test.js"] });
      const outcome = result.structuredContent as Record<string, any>;
      expect(outcome.verified).toBe(false);
      expect(outcome.terminalReason).toBe("verification_failed");
      expect(textOf(result)).toMatch(/^verdict: verification_failed \(failed_held_to_base\), exit 1$/m);
      const applied = await call(served, "apply_run", { runId: outcome.runId });
      expect(applied.isError).toBe(true);
      expect(textOf(applied)).toMatch(/apply refused: .*only a verified run can be applied/);
      expect(readFileSync(join(repo, "test.js"), "utf8")).toBe(FAILING_ADD_PROJECT["test.js"]);
    } finally {
      await served.client.close();
    }
  });

  test("a call cannot widen what the user set: no sandbox switch, no other repository, no change to a fixed model or an allow list", async () => {
    const repo = await makeRepo({ ...FAILING_ADD_PROJECT, ".handoff.json": `${JSON.stringify({ allow: ["math.js"] })}\n` });
    const other = await makeRepo(FAILING_ADD_PROJECT);
    const served = await serve(repo, ["--yes", "-b", "command", "--agent-cmd", FIX, "--model", "m1"]);
    try {
      const refused = async (args: Record<string, unknown>, says: RegExp) => {
        const result = await call(served, "delegate", { task: "t", verify: ["node test.js"], ...args });
        expect(result.isError, JSON.stringify(args)).toBe(true);
        expect(textOf(result)).toMatch(says);
      };
      await refused({ sandbox: "none" }, /sandbox/);
      await refused({ allowNet: ["*"] }, /allowNet/);
      await refused({ testEdits: "allow" }, /testEdits/);
      await refused({ model: "m2" }, /'model' is fixed by the handoff mcp command line \(--model\).*\(fixed_by_user\)/);
      await refused({ allow: ["**"] }, /'allow' is already set by the user's \.handoff\.json.*\(fixed_by_user\)/);
      await refused({ backend: "claude" }, /'backend' is fixed/);
      await refused({ repo: other }, /not this server's.*--allow-repo.*\(repo_not_allowed\)/);
      const runs = await call(served, "list_runs", {});
      expect((runs.structuredContent as { runs: unknown[] }).runs).toEqual([]);
    } finally {
      await served.client.close();
    }
  });

  test("a repository inside an --allow-repo directory can be named; apply_run refuses a dirty tree unless --allow-dirty", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const parent = tempDir("handoff-mcp-allowed");
    const other = await makeRepo(FAILING_ADD_PROJECT, { dir: join(parent, "other") });
    const served = await serve(repo, ["--yes", "-b", "command", "--agent-cmd", FIX, "--allow-repo", parent]);
    try {
      const result = await call(served, "delegate", { task: "make add add", verify: ["node test.js"], repo: other });
      const outcome = result.structuredContent as Record<string, any>;
      expect(outcome.terminalReason, textOf(result)).toBe("verified");
      writeFileSync(join(other, "notes.txt"), "mine\n");
      const applied = await call(served, "apply_run", { runId: outcome.runId, repo: other });
      expect(applied.isError).toBe(true);
      expect(textOf(applied)).toMatch(/uncommitted changes \(notes\.txt\).*--allow-dirty/);
      expect(readFileSync(join(other, "math.js"), "utf8")).toContain("a - b");
    } finally {
      await served.client.close();
    }
  });

  test("cancelling the call ends the run user_cancelled with its run directory complete", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const served = await serve(repo, ["--yes", "-b", "command", "--agent-cmd", "echo started; sleep 600"]);
    try {
      const controller = new AbortController();
      const pending = call(
        served,
        "delegate",
        { task: "t", verify: ["node test.js"] },
        {
          signal: controller.signal,
          onprogress: (note) => {
            if (note.message?.includes("agent working")) setTimeout(() => controller.abort(), 500);
          },
        },
      );
      await expect(pending).rejects.toThrow();
      let runs: { id: string; status: { state: string; verdict?: string } }[] = [];
      for (let waited = 0; waited < 60_000; waited += 200) {
        runs = ((await call(served, "list_runs", {})).structuredContent as { runs: typeof runs }).runs;
        if (runs[0]?.status.state === "finished") break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(runs[0]?.status).toMatchObject({ state: "finished", verdict: "user_cancelled" });
      const shown = await call(served, "show_run", { runId: runs[0]!.id, format: "json" });
      expect(JSON.parse(textOf(shown))).toMatchObject({ terminalReason: "user_cancelled", detail: "interrupted" });
    } finally {
      await served.client.close();
    }
  });

  test("without --yes the user is asked through the client: a decline ends the run approval_declined; a client that cannot ask is told how to consent", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const asking = await serve(repo, ["-b", "command", "--agent-cmd", FIX], { elicitation: { form: {} } });
    const questions: string[] = [];
    asking.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      questions.push(request.params.message);
      return { action: "decline" };
    });
    try {
      const result = await call(asking, "delegate", { task: "make add add", verify: ["node test.js"] });
      expect(questions).toHaveLength(1);
      expect(questions[0]).toMatch(/Let command edit a disposable clone of .* at [0-9a-f]{12}\?/);
      expect(result.structuredContent).toMatchObject({ terminalReason: "user_cancelled", detail: "approval_declined", patch: null });
    } finally {
      await asking.client.close();
    }
    const mute = await serve(repo, ["-b", "command", "--agent-cmd", FIX]);
    try {
      const result = await call(mute, "delegate", { task: "make add add", verify: ["node test.js"] });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/start handoff mcp with --yes.*\(approval_required\)/);
    } finally {
      await mute.client.close();
    }
  });

  test("a client that exits mid-run leaves a complete run directory that says user_cancelled", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    commitFile(repo, "README.md", "x\n");
    const served = await serve(repo, ["--yes", "-b", "command", "--agent-cmd", "sleep 600"]);
    let runDir: string | null = null;
    const pending = call(
      served,
      "delegate",
      { task: "t", verify: ["node test.js"] },
      {
        onprogress: (note) => {
          const started = /^run (\S+):/.exec(note.message ?? "");
          if (started) runDir = join(served.state, "xdg", "handoff", "runs", started[1]!);
          if (note.message?.includes("agent working")) setTimeout(() => void served.client.close(), 300);
        },
      },
    );
    await expect(pending).rejects.toThrow();
    for (let waited = 0; waited < 60_000 && !(runDir && existsSync(join(runDir, "result.json"))); waited += 200)
      await new Promise((resolve) => setTimeout(resolve, 200));
    expect(runDir).not.toBeNull();
    const result = JSON.parse(readFileSync(join(runDir!, "result.json"), "utf8"));
    expect(result).toMatchObject({ terminalReason: "user_cancelled" });
  });
});
