// The egress path (issue 29): a 256 MiB streamed model response through the in-sandbox forwarder and handoff's gate,
// against the same response read straight from the server, in the same bench run; the gate process's peak RSS; and
// what a whole sandboxed run pays for its filtered network against the same run with `--allow-net '*'`.
import { spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { connect } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { run } from "./git.mjs";
import { interleave } from "./harness.mjs";

/** Issue 29's targets. */
export const EGRESS_TARGETS = { throughputMBps: 200, gateRssMiB: 200, addedRunMs: 50 };

const RESPONSE_BYTES = 256 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'data: {"delta":"x"}\n\n');

export async function benchEgress({ root, workDir, rounds, log }) {
  mkdirSync(workDir, { recursive: true });
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    let sent = 0;
    const pump = () => {
      while (sent < RESPONSE_BYTES) {
        sent += CHUNK.length;
        if (!res.write(CHUNK)) return void res.once("drain", pump);
      }
      res.end();
    };
    pump();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const upstreamPort = server.address().port;
  try {
    log(
      `egress: ${RESPONSE_BYTES / 1024 ** 2} MiB streamed through the forwarder and the gate, against straight from the server; ${rounds} rounds`,
    );
    const gate = spawn(process.execPath, [join(root, "bench/lib/egress-gate-process.mjs"), root, String(upstreamPort)], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    const lines = lineReader(gate.stdout);
    const spec = JSON.parse(await lines.next());
    // The forwarder as the sandbox runs it, here on a free port of this machine's loopback: the same two hops.
    const listen = 20_000 + Math.floor(Math.random() * 20_000);
    // The model's tunnel (the entry listening on the model's own port), moved to a free port of this machine.
    const forwarderSpec = spec.filter((entry) => entry.listen === upstreamPort).map((entry) => ({ ...entry, listen }));
    // The entry a filtered sandbox gets here: socat where the system has it, else the Node forwarder.
    const { sandboxEntry } = await import(pathToFileURL(join(root, "dist/src/containment/sandbox-entry.js")).href);
    const inside = sandboxEntry(forwarderSpec);
    const [entryFile, ...entryArgs] = [...inside.entry, process.execPath, "-e", "setTimeout(() => {}, 1e9)"];
    const forwarder = spawn(entryFile, entryArgs, { stdio: "ignore" });
    await waitForPort(listen);
    const measured = await interleave(
      [
        { name: "direct", run: () => download(upstreamPort) },
        { name: "gate", run: () => download(listen) },
      ],
      rounds,
    );
    forwarder.kill("SIGTERM");
    // Outside a sandbox socat outlives its entry (inside, the PID namespace ends it).
    if (inside.kind === "socat") spawn("pkill", ["-f", `TCP-LISTEN:${listen},`]);
    gate.stdin.end();
    const rss = Number(await lines.next());
    const mbps = (ms) => Math.round(RESPONSE_BYTES / 1e6 / (ms / 1000));
    const throughput = { forwarder: inside.kind, direct: mbps(measured.direct.median), gate: mbps(measured.gate.median), ms: measured };
    log(
      `egress: ${throughput.gate} MB/s through the ${inside.kind} forwarder and the gate, ${throughput.direct} MB/s straight; gate RSS ${Math.round(rss / 1024 ** 2)} MiB`,
    );
    const runCost = await wholeRun({ root, workDir, rounds, log });
    return { targets: EGRESS_TARGETS, responseBytes: RESPONSE_BYTES, throughput, gateRssBytes: rss, run: runCost };
  } finally {
    server.close();
  }
}

/** One streamed response read to its end through `port`, counted. */
function download(port) {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let bytes = 0;
    socket.on("connect", () => socket.write("GET /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
    socket.on("data", (chunk) => {
      bytes += chunk.length;
    });
    socket.on("error", reject);
    socket.on("close", () => (bytes >= RESPONSE_BYTES ? resolve() : reject(new Error(`only ${bytes} bytes arrived`))));
  });
}

/**
 * A whole run (command backend, one verify command) with the filtered network against the same run with `--allow-net
 * '*'`: what the gate, the forwarder's start and the proxy variables add to what a user waits for.
 */
async function wholeRun({ root, workDir, rounds, log }) {
  const repo = join(workDir, "repo");
  // A fresh repository each bench run: the last one's would have nothing to commit.
  rmSync(repo, { recursive: true, force: true });
  mkdirSync(repo, { recursive: true });
  writeFileSync(join(repo, "math.js"), "exports.add = (a, b) => a - b;\n");
  writeFileSync(join(repo, "test.js"), "if (require('./math.js').add(2, 2) !== 4) process.exit(1);\n");
  await run("git", ["init", "-q"], { cwd: repo });
  await run("git", ["add", "."], { cwd: repo });
  await run("git", ["-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", "base"], { cwd: repo });
  const env = { ...process.env, XDG_STATE_HOME: join(workDir, "state"), HANDOFF_WORKSPACE_DIR: join(workDir, "ws") };
  mkdirSync(env.HANDOFF_WORKSPACE_DIR, { recursive: true });
  const handoff = (extra) => () =>
    run(
      process.execPath,
      [
        join(root, "bin/handoff.js"),
        "run",
        "-C",
        repo,
        "--backend",
        "command",
        "--agent-cmd",
        "sed -i 's/a - b/a + b/' math.js",
        "--verify",
        "node test.js",
        "--sandbox",
        "bwrap",
        "--yes",
        "--json",
        ...extra,
        "--",
        "fix add",
      ],
      { env, cwd: repo },
    );
  log(`egress: a whole run filtered against --allow-net '*'; ${rounds} rounds`);
  const measured = await interleave(
    [
      { name: "filtered", run: handoff([]) },
      { name: "open", run: handoff(["--allow-net", "*"]) },
    ],
    rounds,
  );
  const addedMs = Math.round(measured.filtered.median - measured.open.median);
  log(
    `egress: a whole run ${Math.round(measured.filtered.median)} ms filtered, ${Math.round(measured.open.median)} ms open: +${addedMs} ms`,
  );
  return { ms: measured, addedMs };
}

async function waitForPort(port) {
  for (let i = 0; i < 100; i++) {
    const up = await new Promise((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.on("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.on("error", () => resolve(false));
    });
    if (up) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the forwarder did not listen on ${port}`);
}

function lineReader(stream) {
  let buffered = "";
  const waiting = [];
  stream.on("data", (chunk) => {
    buffered += chunk;
    let end = buffered.indexOf("\n");
    while (end !== -1 && waiting.length > 0) {
      waiting.shift()(buffered.slice(0, end));
      buffered = buffered.slice(end + 1);
      end = buffered.indexOf("\n");
    }
  });
  return {
    next: () =>
      new Promise((resolve) => {
        const end = buffered.indexOf("\n");
        if (end !== -1) {
          resolve(buffered.slice(0, end));
          buffered = buffered.slice(end + 1);
        } else waiting.push(resolve);
      }),
  };
}
