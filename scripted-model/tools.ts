import { existsSync, readFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { isRecord } from "./conversation.js";
import type { CallStep, RunStep, WriteStep } from "./script.js";

/** A tool the request offers: a JSON-schema function, or a freeform (grammar) tool like Codex's apply_patch. */
export interface OfferedTool {
  readonly name: string;
  readonly kind: "function" | "custom";
  /** The JSON schema of the arguments (function tools), or null. */
  readonly parameters: unknown;
}

export type ToolCall =
  | { readonly kind: "function"; readonly name: string; readonly arguments: Record<string, unknown> }
  | { readonly kind: "custom"; readonly name: string; readonly input: string };

export type ToolPlan = { readonly ok: true; readonly call: ToolCall } | { readonly ok: false; readonly reason: string };

// omp over anthropic-messages prefixes its tool names with "_" (`_write`, `_bash`); Gemini's are `write_file`, `run_shell_command`.
const WRITE_TOOL = /^_?write(_file)?$/i;
const READ_TOOL = /^_?read$/i;
const RUN_TOOL = /^_?(bash|exec_command|shell|run_shell_command)$/i;
const PATH_KEYS = ["file_path", "filePath", "path"] as const;

/**
 * Calls the write tool, or Codex's apply_patch when there is none. With a known cwd the path is made
 * absolute (Claude's Write rejects relative paths); apply_patch always gets the relative path.
 */
export function planWrite(step: WriteStep, tools: readonly OfferedTool[], cwd: string | null): ToolPlan {
  const write = tools.find((tool) => WRITE_TOOL.test(tool.name));
  if (write) {
    const properties = propertiesOf(write.parameters);
    const pathKey = properties ? PATH_KEYS.find((key) => key in properties) : "path";
    if (!pathKey) return { ok: false, reason: `tool ${write.name} has none of ${PATH_KEYS.join(", ")}` };
    return functionCall(write, { [pathKey]: absolute(step.path, cwd), content: step.content });
  }
  const applyPatch = tools.find((tool) => tool.name === "apply_patch");
  if (applyPatch) {
    const patch = buildPatch(step.path, step.content, existingContent(step.path, cwd));
    if (applyPatch.kind === "custom") return { ok: true, call: { kind: "custom", name: applyPatch.name, input: patch } };
    const key = Object.keys(propertiesOf(applyPatch.parameters) ?? {})[0] ?? "input";
    return functionCall(applyPatch, { [key]: patch });
  }
  // GitHub Copilot CLI has no write tool: `create` refuses an existing file, `edit` replaces one exact string.
  const create = tools.find((tool) => tool.name === "create");
  const edit = tools.find((tool) => tool.name === "edit");
  if (create && edit) {
    const existing = existingContent(step.path, cwd);
    const path = absolute(step.path, cwd);
    return existing
      ? functionCall(edit, { path, old_str: existing, new_str: step.content })
      : functionCall(create, { path, file_text: step.content });
  }
  return { ok: false, reason: "no write, apply_patch or create/edit tool is offered" };
}

/**
 * A read of the file a write step is about to replace, or null when none is needed: Claude's Write refuses to
 * overwrite a file it has not read in this session. Only for existing files under a known cwd, and not before
 * apply_patch (Codex has no read tool and needs none).
 */
export function planReadBeforeWrite(step: WriteStep, tools: readonly OfferedTool[], cwd: string | null): ToolCall | null {
  if (!tools.some((tool) => WRITE_TOOL.test(tool.name))) return null;
  const read = tools.find((tool) => READ_TOOL.test(tool.name));
  if (!read || existingContent(step.path, cwd) === null) return null;
  const properties = propertiesOf(read.parameters);
  const pathKey = properties ? PATH_KEYS.find((key) => key in properties) : "path";
  if (!pathKey) return null;
  const plan = functionCall(read, { [pathKey]: absolute(step.path, cwd) });
  return plan.ok ? plan.call : null;
}

/** Calls the shell tool with the command under `command` or `cmd`, whichever its schema has. */
export function planRun(step: RunStep, tools: readonly OfferedTool[]): ToolPlan {
  const shell = tools.find((tool) => RUN_TOOL.test(tool.name));
  if (!shell) return { ok: false, reason: "no bash, exec_command or shell tool is offered" };
  const properties = propertiesOf(shell.parameters) ?? {};
  const key = "cmd" in properties && !("command" in properties) ? "cmd" : "command";
  // Codex's legacy `shell` tool takes argv, not a command line.
  const value = schemaType(properties[key]) === "array" ? ["bash", "-lc", step.command] : step.command;
  return functionCall(shell, { [key]: value });
}

/** Calls the offered tool of exactly that name with the step's arguments. */
export function planCall(step: CallStep, tools: readonly OfferedTool[]): ToolPlan {
  const tool = tools.find((offered) => offered.name === step.tool);
  if (!tool)
    return { ok: false, reason: `no tool named ${step.tool} is offered (offered: ${tools.map((offered) => offered.name).join(", ")})` };
  return functionCall(tool, step.arguments);
}

/**
 * An apply_patch body that leaves `path` holding exactly `content` (plus a final newline: apply_patch always
 * ends files with one). A new file is an `Add File`. An existing file is an `Update File` replacing all of its
 * lines, so Codex reports the change as an update, as for a real model. Checked against codex 0.171: a
 * `Delete File` plus `Add File` of one path is rejected ("multiple operations target …"), while `Add File` on an
 * existing file overwrites it; that is the fallback for content an exact line match could miss (CR, empty).
 */
export function buildPatch(path: string, content: string, existing: string | null): string {
  const added = linesOf(content)
    .map((line) => `+${line}\n`)
    .join("");
  if (existing === null || existing === "" || existing.includes("\r")) {
    return `*** Begin Patch\n*** Add File: ${path}\n${added}*** End Patch\n`;
  }
  const removed = linesOf(existing)
    .map((line) => `-${line}\n`)
    .join("");
  return `*** Begin Patch\n*** Update File: ${path}\n@@\n${removed}${added}*** End Patch\n`;
}

function linesOf(text: string): string[] {
  if (text === "") return [];
  return (text.endsWith("\n") ? text.slice(0, -1) : text).split("\n");
}

/** `path` under the agent's cwd when known; otherwise as the script gave it. */
function absolute(path: string, cwd: string | null): string {
  return cwd && !isAbsolute(path) ? join(cwd, path) : path;
}

/** The file's current content, or null if it does not exist or its location is unknown (no cwd). */
function existingContent(path: string, cwd: string | null): string | null {
  const full = absolute(path, cwd);
  if (!isAbsolute(full) || !existsSync(full)) return null;
  try {
    return readFileSync(full, "utf8");
  } catch {
    return null;
  }
}

/** A call with the given arguments plus a placeholder for every other required property (omp's write wants `i`). */
function functionCall(tool: OfferedTool, args: Record<string, unknown>): ToolPlan {
  const properties = propertiesOf(tool.parameters) ?? {};
  const required = isRecord(tool.parameters) && Array.isArray(tool.parameters.required) ? tool.parameters.required : [];
  const full: Record<string, unknown> = { ...args };
  for (const key of required) {
    if (typeof key !== "string" || key in full) continue;
    const placeholder = placeholderFor(properties[key]);
    if (placeholder !== undefined) full[key] = placeholder;
  }
  if (tool.kind === "custom") return { ok: true, call: { kind: "custom", name: tool.name, input: JSON.stringify(full) } };
  return { ok: true, call: { kind: "function", name: tool.name, arguments: full } };
}

function placeholderFor(schema: unknown): unknown {
  if (isRecord(schema) && "default" in schema) return schema.default;
  switch (schemaType(schema)) {
    case "string":
      return "scripted step";
    case "boolean":
      return false;
    case "array":
      return [];
    case "object":
      return {};
    default:
      return undefined; // a required number has no safe guess (a timeout of 0?); leave it out
  }
}

function propertiesOf(schema: unknown): Record<string, unknown> | null {
  return isRecord(schema) && isRecord(schema.properties) ? schema.properties : null;
}

function schemaType(schema: unknown): string | null {
  if (!isRecord(schema)) return null;
  if (typeof schema.type === "string") return schema.type;
  // ["string", "null"] style
  if (Array.isArray(schema.type)) return schema.type.find((type): type is string => typeof type === "string" && type !== "null") ?? null;
  return null;
}
