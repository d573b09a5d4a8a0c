import { spawn } from "node:child_process";

/**
 * Plain process calls for the generator and the anchors. The anchors are what a user would type, so they run
 * through the cheapest spawn there is (execa adds 0.8 ms a call: docs/performance.md), output read and dropped.
 */
export function run(file, args, { cwd, input, env, keep = false } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, env: env ?? process.env, stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    const out = [];
    let err = "";
    child.stdout.on("data", (chunk) => keep && out.push(chunk));
    child.stderr.on("data", (chunk) => {
      err = (err + chunk).slice(-8192);
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve(Buffer.concat(out));
      else reject(new Error(`${file} ${args.join(" ")} exited ${code}: ${err.trim().split("\n").slice(-3).join(" | ")}`));
    });
    if (input !== undefined) child.stdin.end(input);
  });
}

/** git with a fixed identity and no user or system config: the bench must not depend on the machine's settings. */
export const GIT_ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "Bench",
  GIT_AUTHOR_EMAIL: "bench@handoff.invalid",
  GIT_COMMITTER_NAME: "Bench",
  GIT_COMMITTER_EMAIL: "bench@handoff.invalid",
};

export function git(cwd, args, options = {}) {
  return run("git", args, { cwd, env: GIT_ENV, ...options });
}

export async function gitOut(cwd, args) {
  return (await git(cwd, args, { keep: true })).toString("utf8");
}
