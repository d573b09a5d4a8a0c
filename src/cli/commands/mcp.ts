import { UsageError } from "../../lib/errors.js";
import { serveOnStdio } from "../../mcp/server.js";
import { serverSettings } from "../../mcp/server-settings.js";
import { MCP_OPTIONS } from "../option-tables.js";
import { parseOptions } from "../parse-options.js";

/** `handoff mcp`: handoff as an MCP server on stdio (docs/mcp.md), until the client closes it; 0 then. */
export async function command(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseOptions("mcp", args, MCP_OPTIONS);
  if (positionals.length > 0)
    throw new UsageError(
      "bad_arguments",
      "usage: handoff mcp [run options] [--allow-repo DIR]: the tasks come from the client's tool calls",
    );
  await serveOnStdio(serverSettings(values, process.cwd()));
  return 0;
}
