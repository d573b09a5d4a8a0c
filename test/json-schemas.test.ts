import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, test } from "vitest";
import { jsonSchemas } from "../src/run-dir/json-schemas.js";
import { BatchTask, HandoffConfig } from "../src/settings/file-schema.js";
import { SETTINGS } from "../src/settings/settings.js";
import { FAILING_ADD_PROJECT, makeRepo } from "./helpers/repo.js";
import { agent, delegate } from "./helpers/run.js";

const SCHEMAS = jsonSchemas();
const ajv = new Ajv2020({ strict: true, allErrors: true });
const validator = (file: string) => ajv.compile(SCHEMAS[file]!);
const config = validator("handoff-config.schema.json");
const batchLine = validator("batch-line.schema.json");
const result = validator("result.schema.json");
const request = validator("request.schema.json");

/** A valid value of each way a `.handoff.json` key is written (src/settings/file-schema.ts). */
const SAMPLE = { text: "npm test", texts: ["npm test"], boolean: true, number: 2, positive: 1.5, count: 3, mebibytes: 8 } as const;
const fileRows = SETTINGS.filter((row) => "file" in row);
const everyKey = Object.fromEntries(
  fileRows.filter((row) => !("lineOnly" in row.file)).map((row) => [row.file.key, SAMPLE[row.file.schema]]),
);

/** The `.handoff.json` examples in docs/gates.md, as a user would copy them. */
const documented = [
  ...read("docs/gates.md")
    .split("## The `.handoff.json` config file")[1]!
    .split("\n## ")[0]!
    .matchAll(/```json\n([\s\S]*?)```/g),
].map((block) => JSON.parse(block[1]!));

/** The batch lines of docs/many-tasks.md's example. */
const documentedLines = /```jsonl\n([\s\S]*?)```/
  .exec(read("docs/many-tasks.md"))![1]!
  .trim()
  .split("\n")
  .map((line) => JSON.parse(line));

function read(path: string): string {
  return readFileSync(join(import.meta.dirname, "..", path), "utf8");
}

describe("the JSON Schemas, generated from the zod schemas handoff reads and writes the files with", () => {
  test("each is draft 2020-12 with an $id, a title and a description, and compiles in strict mode", () => {
    expect(Object.keys(SCHEMAS).sort()).toEqual([
      "batch-line.schema.json",
      "handoff-config.schema.json",
      "request.schema.json",
      "result.schema.json",
    ]);
    for (const [file, schema] of Object.entries(SCHEMAS)) {
      expect(schema.$schema, file).toBe("https://json-schema.org/draft/2020-12/schema");
      expect(schema.$id, file).toBe(`https://unpkg.com/agent-handoff/schemas/${file}`);
      expect(schema.title, file).toEqual(expect.any(String));
      expect(schema.description, file).toEqual(expect.any(String));
    }
  });

  test(".handoff.json: the docs' example, every key, a `$schema` and the test suite's configs validate, each also read by handoff", () => {
    expect(documented.length).toBeGreaterThan(1);
    const configs = [
      ...documented,
      everyKey,
      { $schema: "https://unpkg.com/agent-handoff/schemas/handoff-config.schema.json", verify: ["npm test"] },
      { verify: ["npm test"] },
      { maxFileSize: 1, maxFiles: 5 },
      { setupTimeout: 1 },
      { allow: ["math.js"] },
      { verify: ["npm test"], testEdits: "reject" },
      { verify: ["npm test"], junit: ["from-config.xml"] },
      {},
    ];
    for (const each of configs) {
      expect(config(each), JSON.stringify(config.errors)).toBe(true);
      expect(HandoffConfig.safeParse(each).success, JSON.stringify(each)).toBe(true);
    }
  });

  test(".handoff.json: a misspelt key, a key the file may not set, a wrong type or a size out of range is rejected, as handoff rejects it", () => {
    const bad = [
      { verfy: ["npm test"] },
      { verify: ["npm test"], noVerify: true },
      { verify: ["npm test"], holdoutPatches: ["/tmp/x.patch"] },
      { agentCmd: "./agent.sh" },
      { timeout: "900" },
      { timeout: 0 },
      { verify: "npm test" },
      { verify: [""] },
      { maxFileSize: 2048 },
      { maxFiles: 1.5 },
      { keepSession: "yes" },
      [],
    ];
    for (const each of bad) {
      expect(config(each), JSON.stringify(each)).toBe(false);
      expect(HandoffConfig.safeParse(each).success, JSON.stringify(each)).toBe(false);
    }
  });

  test("a batch line: the docs' and the README's lines and every key validate; a line without a task, with a misspelt key or a bad id does not", () => {
    expect(documentedLines.length).toBeGreaterThan(1);
    const good = [
      ...documentedLines,
      {
        id: "fix",
        repo: "/tmp/demo",
        task: "make add() return the sum",
        backend: "command",
        agentCmd: "./fixes-add.sh",
        verify: ["npm test"],
      },
      { task: "make add() return the sum" },
      { ...everyKey, task: "t", id: "task-1.a_b", repo: ".", agentCmd: "sh agent.sh" },
    ];
    for (const each of good) {
      expect(batchLine(each), JSON.stringify(batchLine.errors)).toBe(true);
      expect(BatchTask.safeParse(each).success).toBe(true);
    }
    const bad = [
      { verify: ["npm test"] },
      { task: "" },
      { task: "t", verfy: ["npm test"] },
      { task: "t", id: "../up" },
      { task: "t", id: "." },
    ];
    for (const each of bad) {
      expect(batchLine(each), JSON.stringify(each)).toBe(false);
      expect(BatchTask.safeParse(each).success, JSON.stringify(each)).toBe(false);
    }
  });

  test("result.json and request.json of real runs, verified and failed, validate; a result.json with a wrong type does not", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    for (const fixture of ["fixes-add.sh", "breaks-add.sh"]) {
      const { runDir } = await delegate(repo, agent(fixture), { verify: ["npm test"], sandbox: "none" });
      const written = JSON.parse(readFileSync(join(runDir, "result.json"), "utf8"));
      expect(result(written), JSON.stringify(result.errors)).toBe(true);
      const asked = JSON.parse(readFileSync(join(runDir, "request.json"), "utf8"));
      expect(request(asked), JSON.stringify(request.errors)).toBe(true);
      expect(result({ ...written, terminalReason: 3 })).toBe(false);
      expect(request({ ...asked, repo: "/tmp/x" })).toBe(false);
      // Loose, as handoff reads them: a field a later version adds is read through.
      expect(result({ ...written, addedLater: true })).toBe(true);
    }
  });
});
