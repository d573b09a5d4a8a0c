import { z } from "zod";
import { HandoffConfig, BatchTask } from "../settings/file-schema.js";
import { RunResult } from "../verdict/result.js";
import { RequestJson } from "./artifacts/request.js";

/** Where the package's schemas are served from: their `$id`s, and what a `.handoff.json` names as its `$schema`. */
export const SCHEMA_BASE_URL = "https://unpkg.com/agent-handoff/schemas/";

interface SchemaSource {
  readonly schema: z.ZodType;
  /** `input` for a file the user writes (defaults may be left out), `output` for one handoff writes. */
  readonly io: "input" | "output";
  readonly title: string;
  readonly description: string;
}

/** Each file's one zod schema, the one its writer and readers share, by the name of its JSON Schema in schemas/. */
const SOURCES: Readonly<Record<string, SchemaSource>> = {
  "handoff-config.schema.json": {
    schema: HandoffConfig,
    io: "input",
    title: ".handoff.json",
    description: "A repository's handoff settings, read from its base commit (docs/gates.md). Timeouts in seconds, sizes in MiB.",
  },
  "batch-line.schema.json": {
    schema: BatchTask,
    io: "input",
    title: "handoff batch line",
    description:
      "One line of a `handoff batch` file (JSON Lines): the keys of .handoff.json, plus task, repo, id and agentCmd (docs/many-tasks.md).",
  },
  "result.schema.json": {
    schema: RunResult,
    io: "output",
    title: "handoff result.json",
    description: "A run's verdict and evidence, as handoff writes it (docs/run-directory.md). Later versions may add fields.",
  },
  "request.schema.json": {
    schema: RequestJson,
    io: "output",
    title: "handoff request.json",
    description: "A run's effective request, written when it starts (docs/run-directory.md). Later versions may add fields.",
  },
};

/**
 * The JSON Schemas (draft 2020-12) of `.handoff.json`, a batch line, `result.json` and `request.json`, generated from
 * their zod schemas: `npm run build` writes them to schemas/ (scripts/json-schemas.mjs), and the package ships them.
 */
export function jsonSchemas(): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    Object.entries(SOURCES).map(([file, source]) => {
      // A refinement has no JSON Schema form and is left out; the zod schema still checks it when handoff reads the file.
      const generated = z.toJSONSchema(source.schema, { io: source.io, target: "draft-2020-12", unrepresentable: "any" });
      const { $schema, ...rest } = generated as Record<string, unknown>;
      return [file, { $schema, $id: `${SCHEMA_BASE_URL}${file}`, title: source.title, description: source.description, ...rest }];
    }),
  );
}
