import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { VERSION } from "../cli/command-names.js";
import { onInterrupt } from "../cli/interrupts.js";
import { registerDelegate } from "./delegate-tool.js";
import { registerRunTools } from "./run-tools.js";
import type { McpServerSettings } from "./server-settings.js";
import { RunsInFlight } from "./runs-in-flight.js";

/** handoff as an MCP server: `delegate`, `list_runs`, `show_run` and `apply_run`, within the user's settings. */
export function handoffMcpServer(settings: McpServerSettings, runs = new RunsInFlight()): McpServer {
  const server = new McpServer(
    { name: "handoff", version: VERSION },
    {
      instructions:
        "handoff delegates a coding task to another agent CLI in a disposable clone and answers with its own verdict: verified only when handoff's verification passed on the patch it extracted. Call delegate with the task and a verify command (the repository's tests); trust the verdict, not the agent's claims; apply_run stages a verified patch.",
    },
  );
  registerDelegate(server, settings, runs);
  registerRunTools(server, settings);
  return server;
}

/**
 * Serves on stdin/stdout until the client closes stdin or the server is interrupted; either way the runs under way end
 * `user_cancelled` with their run directories complete before this resolves. Nothing else may write to stdout.
 */
export async function serveOnStdio(settings: McpServerSettings): Promise<void> {
  const runs = new RunsInFlight();
  const server = handoffMcpServer(settings, runs);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
  });
  // The SDK's transport does not notice the end of stdin: a client that exits is a close.
  process.stdin.once("end", () => void transport.close());
  const stopHandling = onInterrupt(() => {
    process.stderr.write("handoff mcp: interrupted; cancelling the runs under way and writing their run directories\n");
    void transport.close();
  });
  try {
    await server.connect(transport);
    process.stderr.write(
      `handoff mcp: serving ${settings.repo} on stdio${settings.yes ? " (--yes: every delegated task is approved)" : ""}\n`,
    );
    await closed;
    await runs.endAll();
  } finally {
    stopHandling();
  }
}
