import * as core from "@actions/core";
import { z } from "zod";
import { assertNever } from "../lib/assert-never.js";

/**
 * The action's inputs, read in one place: @actions/core's getInput (the runner's `INPUT_<NAME>` variables, each
 * input of action.yml set, an empty string when absent), checked with zod. The defaults here are action.yml's, for a
 * runner that leaves an input unset.
 */

/** How an input becomes `handoff run` arguments: a value once, a newline-separated list (one flag each), a switch. */
type OptionKind = "value" | "list" | "switch";

/** The inputs that are `handoff run` options, in the order they are passed; the CLI judges their values. */
export const RUN_OPTION_INPUTS = [
  { input: "backend", flag: "--backend", kind: "value" },
  { input: "model", flag: "--model", kind: "value" },
  { input: "agent-cmd", flag: "--agent-cmd", kind: "value" },
  { input: "verify", flag: "--verify", kind: "list" },
  { input: "no-verify", flag: "--no-verify", kind: "switch" },
  { input: "setup", flag: "--setup", kind: "list" },
  { input: "attempts", flag: "--attempts", kind: "value" },
  { input: "test-edits", flag: "--test-edits", kind: "value" },
  { input: "allow", flag: "--allow", kind: "list" },
  { input: "deny", flag: "--deny", kind: "list" },
  { input: "protect", flag: "--protect", kind: "list" },
  { input: "allow-config", flag: "--allow-config", kind: "list" },
  { input: "expose", flag: "--expose", kind: "list" },
  { input: "junit", flag: "--junit", kind: "list" },
  { input: "baseline", flag: "--baseline", kind: "switch" },
  { input: "env", flag: "--env", kind: "list" },
  { input: "sandbox", flag: "--sandbox", kind: "value" },
  { input: "timeout", flag: "--timeout", kind: "value" },
  { input: "total-timeout", flag: "--total-timeout", kind: "value" },
  { input: "verify-timeout", flag: "--verify-timeout", kind: "value" },
  { input: "max-files", flag: "--max-files", kind: "value" },
  { input: "max-patch-size", flag: "--max-patch-size", kind: "value" },
] as const satisfies readonly { input: string; flag: string; kind: OptionKind }[];

export type RunOptionInput = (typeof RUN_OPTION_INPUTS)[number]["input"];

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
        assertNever(option);
    }
  }
  return { ok: true, inputs: { mode, task: read("task").trim(), artifactName: name, cliArgs } };
}
