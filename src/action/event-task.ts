import { readFileSync } from "node:fs";
import { z } from "zod";

/**
 * Where run mode's task comes from: the `task` input when it is set (workflow_dispatch passes `${{ inputs.task }}`),
 * else an issue comment `/handoff <task>` read from the event payload itself. The workflow passes no comment text:
 * the action takes the words after `/handoff` from the payload, and only from a comment by someone with write access
 * to the repository (on a public repository anyone can comment, and a run spends the owner's agent credits).
 */
export type TaskSource =
  | { readonly kind: "task"; readonly text: string; readonly from: "input" | "comment" }
  /** Not a request to handoff: the step does nothing and succeeds. */
  | { readonly kind: "ignored"; readonly why: string }
  /** A request that cannot be run: the step fails with this line and starts no run. */
  | { readonly kind: "invalid"; readonly why: string };

/** The author associations GitHub gives people who can push to the repository. */
const TRUSTED_AUTHORS = ["OWNER", "MEMBER", "COLLABORATOR"];

const CommentEvent = z.looseObject({
  comment: z.looseObject({
    body: z.string(),
    author_association: z.string().optional(),
    user: z.looseObject({ login: z.string() }).optional(),
  }),
});

const COMMAND = /^\/handoff(?=\s|$)/;

export function taskSource(taskInput: string, env: NodeJS.ProcessEnv = process.env): TaskSource {
  if (taskInput !== "") return { kind: "task", text: taskInput, from: "input" };
  const event = env.GITHUB_EVENT_NAME ?? "";
  if (event !== "issue_comment")
    return { kind: "invalid", why: `no task: set the task input (on ${event || "this event"}), or comment /handoff <task> on an issue` };
  const path = env.GITHUB_EVENT_PATH;
  if (!path) return { kind: "invalid", why: "no task: GITHUB_EVENT_PATH is not set, so the comment cannot be read" };
  let payload: unknown;
  try {
    payload = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    return { kind: "invalid", why: `no task: the event payload ${path} cannot be read (${(error as Error).message})` };
  }
  const parsed = CommentEvent.safeParse(payload);
  if (!parsed.success) return { kind: "invalid", why: "no task: the issue_comment payload has no comment body" };
  const { body, author_association: association, user } = parsed.data.comment;
  const text = body.trimStart();
  if (!COMMAND.test(text)) return { kind: "ignored", why: "the comment does not start with /handoff" };
  if (!association || !TRUSTED_AUTHORS.includes(association))
    return {
      kind: "ignored",
      why: `the /handoff comment is by ${user?.login ?? "someone"} (${association ?? "no association"}), who cannot push to this repository`,
    };
  const task = text.replace(COMMAND, "").trim();
  if (task === "") return { kind: "invalid", why: "the comment says /handoff but gives no task: /handoff <task>" };
  return { kind: "task", text: task, from: "comment" };
}
