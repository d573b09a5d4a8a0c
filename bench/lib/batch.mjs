// `8 tasks on 2 cores`: `handoff batch --jobs 2` of 8 command-backend tasks against the same 8 tasks as
// `handoff run`, one after another, in the same bench run (interleaved rounds, docs/performance.md). Each agent edits
// a file and sleeps about a second; each verification sleeps about a second too: the work a batch overlaps.
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git, run } from "./git.mjs";
import { interleave } from "./harness.mjs";

export const BATCH_TASKS = 8;
export const BATCH_JOBS = 2;
const AGENT_CMD = "sed -i 's/a - b/a + b/' math.js && sleep 1";
// A script of the repository, so that the command names no file the agent changes (one it named would be held to the base).
const VERIFY_CMD = "sleep 1 && sh check.sh";

async function makeRepo(dir) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "math.js"), "export function add(a, b) {\n  return a - b;\n}\n");
  writeFileSync(join(dir, "check.sh"), "grep -q 'a + b' math.js\n");
  writeFileSync(join(dir, "README.md"), "# bench\n\nA repository for handoff's batch benchmark.\n");
  await git(dir, ["init", "-q", "-b", "main"]);
  await git(dir, ["add", "-A"]);
  await git(dir, ["commit", "-q", "-m", "bench repository"]);
}

export async function benchBatch({ root, workDir, rounds, log }) {
  const bin = join(root, "bin/handoff.js");
  if (!existsSync(join(root, "dist/src/cli/cli.js"))) throw new Error(`${root}/dist/src/cli/cli.js is missing: run npm run build first`);
  rmSync(workDir, { recursive: true, force: true });
  const repo = join(workDir, "repo");
  await makeRepo(repo);
  const file = join(workDir, "tasks.jsonl");
  const line = (k) =>
    JSON.stringify({ id: `t${k}`, repo, task: `fix add (${k})`, backend: "command", agentCmd: AGENT_CMD, verify: [VERIFY_CMD] });
  writeFileSync(file, `${Array.from({ length: BATCH_TASKS }, (_, k) => line(k + 1)).join("\n")}\n`);
  const env = {
    ...process.env,
    XDG_STATE_HOME: join(workDir, "state"),
    HANDOFF_WORKSPACE_DIR: join(workDir, "ws"),
    HANDOFF_CLI_HOME_DIR: join(workDir, "homes"),
  };
  const handoff = (args) => run(process.execPath, [bin, ...args], { env, cwd: workDir });
  let round = 0;
  const runsDir = () => join(workDir, "runs", String(round));
  log(
    `batch: ${BATCH_TASKS} tasks (agent: edit + sleep 1 s; verify: sleep 1 s), --jobs ${BATCH_JOBS}, against ${BATCH_TASKS} × handoff run; ${rounds} rounds`,
  );
  const measured = await interleave(
    [
      {
        name: "batch",
        prep: () => round++,
        run: () => handoff(["batch", file, "--jobs", String(BATCH_JOBS), "--yes", "--runs-dir", runsDir(), "--batch-id", "b"]),
      },
      {
        name: "sequential",
        prep: () => round++,
        run: async () => {
          for (let k = 1; k <= BATCH_TASKS; k++)
            await handoff([
              "run",
              "-C",
              repo,
              "-b",
              "command",
              "--agent-cmd",
              AGENT_CMD,
              "--verify",
              VERIFY_CMD,
              "--yes",
              "--runs-dir",
              runsDir(),
              "--run-id",
              `t${k}`,
              "--",
              `fix add (${k})`,
            ]);
        },
      },
    ],
    rounds,
  );
  const ratio = Math.round((measured.batch.median / measured.sequential.median) * 100) / 100;
  log(
    `batch: handoff batch --jobs ${BATCH_JOBS} ${Math.round(measured.batch.median)} ms, ${BATCH_TASKS} × handoff run ${Math.round(measured.sequential.median)} ms: ${ratio}×`,
  );
  return { tasks: BATCH_TASKS, jobs: BATCH_JOBS, agentCmd: AGENT_CMD, verify: VERIFY_CMD, rounds, ...measured, ratio };
}
