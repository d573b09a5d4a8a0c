import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { type Server, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sandboxEntry } from "../src/containment/sandbox-entry.js";
import { which } from "../src/process/which.js";

// The in-sandbox forwarder, run here on this machine's loopback: both kinds pipe each port to its socket, start the
// command only once every port listens, and end as the command ended.
const hasSocat = which("socat", "/usr/bin:/bin:/usr/local/bin") !== null;
if (!hasSocat && process.env.HANDOFF_SANDBOX_TESTS === "required")
  throw new Error("socat is required here (the filtered network's forwarder)");

let dir: string;
const servers: Server[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "handoff-entry-"));
  for (const name of ["a", "b"]) {
    const server = createServer((socket) => socket.once("data", (data) => socket.end(`${name}:${data}`)));
    await new Promise<void>((resolve) => server.listen(join(dir, `${name}.sock`), resolve));
    servers.push(server);
  }
});

afterAll(() => {
  for (const server of servers) server.close();
  rmSync(dir, { recursive: true, force: true });
});

const kinds = (["node", "socat"] as const).filter((kind) => kind === "node" || hasSocat);

describe.each(kinds)("the %s forwarder", (kind) => {
  const ports = () => {
    const base = 42_000 + Math.floor(Math.random() * 10_000) + (kind === "socat" ? 0 : 10_000);
    return [
      { listen: base, socket: join(dir, "a.sock") },
      { listen: base + 1, socket: join(dir, "b.sock") },
    ];
  };
  // Not spawnSync: the sockets' servers are in this process.
  const run = async (forward: ReturnType<typeof ports>, command: readonly string[], ready: string | null = null) => {
    const entry = sandboxEntry(forward, kind, ready);
    expect(entry.kind).toBe(kind);
    const [file, ...args] = [...entry.entry, ...command];
    try {
      const child = spawn(file!, args, { stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (data) => (stdout += data));
      child.stderr.on("data", (data) => (stderr += data));
      const [status, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
        child.on("close", (code, sig) => resolve([code, sig])),
      );
      return { stdout, stderr, status, signal };
    } finally {
      // In a sandbox the socats end with its PID namespace; here they are left to this machine's init.
      for (const { listen } of forward) spawnSync("pkill", ["-f", `TCP-LISTEN:${listen},`]);
    }
  };
  // bash's /dev/tcp: connects within a few milliseconds of the start, without retrying, so a port not yet listening fails.
  const client = (forwardPorts: readonly number[]) => [
    "/bin/bash",
    "-c",
    `for port in ${forwardPorts.join(" ")}; do exec 3<>/dev/tcp/127.0.0.1/$port || exit 9; printf hi >&3; cat <&3; echo; done; exit 3`,
  ];

  test("every port reaches its socket as soon as the command starts, and the command's exit code is the entry's", async () => {
    const forward = ports();
    const result = await run(forward, client(forward.map((entry) => entry.listen)));
    expect(result.stderr).toBe("");
    expect(result.stdout).toBe("a:hi\nb:hi\n");
    expect(result.status).toBe(3);
  });

  test("a command that does not exist ends with 127", async () => {
    const result = await run(ports(), [join(dir, "no-such-program")]);
    expect(result.status).toBe(127);
  });

  test("with the packet watch, the command starts only once its ready file is there", async () => {
    const ready = join(dir, `ready-${kind}`);
    const started = Date.now();
    setTimeout(() => writeFileSync(ready, ""), 300);
    const result = await run(ports(), ["/bin/sh", "-c", `test -e ${ready} && echo started`], ready);
    expect(result.stdout).toBe("started\n");
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  test("a command that dies of a signal ends the entry the same way", async () => {
    const result = await run(ports(), ["/bin/sh", "-c", "kill -TERM $$"]);
    expect(result.signal).toBe("SIGTERM");
  });
});
