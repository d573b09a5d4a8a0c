import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A real redis-server for the queue tests: on 127.0.0.1 and a free port, its data in a temp dir with appendonly on
 * (so a restart keeps the queue). Without redis-server the queue tests skip, unless HANDOFF_QUEUE_TESTS=required
 * (CI), where they fail.
 */
export const redisServer: { readonly ok: boolean; readonly reason: string } = (() => {
  const probe = spawnSync("redis-server", ["--version"], { encoding: "utf8" });
  if (probe.error) return { ok: false, reason: `redis-server is not installed (${(probe.error as NodeJS.ErrnoException).code})` };
  return { ok: probe.status === 0, reason: probe.stderr.trim() };
})();
if (!redisServer.ok && process.env.HANDOFF_QUEUE_TESTS === "required")
  throw new Error(`redis-server is required here: ${redisServer.reason}`);

export interface TestRedis {
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  /** SHUTDOWN SAVE (the queue is on disk), then the same server on the same port and dir again. */
  restart(): Promise<void>;
  /** SHUTDOWN SAVE, waited for; killed when it does not go. */
  shutdown(): Promise<void>;
  /** Shut down and its dir removed. */
  stop(): Promise<void>;
}

export async function startRedis(): Promise<TestRedis> {
  const dir = mkdtempSync(join(tmpdir(), "handoff-redis-"));
  const port = await freePort();
  let server = await launch(port, dir);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    async restart() {
      await shutdown(server, port);
      server = await launch(port, dir);
    },
    async shutdown() {
      await shutdown(server, port);
    },
    async stop() {
      await shutdown(server, port);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function launch(port: number, dir: string): Promise<ChildProcess> {
  const args = ["--bind", "127.0.0.1", "--port", String(port), "--dir", dir, "--appendonly", "yes", "--save", "", "--daemonize", "no"];
  const child = spawn("redis-server", [...args, "--logfile", join(dir, "redis.log")], { stdio: "ignore" });
  const deadline = Date.now() + 10_000;
  while ((await command(port, "PING")) !== "+PONG") {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`redis-server on port ${port} did not answer PING (see ${join(dir, "redis.log")})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return child;
}

async function shutdown(child: ChildProcess, port: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  await command(port, "SHUTDOWN SAVE");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

/** One inline command to the server; its first reply line, or null when nothing answers. */
function command(port: number, text: string): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    let reply = "";
    socket.setTimeout(2_000, () => socket.destroy());
    socket.on("connect", () => socket.write(`${text}\r\n`));
    socket.on("data", (chunk) => {
      reply += chunk.toString("utf8");
      if (reply.includes("\r\n")) socket.end();
    });
    socket.on("error", () => resolve(null));
    socket.on("close", () => resolve(reply === "" ? null : reply.split("\r\n")[0]!));
  });
}

/** A port nothing listens on now (the kernel's pick). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}
