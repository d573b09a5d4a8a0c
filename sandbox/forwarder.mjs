// handoff's in-sandbox forwarder: the entry of an agent's or a setup command's sandbox when its network is filtered
// (docs/containment.md "The network"). The sandbox has only a loopback interface; this listens on 127.0.0.1 ports and
// pipes each connection to a Unix socket of handoff's egress proxy, bound in from outside. Once every port listens,
// it starts the command with the same stdio and environment, passes signals on, and ends as the command ended.
// It runs alone inside the sandbox (only this file and node are visible), so it imports nothing but node's own
// modules; it is the one place outside src/process/process.ts that starts a process.
//
// usage: node forwarder.mjs '[{"listen":3128,"socket":"/path/p.sock"}]' [--ready FILE] -- FILE ARGS...
// With --ready, the command also waits for that file: the packet watch beside the sandbox makes it once it listens.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { connect, createServer } from "node:net";

const argv = process.argv.slice(2);
const spec = argv.shift();
const ready = argv[0] === "--ready" ? argv.splice(0, 2)[1] : null;
const [separator, file, ...args] = argv;
if (separator !== "--" || !file) {
  process.stderr.write("handoff forwarder: usage: forwarder.mjs SPEC [--ready FILE] -- FILE ARGS...\n");
  process.exit(125);
}

/** @type {{ listen: number; socket: string }[]} */
const entries = JSON.parse(spec);
let listening = 0;
for (const entry of entries) {
  const server = createServer((client) => {
    const upstream = connect(entry.socket);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  server.on("error", (error) => {
    process.stderr.write(`handoff forwarder: cannot listen on 127.0.0.1:${entry.listen}: ${error.message}\n`);
    process.exit(125);
  });
  server.listen(entry.listen, "127.0.0.1", () => {
    listening++;
    if (listening === entries.length) start();
  });
  // The listeners never keep the forwarder alive on their own: it ends with the command.
  server.unref();
}
if (entries.length === 0) start();

function start(waited = 0) {
  if (ready && !existsSync(ready)) {
    if (waited >= 5000) {
      process.stderr.write("handoff forwarder: the packet watch did not get ready\n");
      process.exit(125);
    }
    setTimeout(() => start(waited + 1), 1);
    return;
  }
  const child = spawn(file, args, { stdio: "inherit" });
  const forward = (signal) => () => child.kill(signal);
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"]) process.on(signal, forward(signal));
  child.on("error", (error) => {
    process.stderr.write(`handoff forwarder: cannot start ${file}: ${error.message}\n`);
    process.exit(error.code === "ENOENT" ? 127 : 126);
  });
  child.on("exit", (code, signal) => {
    if (signal) {
      // The same ending as without the forwarder: die of the same signal.
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
}
