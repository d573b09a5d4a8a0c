// The gate of bench/lib/egress.mjs in a process of its own, as handoff runs it: one tunnel to the model server.
// Prints its forward spec on stdout, then its peak RSS (bytes) when stdin closes.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [root, upstreamPort] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(join(root, "dist/src/egress", path)).href);
const { EgressGate } = await load("egress-gate.js");
const { EgressLog } = await load("egress-log.js");
const { checkResolved, matchHost } = await load("host-match.js");
const { ruleWords } = await load("rule-words.js");
const { endpointAccess } = await load("model-endpoints.js");

const access = endpointAccess("bench", [{ url: `http://127.0.0.1:${upstreamPort}`, why: "the bench's model server" }]);
const gate = new EgressGate({
  dir: mkdtempSync(join(tmpdir(), "bench-gate-")),
  role: "agent",
  label: "bench",
  decide: (host, port) => matchHost(access.rules, host, port),
  checkResolved,
  ruleWords,
  tunnels: access.tunnels,
  log: new EgressLog(),
});
process.stdout.write(`${JSON.stringify(gate.forwardSpec())}\n`);
process.stdin.resume();
// The bench may be gone before the answer (it failed): nothing to tell it then.
process.stdout.on("error", () => process.exit(0));
process.stdin.on("end", async () => {
  await gate.close();
  process.stdout.write(`${process.resourceUsage().maxRSS * 1024}\n`);
});
