// `npm run build`, after tsc: writes the JSON Schemas of .handoff.json, a batch line, result.json and request.json to
// schemas/, generated from the built zod schemas (src/run-dir/json-schemas.ts). The package ships them.
import { mkdirSync, writeFileSync } from "node:fs";
import { jsonSchemas } from "../dist/src/run-dir/json-schemas.js";

const dir = new URL("../schemas/", import.meta.url);
mkdirSync(dir, { recursive: true });
for (const [file, schema] of Object.entries(jsonSchemas())) writeFileSync(new URL(file, dir), `${JSON.stringify(schema, null, 2)}\n`);
