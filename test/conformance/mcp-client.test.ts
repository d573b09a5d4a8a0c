import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { startScriptedModel } from "../../scripted-model/index.js";
import { HANDOFF_BIN, runCli } from "../helpers/cli.js";
import { bareCliEnv, conformanceEnabled, runCliDirectly } from "../helpers/conformance.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "../helpers/repo.js";
import { CLAUDE_TEST_KEY, claudeUserSettings } from "../../scripted-model/users/claude.js";

const FIX = `printf 'export function add(a, b) {\\n  return a + b;\\n}\\n' > math.js`;
const WRONG = `printf 'export function add(a, b) {\\n  return a * 3;\\n}\\n' > math.js; echo "fixed, all tests pass"`;

/** What Claude Code's stream-json says a tool returned: the `tool_result` blocks of its user messages, as text. */
function toolResults(stdout: string): string[] {
  const results: string[] = [];
  // Claude writes one JSON object a line; lines split on \n only.
  for (const line of stdout.split("\n")) {
    if (line.trim() === "") continue;
    let event: { type?: string; message?: { content?: unknown } };
    try {
      event = JSON.parse(line);
    } catch {
      continue;
    }
    if (event.type !== "user" || !Array.isArray(event.message?.content)) continue;
    for (const block of event.message.content as { type?: string; content?: unknown }[]) {
      if (block.type !== "tool_result") continue;
      results.push(typeof block.content === "string" ? block.content : JSON.stringify(block.content));
    }
  }
  return results;
}

/**
 * The real Claude Code CLI, as a user has it: handoff's MCP server added with one entry in its MCP configuration, the
 * scripted model playing the user's request "ask handoff to fix add() and tell me if it verified" by calling
 * `mcp__handoff__delegate`. The delegated task runs through all four gates with the command backend as the agent.
 */
async function askClaudeToDelegate(agentCmd: string): Promise<{ results: string[]; state: string; stderr: string; modelRequests: number }> {
  const repo = await makeRepo(FAILING_ADD_PROJECT);
  const state = tempDir("handoff-mcp-client-state");
  const model = await startScriptedModel({
    script: {
      steps: [
        {
          call: {
            tool: "mcp__handoff__delegate",
            arguments: { task: "Fix add() in math.js: add(2, 2) must be 4", verify: ["node test.js"] },
          },
        },
        { say: "handoff answered." },
      ],
    },
  });
  try {
    const env = bareCliEnv();
    mkdirSync(join(env.HOME!, ".claude"), { recursive: true });
    writeFileSync(join(env.HOME!, ".claude", "settings.json"), claudeUserSettings());
    const server = {
      command: process.execPath,
      args: [HANDOFF_BIN, "mcp", "--yes", "-b", "command", "--agent-cmd", agentCmd],
      env: { XDG_STATE_HOME: join(state, "xdg"), HANDOFF_WORKSPACE_DIR: join(state, "ws"), HANDOFF_CLI_HOME_DIR: join(state, "homes") },
    };
    const config = join(state, "mcp.json");
    writeFileSync(config, `${JSON.stringify({ mcpServers: { handoff: server } }, null, 2)}\n`);
    const run = await runCliDirectly(
      "claude",
      [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--mcp-config",
        config,
        "--strict-mcp-config",
        "--allowedTools",
        "mcp__handoff__delegate",
      ],
      {
        env: { ...env, ANTHROPIC_API_KEY: CLAUDE_TEST_KEY, ANTHROPIC_BASE_URL: model.url, DISABLE_AUTOUPDATER: "1" },
        cwd: repo,
        stdin: "Ask handoff to fix add() and tell me if it verified.",
        timeoutMs: 180_000,
      },
    );
    expect(run.code, run.stderr).toBe(0);
    return { results: toolResults(run.stdout), state, stderr: run.stderr, modelRequests: model.requests.length };
  } finally {
    await model.close();
  }
}

describe.runIf(conformanceEnabled("claude"))("Claude Code (real CLI) delegating through handoff mcp", () => {
  test("calls delegate and receives handoff's verdict: verified, with the patch; handoff show has the run", async () => {
    const { results, state } = await askClaudeToDelegate(FIX);
    expect(results).toHaveLength(1);
    const outcome = JSON.parse(results[0]!);
    expect(outcome).toMatchObject({ terminalReason: "verified", verified: true, exitCode: 0 });
    expect(outcome.patch.files).toEqual([{ path: "math.js", change: "modified", additions: 1, deletions: 1 }]);
    expect(outcome.patch.diff).toContain("+  return a + b;");
    const shown = await runCli(["show", outcome.runId], { env: { XDG_STATE_HOME: join(state, "xdg") } });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^verdict: verified, exit 0$/m);
  });

  test("a delegated patch that fails verification comes back not verified, whatever the agent claimed", async () => {
    const { results } = await askClaudeToDelegate(WRONG);
    expect(results).toHaveLength(1);
    const outcome = JSON.parse(results[0]!);
    expect(outcome).toMatchObject({ terminalReason: "verification_failed", verified: false, exitCode: 1 });
    expect(outcome.report).toMatch(/^verdict: verification_failed \(command_failed\), exit 1$/m);
    expect(outcome.summary).not.toMatch(/all tests pass/);
  });
});
