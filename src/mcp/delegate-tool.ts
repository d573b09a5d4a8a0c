import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult, ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { z } from "zod";
import { progressLine, progressWants } from "../cli/progress.js";
import type { EventHook } from "../run/run-recorder.js";
import { inspectSource } from "../clone/source-repo.js";
import { UsageError } from "../lib/errors.js";
import { readConfig } from "../run/config.js";
import type { RunOptions } from "../run/options.js";
import { ExternalCodingRunner } from "../run/runner.js";
import { DELEGATE_SETTINGS_SHAPE, delegateOptions } from "../settings/delegate-fields.js";
import { escapeControls } from "../vocabulary/display.js";
import type { RecordedEvent } from "../vocabulary/events.js";
import { type McpServerSettings, allowedRepo } from "./server-settings.js";
import { RunOutcome, outcomeOf } from "./run-outcome.js";
import { answering } from "./tool-errors.js";
import type { RunsInFlight } from "./runs-in-flight.js";

/** `delegate`'s input: the task, the repository, and the settings a call may set (src/settings/delegate-fields.ts). */
export const DelegateInput = z.strictObject({
  task: z.string().min(1).describe("the task for the agent, as you would write it to a colleague"),
  repo: z
    .string()
    .min(1)
    .optional()
    .describe("the repository (default: the server's; another only where the user started handoff mcp with --allow-repo)"),
  ...DELEGATE_SETTINGS_SHAPE,
});

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Registers `delegate`: one task through the four gates, the verdict back; progress notified, cancellation honoured. */
export function registerDelegate(server: McpServer, settings: McpServerSettings, runs: RunsInFlight): void {
  server.registerTool(
    "delegate",
    {
      title: "Delegate a coding task",
      description:
        "Hand a coding task to an agent CLI (Codex, Claude Code, …) in a disposable clone of the repository. handoff extracts the patch itself, checks it against its rules and runs the verify commands in a fresh checkout; the answer is its verdict (verified or why not), the patch and the run directory. Nothing is applied to the repository: apply_run stages a verified patch. Takes minutes.",
      inputSchema: DelegateInput,
      outputSchema: RunOutcome,
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
    },
    (input, extra) => answering(() => delegate(server, settings, runs, input as z.infer<typeof DelegateInput>, extra)),
  );
}

async function delegate(
  server: McpServer,
  settings: McpServerSettings,
  runs: RunsInFlight,
  input: z.infer<typeof DelegateInput>,
  extra: Extra,
): Promise<CallToolResult> {
  const { task, repo: askedRepo, ...asked } = input;
  const repo = allowedRepo(settings, askedRepo);
  const approve = approver(server, settings);
  // The repository's .handoff.json at its HEAD, as the run itself reads it: a call's lists add to its lists.
  const config = await readConfig(await inspectSource(repo));
  const options: RunOptions = {
    ...settings.runOptions,
    ...delegateOptions(asked, { commandLine: settings.commandLine, config }),
    repo,
    task,
    yes: settings.yes,
    approve,
    // The client's cancellation of this call, or the server ending: either is the run's Ctrl-C.
    signal: AbortSignal.any([extra.signal, runs.signal]),
  };
  const runner = new ExternalCodingRunner({ onEvent: progressNotifier(extra) });
  const result = await runs.track(runner.run(options));
  const outcome = outcomeOf(result);
  return { content: [{ type: "text", text: outcome.report }], structuredContent: outcome };
}

/** Who approves: `--yes` on the server's command line, else the user asked through the client (MCP elicitation). */
function approver(server: McpServer, settings: McpServerSettings): RunOptions["approve"] {
  if (settings.yes) return undefined;
  if (!server.server.getClientCapabilities()?.elicitation)
    throw new UsageError(
      "approval_required",
      "approval needed: this client cannot ask the user (no MCP elicitation); start handoff mcp with --yes to consent to every delegated task",
    );
  return async (question) => {
    const answer = await server.server.elicitInput({
      message: `handoff: ${question}`,
      requestedSchema: {
        type: "object",
        properties: { approve: { type: "boolean", title: "Let the agent edit the disposable clone" } },
        required: ["approve"],
      },
    });
    return answer.action === "accept" && answer.content?.approve === true;
  };
}

/** Each progress line (the CLI's own words) as an MCP progress notification, when the call asked for progress. */
function progressNotifier(extra: Extra): EventHook {
  const token = extra._meta?.progressToken;
  let progress = 0;
  const show = { agent: true };
  const notify = (event: RecordedEvent) => {
    if (token === undefined) return;
    const line = progressLine(event, show);
    if (line === null) return;
    progress += 1;
    // A client gone mid-run is the run's cancellation to notice, never a crash here.
    extra
      .sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, message: escapeControls(line) } })
      .catch(() => {});
  };
  return Object.assign(notify, { wants: token === undefined ? () => false : progressWants(show) });
}
