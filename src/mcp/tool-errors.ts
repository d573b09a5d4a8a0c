import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ApplyRefusedError, UsageError } from "../lib/errors.js";
import { FLAG_NAMES } from "../settings/setting-names.js";

/**
 * A refused call as the tool's error answer: the CLI's one line (settings named by the flags the server was started
 * with), with its code, so the calling agent can read why.
 */
export function usageErrorResult(error: UsageError | ApplyRefusedError): CallToolResult {
  const text = error instanceof ApplyRefusedError ? `apply refused: ${error.message}` : error.saying(FLAG_NAMES);
  return { isError: true, content: [{ type: "text", text: `handoff: ${text} (${error.code})` }] };
}

/** Runs a tool's work; a usage error or a refusal becomes its error answer, anything else stays a failure of the server. */
export async function answering(work: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof UsageError || error instanceof ApplyRefusedError) return usageErrorResult(error);
    throw error;
  }
}
