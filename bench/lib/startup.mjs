// Start-up: `handoff --version`, `handoff --help` and `handoff list` against `node -e 0`, the floor any Node CLI
// pays, in the same bench run (interleaved rounds). Each command loads only its own module (src/cli/commands/).
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { run } from "./git.mjs";
import { interleave } from "./harness.mjs";

/** `handoff --version` may take at most this many times `node -e 0` (issue 28); the others are reported. */
export const VERSION_TARGET = 1.5;

export async function benchStartup({ root, workDir, rounds, log }) {
  const bin = join(root, "bin/handoff.js");
  if (!existsSync(join(root, "dist/src/cli/cli.js"))) throw new Error(`${root}/dist/src/cli/cli.js is missing: run npm run build first`);
  mkdirSync(workDir, { recursive: true });
  // An empty runs directory outside any repository: `list` reads the index, not a history of runs.
  const env = { ...process.env, XDG_STATE_HOME: join(workDir, "state") };
  const node = (args) => () => run(process.execPath, args, { env, cwd: workDir });
  const commands = { version: ["--version"], help: ["--help"], list: ["list", "--all"] };
  log(
    `start-up: handoff ${Object.values(commands)
      .map((args) => args.join(" "))
      .join(", ")} against node -e 0; ${rounds} rounds`,
  );
  const measured = await interleave(
    [{ name: "node", run: node(["-e", "0"]) }, ...Object.entries(commands).map(([name, args]) => ({ name, run: node([bin, ...args]) }))],
    rounds,
  );
  const rows = Object.entries(commands).map(([name, args]) => ({
    command: `handoff ${args.join(" ")}`,
    ms: measured[name],
    ratio: Math.round((measured[name].median / measured.node.median) * 100) / 100,
    target: name === "version" ? VERSION_TARGET : null,
  }));
  for (const row of rows)
    log(`start-up: ${row.command} ${Math.round(row.ms.median)} ms, ${row.ratio}× node -e 0 (${Math.round(measured.node.median)} ms)`);
  return { rounds, node: measured.node, rows };
}
