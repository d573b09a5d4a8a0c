import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { parseModelScript } from "./script.js";
import { startScriptedModel } from "./server.js";

/** `node dist/scripted-model/cli.js --script FILE.json [--port N]`: serves the script until SIGTERM/SIGINT. */

const USAGE = "usage: scripted-model --script FILE.json [--port N]";

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  let values: { script?: string | undefined; port?: string | undefined };
  try {
    ({ values } = parseArgs({ options: { script: { type: "string" }, port: { type: "string" } }, strict: true }));
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  if (!values.script) fail("--script is required");
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port must be a port number, got ${values.port}`);

  let script: ReturnType<typeof parseModelScript>;
  try {
    script = parseModelScript(JSON.parse(readFileSync(values.script, "utf8")));
  } catch (error) {
    fail(`${values.script}: ${error instanceof Error ? error.message : String(error)}`);
  }

  const model = await startScriptedModel({ script, port });
  process.stdout.write(`scripted model listening on ${model.url}\n`);
  const stop = () => {
    void model.close().then(() => process.exit(0));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

await main();
