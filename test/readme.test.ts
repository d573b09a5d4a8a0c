import { spawn } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, readdirSync, symlinkSync } from "node:fs";
import { createConnection } from "node:net";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { HANDOFF_BIN } from "./helpers/cli.js";
import { redisServer } from "./helpers/redis.js";
import { tempDir } from "./helpers/repo.js";

const ROOT = resolve(import.meta.dirname, "..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");
/** The port the README's Redis listens on, as written there. */
const README_REDIS_PORT = 6379;

/** A shell block of the README marked `<!-- readme-test: run[, needs redis][, exit N] -->` just above it. */
interface RunnableBlock {
  readonly line: number;
  readonly code: string;
  readonly needsRedis: boolean;
  readonly exitCode: number;
}

/** The marked blocks, in the README's order; unmarked blocks (a real agent's login, a global install) are prose. */
function runnableBlocks(markdown: string): RunnableBlock[] {
  const blocks: RunnableBlock[] = [];
  for (const match of markdown.matchAll(/^<!-- readme-test: ([^>]*) -->\n```sh\n([\s\S]*?)^```$/gm)) {
    const words = match[1]!.split(",").map((word) => word.trim());
    expect(words[0], `a readme-test marker says run first: ${match[0].split("\n")[0]}`).toBe("run");
    const exit = words.find((word) => word.startsWith("exit "));
    blocks.push({
      line: markdown.slice(0, match.index).split("\n").length,
      code: match[2]!,
      needsRedis: words.includes("needs redis"),
      exitCode: exit === undefined ? 0 : Number(exit.slice("exit ".length)),
    });
  }
  return blocks;
}

/** One bash script of the blocks in order, sharing their variables and jobs; a block that ends otherwise than marked stops it. */
function scriptOf(blocks: readonly RunnableBlock[]): string {
  const parts = ["set -e", `trap 'echo "README.md block at line $block failed: $BASH_COMMAND" >&2' ERR`];
  for (const block of blocks) {
    parts.push(`block=${block.line}`);
    if (block.exitCode === 0) parts.push(block.code);
    else
      parts.push(
        "set +e",
        block.code,
        "status=$?",
        "set -e",
        `[ "$status" -eq ${block.exitCode} ] || { echo "README.md block at line ${block.line} exited $status, not ${block.exitCode}" >&2; exit 1; }`,
      );
  }
  return `${parts.join("\n")}\n`;
}

function portInUse(port: number): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolvePromise(true);
    });
    socket.once("error", () => resolvePromise(false));
  });
}

describe("README.md", () => {
  test("its examples run in order, as written, from a directory that holds only what a clone of handoff gives them", async () => {
    const blocks = runnableBlocks(README);
    expect(blocks.length).toBeGreaterThanOrEqual(8);
    const redisFree = !(await portInUse(README_REDIS_PORT));
    const withRedis = redisServer.ok && redisFree;
    if (!withRedis && process.env.HANDOFF_QUEUE_TESTS === "required")
      throw new Error(`the README's Redis blocks need redis-server and port ${README_REDIS_PORT} free: ${redisServer.reason}`);
    const chosen = blocks.filter((block) => withRedis || !block.needsRedis);

    const home = tempDir("handoff-readme");
    // The README's examples run in a clone of handoff: they read its agent fixtures, and must write nothing into it.
    const clone = join(home, "clone");
    cpSync(join(ROOT, "fixtures", "agents"), join(clone, "fixtures", "agents"), { recursive: true });
    const bin = join(home, "bin");
    mkdirSync(bin);
    symlinkSync(HANDOFF_BIN, join(bin, "handoff"));
    const tmp = join(home, "tmp");
    mkdirSync(tmp);
    const child = spawn("bash", ["-c", scriptOf(chosen)], {
      cwd: clone,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        PATH: `${bin}:${process.env.PATH}`,
        TMPDIR: tmp,
        XDG_STATE_HOME: join(home, "state"),
        XDG_CACHE_HOME: join(home, "cache"),
        HANDOFF_WORKSPACE_DIR: join(home, "ws"),
        HANDOFF_CLI_HOME_DIR: join(home, "homes"),
      },
    });
    let output = "";
    child.stdout!.setEncoding("utf8").on("data", (text: string) => (output += text));
    child.stderr!.setEncoding("utf8").on("data", (text: string) => (output += text));
    const code = await new Promise<number | null>((resolvePromise) => child.once("close", resolvePromise));
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // The group is gone: every block's process ended.
    }
    if (withRedis && (await portInUse(README_REDIS_PORT)))
      spawn("redis-cli", ["-p", String(README_REDIS_PORT), "shutdown", "nosave"], { stdio: "ignore" });
    expect(code, output).toBe(0);
    expect(readdirSync(clone)).toEqual(["fixtures"]);
  }, 300_000);
});
