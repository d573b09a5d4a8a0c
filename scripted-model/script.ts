import { z } from "zod";

/** One scripted model turn. Exactly one key per step. */
export const scriptStepSchema = z.union([
  z.strictObject({ write: z.strictObject({ path: z.string().min(1), content: z.string() }) }),
  z.strictObject({ run: z.strictObject({ command: z.string().min(1) }) }),
  z.strictObject({ say: z.string() }),
  z.strictObject({
    fail: z.strictObject({ status: z.number().int().min(400).max(599), message: z.string().optional() }),
  }),
  z.strictObject({ hang: z.literal(true) }),
  z.strictObject({ cut: z.literal(true) }),
]);

export const modelScriptSchema = z.strictObject({ steps: z.array(scriptStepSchema) });

export type ScriptStep = z.infer<typeof scriptStepSchema>;
export type ModelScript = z.infer<typeof modelScriptSchema>;
export type WriteStep = Extract<ScriptStep, { write: unknown }>["write"];
export type RunStep = Extract<ScriptStep, { run: unknown }>["run"];

/** Validates a parsed script file; the error names the offending field. */
export function parseModelScript(value: unknown): ModelScript {
  const parsed = modelScriptSchema.safeParse(value);
  if (!parsed.success) throw new Error(`invalid model script: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** Played once the script has run out, so a chatty agent still ends its turn. */
const PAST_THE_END: ScriptStep = { say: "Done." };

/**
 * The step for a request, chosen statelessly: the number of tool results already in the conversation.
 * A retried request therefore replays the same step (a failing step fails again).
 */
export function selectStep(script: ModelScript, toolResults: number): { readonly index: number; readonly step: ScriptStep } {
  return { index: toolResults, step: script.steps[toolResults] ?? PAST_THE_END };
}
