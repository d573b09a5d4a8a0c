import * as core from "@actions/core";
import { z } from "zod";
import { assertNever } from "../lib/assert-never.js";
import { RUN_OPTION_INPUTS } from "../settings/action-inputs.js";

/**
 * The action's inputs, read in one place: @actions/core's getInput (the runner's `INPUT_<NAME>` variables, each
 * input of action.yml set, an empty string when absent), checked with zod. The defaults here are action.yml's, for a
 * runner that leaves an input unset.
 */

export interface RunInputs {
  readonly mode: "run";
  /** The task input; empty when the task is to come from the event (an `/handoff` comment). */
  readonly task: string;
  readonly artifactName: string;
  /** `handoff run` arguments from the option inputs, in RUN_OPTION_INPUTS order. */
  readonly cliArgs: readonly string[];
}

export interface PublishInputs {
  readonly mode: "publish";
  readonly artifactName: string;
  readonly branch: string | undefined;
  readonly base: string | undefined;
  readonly remote: string;
  readonly githubToken: string;
}

export type ActionInputs = RunInputs | PublishInputs;

export type InputsRead = { readonly ok: true; readonly inputs: ActionInputs } | { readonly ok: false; readonly message: string };

const YAML_TRUE = ["true", "True", "TRUE"];
const YAML_FALSE = ["false", "False", "FALSE", ""];

const optional = z
  .string()
  .transform((value) => value.trim())
  .transform((value) => (value === "" ? undefined : value));

const switchInput = z.string().refine((value) => YAML_TRUE.includes(value.trim()) || YAML_FALSE.includes(value.trim()), {
  message: "must be true or false",
});

/** A multi-line input: one entry per non-empty line, each trimmed. */
function listEntries(value: string): string[] {
  return value
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "");
}

/** An artifact name the artifact service takes (no path separators or the characters it refuses). */
const artifactName = z
  .string()
  .transform((value) => value.trim() || "handoff-run")
  .refine((value) => !/["':<>|*?\\/\r\n]/.test(value), { message: 'must not contain " : < > | * ? \\ / or a line break' });

const common = z.object({ mode: z.string().transform((value) => value.trim() || "run"), "artifact-name": artifactName });

const publishSchema = z.object({
  branch: optional,
  base: optional,
  remote: z.string().transform((value) => value.trim() || "origin"),
  "github-token": z.string().trim().min(1, { message: "is empty: give the job's token (the default is github.token)" }),
});

function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  return issue ? `input '${issue.path.join(".")}' ${issue.message}` : "invalid inputs";
}

/** Every input the action has, read through `read` (core.getInput in the action, a map in a test). */
export function readInputs(read: (name: string) => string = (name) => core.getInput(name)): InputsRead {
  const base = common.safeParse({ mode: read("mode"), "artifact-name": read("artifact-name") });
  if (!base.success) return { ok: false, message: firstIssue(base.error) };
  const mode = base.data.mode;
  const name = base.data["artifact-name"];
  if (mode === "publish") {
    const parsed = publishSchema.safeParse({
      branch: read("branch"),
      base: read("base"),
      remote: read("remote"),
      "github-token": read("github-token"),
    });
    if (!parsed.success) return { ok: false, message: firstIssue(parsed.error) };
    const p = parsed.data;
    return {
      ok: true,
      inputs: { mode, artifactName: name, branch: p.branch, base: p.base, remote: p.remote, githubToken: p["github-token"] },
    };
  }
  if (mode !== "run") return { ok: false, message: `input 'mode' is '${mode}': it must be run or publish` };
  const cliArgs: string[] = [];
  for (const option of RUN_OPTION_INPUTS) {
    const raw = read(option.input);
    switch (option.kind) {
      case "value": {
        const value = raw.trim();
        if (value !== "") cliArgs.push(option.flag, value);
        break;
      }
      case "list":
        for (const entry of listEntries(raw)) cliArgs.push(option.flag, entry);
        break;
      case "switch": {
        const parsed = switchInput.safeParse(raw);
        if (!parsed.success) return { ok: false, message: `input '${option.input}' is '${raw.trim()}': it must be true or false` };
        if (YAML_TRUE.includes(raw.trim())) cliArgs.push(option.flag);
        break;
      }
      default:
        assertNever(option.kind);
    }
  }
  return { ok: true, inputs: { mode, task: read("task").trim(), artifactName: name, cliArgs } };
}
