import { z } from "zod";

/** One scripted model turn. Exactly one key per step. */
export const scriptStepSchema = z.union([
  z.strictObject({ write: z.strictObject({ path: z.string().min(1), content: z.string() }) }),
  z.strictObject({ run: z.strictObject({ command: z.string().min(1) }) }),
  z.strictObject({ say: z.string() }),
  // Any offered tool by its exact name (an MCP server's `mcp__handoff__delegate`), with these arguments.
  z.strictObject({ call: z.strictObject({ tool: z.string().min(1), arguments: z.record(z.string(), z.unknown()) }) }),
  z.strictObject({
    fail: z.strictObject({ status: z.number().int().min(400).max(599), message: z.string().optional() }),
  }),
  z.strictObject({ hang: z.literal(true) }),
  z.strictObject({ cut: z.literal(true) }),
]);

/** A later user turn of the same session (a resumed turn): played once `when` occurs in the user's side of the conversation. */
export const laterTurnSchema = z.strictObject({ when: z.string().min(1), steps: z.array(scriptStepSchema) });

export const modelScriptSchema = z.strictObject({ steps: z.array(scriptStepSchema), next: z.array(laterTurnSchema).optional() });

export type ScriptStep = z.infer<typeof scriptStepSchema>;
export type ModelScript = z.infer<typeof modelScriptSchema>;
export type WriteStep = Extract<ScriptStep, { write: unknown }>["write"];
export type RunStep = Extract<ScriptStep, { run: unknown }>["run"];
export type CallStep = Extract<ScriptStep, { call: unknown }>["call"];

/** Validates a parsed script file; the error names the offending field. */
export function parseModelScript(value: unknown): ModelScript {
  const parsed = modelScriptSchema.safeParse(value);
  if (!parsed.success) throw new Error(`invalid model script: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** Played once the script has run out, so a chatty agent still ends its turn. */
const PAST_THE_END: ScriptStep = { say: "Done." };

/** The step a request plays: its user turn (0 = `steps`, k = the k-th `next` entry) and its index within that turn. */
export interface SelectedStep {
  readonly turn: number;
  readonly index: number;
  readonly step: ScriptStep;
}

/**
 * The step for a request, chosen statelessly. The turn is the last `next` entry whose `when` occurs in the user's
 * text (else the first turn); the index is the number of tool results already in the conversation minus the tool
 * steps (write, run) of the earlier turns, whose results the resumed conversation carries. A retried request
 * therefore replays the same step (a failing step fails again).
 */
export function selectStep(script: ModelScript, toolResults: number, userText: string): SelectedStep {
  const later = script.next ?? [];
  let turn = 0;
  later.forEach((entry, k) => {
    if (userText.includes(entry.when)) turn = k + 1;
  });
  const turns = [script.steps, ...later.map((entry) => entry.steps)];
  const earlier = turns.slice(0, turn).reduce((sum, steps) => sum + steps.filter(isToolStep).length, 0);
  const index = Math.max(0, toolResults - earlier);
  return { turn, index, step: turns[turn]?.[index] ?? PAST_THE_END };
}

/** A step the agent answers with a tool result. */
function isToolStep(step: ScriptStep): boolean {
  return "write" in step || "run" in step || "call" in step;
}
