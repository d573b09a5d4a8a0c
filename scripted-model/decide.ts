import type { Conversation } from "./conversation.js";
import { findCwd } from "./conversation.js";
import type { Reply } from "./protocol.js";
import type { ModelScript } from "./script.js";
import { selectStep } from "./script.js";
import type { ToolPlan } from "./tools.js";
import { planCall, planReadBeforeWrite, planRun, planWrite } from "./tools.js";

export type Action =
  | { readonly kind: "reply"; readonly reply: Reply }
  | { readonly kind: "fail"; readonly status: number; readonly message: string }
  | { readonly kind: "hang" }
  | { readonly kind: "cut"; readonly reply: Reply };

export interface Decision {
  readonly stepIndex: number | null;
  /** The user turn the step belongs to (0 = the first, k = the script's k-th `next` entry); null for a side request. */
  readonly turn: number | null;
  /** A request without tools (title generation…): answered without consuming a step. */
  readonly side: boolean;
  /** Tool call id without protocol prefix: `<seq>_<step>`, plus READ_MARK for a read before a write. */
  readonly callId: string;
  readonly action: Action;
}

export const SIDE_TEXT = "Scripted task";

/** Marks the call id of a read the model adds before a write: its result does not advance the script. */
const READ_MARK = "_read";

/**
 * How the scripted model answers a conversation. Stateless: the turn comes from the user's text, the step index from
 * the number of tool results, not counting results of the model's own reads-before-write (script.ts `selectStep`).
 */
export function decide(script: ModelScript, conversation: Conversation, seq: number): Decision {
  if (conversation.tools.length === 0) return { stepIndex: null, turn: null, side: true, callId: `${seq}_side`, action: text(SIDE_TEXT) };
  const ids = conversation.toolResultIds;
  const userText = conversation.userTexts.join("\n");
  const { turn, index, step } = selectStep(script, ids.filter((id) => !id.endsWith(READ_MARK)).length, userText);
  // The first turn's steps keep their plain index; a later turn's are `t<turn>-<index>`, so a read of one turn is not another's.
  const label = turn === 0 ? `${index}` : `t${turn}-${index}`;
  const decision = (action: Action, callId = `${seq}_${label}`): Decision => ({ stepIndex: index, turn, side: false, callId, action });
  if ("write" in step) {
    const cwd = findCwd(conversation.texts);
    const read = ids.some((id) => id.endsWith(`_${label}${READ_MARK}`)) ? null : planReadBeforeWrite(step.write, conversation.tools, cwd);
    if (read) return decision({ kind: "reply", reply: { kind: "tool", call: read } }, `${seq}_${label}${READ_MARK}`);
    return decision(toolAction(index, "write", planWrite(step.write, conversation.tools, cwd)));
  }
  if ("run" in step) return decision(toolAction(index, "run", planRun(step.run, conversation.tools)));
  if ("call" in step) return decision(toolAction(index, "call", planCall(step.call, conversation.tools)));
  if ("say" in step) return decision(text(step.say));
  if ("fail" in step) {
    return decision({
      kind: "fail",
      status: step.fail.status,
      message: step.fail.message ?? `scripted failure (HTTP ${step.fail.status})`,
    });
  }
  if ("hang" in step) return decision({ kind: "hang" });
  return decision({ kind: "cut", reply: { kind: "text", text: "" } });
}

function text(value: string): Action {
  return { kind: "reply", reply: { kind: "text", text: value } };
}

/** A step the offered tools cannot play ends the turn with a message saying why, so the test fails readably. */
function toolAction(index: number, kind: string, plan: ToolPlan): Action {
  if (plan.ok) return { kind: "reply", reply: { kind: "tool", call: plan.call } };
  return text(`scripted model: cannot play step ${index} (${kind}): ${plan.reason}`);
}
