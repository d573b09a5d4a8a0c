import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { fakeArtifactService, runtimeToken, unzipEntries } from "./helpers/fake-github/artifacts.js";
import { fakeCacheService } from "./helpers/fake-github/cache.js";
import { fakeGitRemote } from "./helpers/fake-github/git-http.js";
import { fakeRepository } from "./helpers/fake-github/rest.js";
import { type FakeGitHub, startFakeGitHub } from "./helpers/fake-github/server.js";
import { FAILING_ADD_PROJECT, gitIn, makeRepo, tempDir } from "./helpers/repo.js";
import { agent } from "./helpers/run.js";
import { runCli } from "./helpers/cli.js";
import { RUN_OPTION_INPUTS } from "../src/settings/action-inputs.js";
import { probeBubblewrap } from "../src/containment/sandbox.js";

const bwrap = await probeBubblewrap();
if (!bwrap.ok && process.env.HANDOFF_SANDBOX_TESTS === "required") throw new Error(`bubblewrap is required here: ${bwrap.reason}`);

/**
 * The GitHub Action's entry point run as a workflow job runs it: `node dist/src/action/main.js` in a child process
 * with the Actions environment (INPUT_* as the runner sets them, the event payload file, the step's summary and
 * output files, the runtime token) against the stand-in for GitHub (artifacts on its results service routes).
 */

/** The committed bundle action.yml runs (test/action-bundle.test.ts keeps it the build of src/action/). */
const MAIN = resolve(import.meta.dirname, "../action/main.js");
const WORKFLOW_RUN = "c0ffee00-0000-4000-8000-000000000001";

interface JobOutcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly outputs: Map<string, string>;
  readonly summary: string;
}

let fake: FakeGitHub | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function standIn() {
  const artifacts = fakeArtifactService();
  const cache = fakeCacheService();
  fake = await startFakeGitHub(artifacts.route, cache.route);
  return { github: fake, artifacts, cache };
}

/** The GITHUB_OUTPUT file as @actions/core writes it: `name<<delimiter`, the value, the delimiter. */
function parseOutputs(text: string): Map<string, string> {
  const outputs = new Map<string, string>();
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const head = /^([^<]+)<<(.+)$/.exec(lines[i]!);
    if (!head) continue;
    const end = lines.indexOf(head[2]!, i + 1);
    outputs.set(head[1]!, lines.slice(i + 1, end).join("\n"));
    i = end;
  }
  return outputs;
}

/** The runner's `INPUT_<NAME>` for each input: upper case, spaces as `_`, hyphens kept. */
function inputEnv(inputs: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(inputs).map(([name, value]) => [`INPUT_${name.replace(/ /g, "_").toUpperCase()}`, value]));
}

interface Job {
  readonly workspace: string;
  readonly github: FakeGitHub;
  readonly inputs: Record<string, string>;
  readonly event?: { readonly name: string; readonly payload: unknown };
  /** The job's id in the runtime token: each job of a workflow run has its own. */
  readonly jobId?: string;
  /** The workflow run's id in the runtime token: a later workflow run has another. */
  readonly workflowRun?: string;
  /** More of the runner's environment (a job's own HANDOFF_CACHE_DIR: a fresh runner's empty cache). */
  readonly env?: Record<string, string>;
  /** Called with the step's log (stderr) so far, and the step's process, each time more arrives. */
  readonly onLog?: (log: string, step: ChildProcess) => void;
}

/** One step of a job: the entry point in a fresh process, its own runner temp, summary and output files. */
async function runStep(job: Job): Promise<JobOutcome> {
  const runner = tempDir("handoff-runner");
  const summaryFile = join(runner, "step_summary");
  const outputFile = join(runner, "output");
  const eventFile = join(runner, "event.json");
  writeFileSync(summaryFile, "");
  writeFileSync(outputFile, "");
  writeFileSync(eventFile, JSON.stringify(job.event?.payload ?? { inputs: { task: job.inputs.task ?? "" } }));
  mkdirSync(join(runner, "temp"));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? runner,
    XDG_STATE_HOME: join(runner, "xdg"),
    HANDOFF_WORKSPACE_DIR: join(runner, "ws"),
    HANDOFF_CLI_HOME_DIR: join(runner, "homes"),
    ...(process.env.HANDOFF_CACHE_DIR ? { HANDOFF_CACHE_DIR: process.env.HANDOFF_CACHE_DIR } : {}),
    GITHUB_ACTIONS: "true",
    CI: "true",
    GITHUB_WORKSPACE: job.workspace,
    GITHUB_STEP_SUMMARY: summaryFile,
    GITHUB_OUTPUT: outputFile,
    GITHUB_EVENT_NAME: job.event?.name ?? "workflow_dispatch",
    GITHUB_EVENT_PATH: eventFile,
    GITHUB_REPOSITORY: "octo/app",
    GITHUB_RUN_ID: "4242",
    GITHUB_RUN_ATTEMPT: "1",
    GITHUB_SERVER_URL: "https://github.com",
    GITHUB_API_URL: job.github.url,
    ACTIONS_RESULTS_URL: `${job.github.url}/`,
    ACTIONS_RUNTIME_TOKEN: runtimeToken(job.workflowRun ?? WORKFLOW_RUN, job.jobId ?? "job-handoff"),
    // GitHub's hosted runners use the cache service v2, on the results service.
    ACTIONS_CACHE_SERVICE_V2: "True",
    RUNNER_TEMP: join(runner, "temp"),
    ...inputEnv({ mode: "run", "artifact-name": "handoff-run", ...job.inputs }),
    ...job.env,
  };
  const child = spawn(process.execPath, [MAIN], { cwd: job.workspace, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text));
  child.stderr.setEncoding("utf8").on("data", (text: string) => {
    stderr += text;
    job.onLog?.(stderr, child);
  });
  const code = await new Promise<number | null>((done) => child.once("close", (exitCode) => done(exitCode)));
  return { code, stdout, stderr, outputs: parseOutputs(readFileSync(outputFile, "utf8")), summary: readFileSync(summaryFile, "utf8") };
}

/** The workflow command lines that fail or annotate the step (`::error::…`), as the runner reads them from stdout. */
const errorLines = (stdout: string) => stdout.split("\n").filter((line) => line.startsWith("::error"));

const RUN_INPUTS = { backend: "command", verify: "node test.js", sandbox: "none", task: "make add() return the sum" };

describe("action.yml", () => {
  test("declares every input the entry reads, and each run option input is an option `handoff run` has", async () => {
    const manifest = readFileSync(resolve(import.meta.dirname, "../action.yml"), "utf8");
    const section = (name: string) =>
      manifest.slice(manifest.indexOf(`\n${name}:\n`), manifest.indexOf("\n\n", manifest.indexOf(`\n${name}:\n`) + 1));
    const declared = [...section("inputs").matchAll(/^ {2}([a-z0-9-]+):$/gm)].map((m) => m[1]);
    const common = ["mode", "task", "artifact-name", "branch", "base", "remote", "github-token"];
    expect(declared.sort()).toEqual([...common, ...RUN_OPTION_INPUTS.map((option) => option.input)].sort());
    const outputs = [...section("outputs").matchAll(/^ {2}([a-z0-9-]+):$/gm)].map((m) => m[1]);
    expect(outputs).toEqual([
      "verdict",
      "exit-code",
      "run-id",
      "patch-sha256",
      "run-dir",
      "branch",
      "commit",
      "pull-request-number",
      "pull-request-url",
    ]);
    expect(manifest).toMatch(/runs:\n {2}using: node24\n {2}main: action\/main\.js\n/);
    const help = (await runCli(["run", "--help"])).stdout;
    for (const option of RUN_OPTION_INPUTS) expect(help, option.flag).toContain(option.flag);
  });
});

describe("run mode", () => {
  test("a verified run uploads its run directory as the artifact, writes the report to the summary and sets the outputs", async () => {
    const { github, artifacts } = await standIn();
    const workspace = await makeRepo(FAILING_ADD_PROJECT);
    const step = await runStep({ workspace, github, inputs: { ...RUN_INPUTS, "agent-cmd": agent("fixes-add.sh") } });

    expect(step.code, step.stdout + step.stderr).toBe(0);
    expect(errorLines(step.stdout)).toEqual([]);
    expect(step.outputs.get("verdict")).toBe("verified");
    expect(step.outputs.get("exit-code")).toBe("0");
    const runId = step.outputs.get("run-id")!;
    expect(runId).toMatch(/\S/);
    expect(step.outputs.get("run-dir")).toMatch(new RegExp(`${runId}$`));

    expect(artifacts.artifacts).toHaveLength(1);
    const [artifact] = artifacts.artifacts;
    expect(artifact!.name).toBe("handoff-run");
    expect(artifact!.finalized).toBe(true);
    expect(artifact!.digest).toBe(`sha256:${createHash("sha256").update(artifact!.zip).digest("hex")}`);
    const files = unzipEntries(artifact!.zip);
    expect(JSON.parse(files.get("result.json")!.toString("utf8"))).toMatchObject({ runId, terminalReason: "verified" });
    const patch = files.get("changes.patch")!;
    expect(patch.toString("utf8")).toContain("+  return a + b;");
    expect(step.outputs.get("patch-sha256")).toBe(createHash("sha256").update(patch).digest("hex"));

    expect(step.summary).toContain("verified");
    expect(step.summary).toContain(runId);
    // The CLI's progress lines reach the job's log as they come.
    expect(step.stderr).toMatch(/handoff: run \S+: command on /);
    // Nothing but the artifact service was asked for anything: the job needs no write permission on the repository.
    for (const request of github.requests)
      expect(request.path).toMatch(/^\/(twirp\/github\.actions\.results\.api\.v1\.ArtifactService\/|artifact-blobs\/)/);
    expect(gitIn(workspace, "status", "--porcelain")).toBe("");
  });

  test("a failing run still uploads its artifact, writes its summary and sets its outputs, and then fails the step with one line", async () => {
    const { github, artifacts } = await standIn();
    const workspace = await makeRepo(FAILING_ADD_PROJECT);
    const step = await runStep({ workspace, github, inputs: { ...RUN_INPUTS, "agent-cmd": agent("breaks-add.sh") } });

    expect(step.code).toBe(1);
    expect(step.outputs.get("verdict")).toBe("verification_failed");
    expect(step.outputs.get("exit-code")).toBe("1");
    expect(step.outputs.get("run-id")).toMatch(/\S/);
    expect(step.outputs.get("patch-sha256")).toMatch(/^[0-9a-f]{64}$/);
    expect(artifacts.artifacts.map((a) => a.finalized)).toEqual([true]);
    const files = unzipEntries(artifacts.artifacts[0]!.zip);
    expect([...files.keys()]).toEqual(expect.arrayContaining(["result.json", "changes.patch", "events.jsonl"]));
    expect(step.summary).toContain("verification_failed");
    expect(errorLines(step.stdout)).toEqual([expect.stringMatching(/^::error::verification_failed \(exit 1\): /)]);
  });

  test("a cancelled job (the runner's SIGINT) ends the run user_cancelled, and still uploads it and sets the outputs", async () => {
    const { github, artifacts } = await standIn();
    const workspace = await makeRepo(FAILING_ADD_PROJECT);
    const sleeper = join(tempDir("handoff-agent"), "sleeps.sh");
    writeFileSync(sleeper, "#!/bin/sh\nsleep 60\n", { mode: 0o755 });
    let cancelled = false;
    const step = await runStep({
      workspace,
      github,
      inputs: { ...RUN_INPUTS, "agent-cmd": sleeper },
      onLog: (log, child) => {
        if (!cancelled && log.includes("agent working")) {
          cancelled = true;
          child.kill("SIGINT");
        }
      },
    });

    expect(cancelled).toBe(true);
    expect(step.code).toBe(1);
    expect(step.outputs.get("verdict")).toBe("user_cancelled");
    expect(step.outputs.get("exit-code")).toBe("130");
    expect(artifacts.artifacts.map((a) => a.finalized)).toEqual([true]);
    expect(JSON.parse(unzipEntries(artifacts.artifacts[0]!.zip).get("result.json")!.toString("utf8")).terminalReason).toBe(
      "user_cancelled",
    );
    expect(errorLines(step.stdout)).toEqual([expect.stringMatching(/^::error::user_cancelled \(exit 130\): /)]);
  });

  test("a bad input fails the step with one line, and nothing runs and nothing is uploaded", async () => {
    const { github, artifacts } = await standIn();
    const workspace = await makeRepo(FAILING_ADD_PROJECT);
    for (const [inputs, says] of [
      [{ mode: "deploy" }, "::error::input 'mode' is 'deploy': it must be run or publish"],
      [{ baseline: "maybe" }, "::error::input 'baseline' is 'maybe': it must be true or false"],
      [{ "artifact-name": "runs/1" }, "::error::input 'artifact-name' must not contain"],
      [{ task: "" }, "::error::no task: set the task input (on workflow_dispatch), or comment /handoff <task> on an issue"],
    ] as const) {
      const step = await runStep({ workspace, github, inputs: { ...RUN_INPUTS, "agent-cmd": agent("fixes-add.sh"), ...inputs } });
      expect(step.code, step.stdout).toBe(1);
      expect(errorLines(step.stdout)).toHaveLength(1);
      expect(errorLines(step.stdout)[0]).toContain(says);
      expect(step.outputs.size).toBe(0);
    }
    expect(github.requests).toEqual([]);
    expect(artifacts.artifacts).toEqual([]);
  });

  test("an option the CLI refuses fails the step with the CLI's one line, and no run directory or artifact is made", async () => {
    const { github, artifacts } = await standIn();
    const workspace = await makeRepo(FAILING_ADD_PROJECT);
    const step = await runStep({ workspace, github, inputs: { ...RUN_INPUTS, "agent-cmd": agent("fixes-add.sh"), attempts: "lots" } });

    expect(step.code).toBe(1);
    expect(errorLines(step.stdout)).toEqual([expect.stringMatching(/^::error::handoff refused the run \(exit 2\): handoff: .*--attempts/)]);
    expect(step.outputs.get("exit-code")).toBe("2");
    expect(step.outputs.has("verdict")).toBe(false);
    expect(artifacts.artifacts).toEqual([]);
    expect(github.requests).toEqual([]);
  });
});

describe("the task from an issue comment", () => {
  const comment = (body: string, association = "OWNER") => ({
    name: "issue_comment",
    payload: {
      action: "created",
      issue: { number: 7, title: "add is wrong" },
      comment: { body, author_association: association, user: { login: "octocat" } },
    },
  });

  test("a comment `/handoff <task>` runs that task", async () => {
    const { github, artifacts } = await standIn();
    const workspace = await makeRepo(FAILING_ADD_PROJECT);
    const step = await runStep({
      workspace,
      github,
      inputs: { ...RUN_INPUTS, task: "", "agent-cmd": agent("fixes-add.sh") },
      event: comment("/handoff make add() return the sum\nplease"),
    });

    expect(step.code, step.stdout + step.stderr).toBe(0);
    expect(step.outputs.get("verdict")).toBe("verified");
    const files = unzipEntries(artifacts.artifacts[0]!.zip);
    // The words after /handoff, the rest of the comment included: the command itself is not part of the task.
    expect(JSON.parse(files.get("request.json")!.toString("utf8")).task).toBe("make add() return the sum\nplease");
  });

  test("a comment that does not start with /handoff, or one by someone who cannot push, does nothing and succeeds", async () => {
    const { github, artifacts } = await standIn();
    const workspace = await makeRepo(FAILING_ADD_PROJECT);
    for (const [event, says] of [
      [comment("looks good to me, /handoff later"), "the comment does not start with /handoff"],
      [comment("/handoff delete the tests", "NONE"), "the /handoff comment is by octocat (NONE), who cannot push to this repository"],
    ] as const) {
      const step = await runStep({ workspace, github, inputs: { ...RUN_INPUTS, task: "", "agent-cmd": agent("fixes-add.sh") }, event });
      expect(step.code, step.stdout).toBe(0);
      expect(step.stdout).toContain(`::notice::handoff: nothing to do: ${says}`);
      expect(step.outputs.size).toBe(0);
    }
    expect(github.requests).toEqual([]);
    expect(artifacts.artifacts).toEqual([]);
  });
});

describe("publish mode", () => {
  /** Job 1 (run mode) of a workflow run, leaving the artifact on the stand-in; the remote is a bare repository. */
  async function runJob(agentScript = "fixes-add.sh", verdict = "verified") {
    const { github, artifacts } = await standIn();
    const root = tempDir("handoff-publish");
    const remote = join(root, "remote.git");
    const source = await makeRepo(FAILING_ADD_PROJECT);
    gitIn(root, "clone", "-q", "--bare", source, remote);
    const checkout = join(root, "checkout");
    gitIn(root, "clone", "-q", remote, checkout);
    const run = await runStep({ workspace: checkout, github, inputs: { ...RUN_INPUTS, "agent-cmd": agent(agentScript) } });
    expect(run.outputs.get("verdict"), run.stdout + run.stderr).toBe(verdict);
    return { github, artifacts, remote, checkout, runId: run.outputs.get("run-id")! };
  }

  const publishInputs = { mode: "publish", "github-token": "ghs_fake_token", remote: "origin" };

  test("job 2 downloads the run job's artifact by name and hands the run directory to publishRun", async () => {
    const { github, checkout, runId } = await runJob();
    const before = github.requests.length;
    const step = await runStep({ workspace: checkout, github, inputs: publishInputs, jobId: "job-publish" });

    const asked = github.requests.slice(before);
    const listed = asked.find((r) => r.path.endsWith("/ListArtifacts"));
    expect(listed?.json).toMatchObject({ workflow_run_backend_id: WORKFLOW_RUN, name_filter: "handoff-run" });
    expect(asked.some((r) => r.path.endsWith("/GetSignedArtifactURL"))).toBe(true);
    expect(asked.some((r) => r.method === "GET" && r.path.startsWith("/artifact-blobs/"))).toBe(true);
    const downloaded = /downloaded artifact handoff-run \(id 1\) into (\S+): (.*)$/m.exec(step.stdout);
    expect(downloaded, step.stdout).not.toBeNull();
    expect(downloaded![2]!.split(", ")).toEqual(expect.arrayContaining(["changes.patch", "result.json"]));
    expect(JSON.parse(readFileSync(join(downloaded![1]!, "result.json"), "utf8")).runId).toBe(runId);
    // The token is masked in the log from the start.
    expect(step.stdout).toContain("::add-mask::ghs_fake_token");
  });

  test("job 2 pushes the verified patch's branch to the remote and opens a pull request on the stand-in, whose body is the report", async () => {
    const { github, checkout, remote, runId } = await runJob();
    const repository = fakeRepository("octo", "app");
    github.addRoutes(...repository.routes);
    const step = await runStep({ workspace: checkout, github, inputs: publishInputs, jobId: "job-publish" });

    expect(errorLines(step.stdout), step.stdout + step.stderr).toEqual([]);
    expect(step.code).toBe(0);
    const branch = `handoff/${runId}`;
    expect(step.outputs.get("branch")).toBe(branch);
    const commit = step.outputs.get("commit")!;
    expect(gitIn(remote, "rev-parse", `refs/heads/${branch}`).trim()).toBe(commit);
    expect(gitIn(remote, "log", "-1", "--format=%an%n%(trailers:key=Handoff-Run,valueonly)", commit)).toContain(runId);
    expect(step.outputs.get("pull-request-number")).toBe("1");
    expect(repository.pulls).toEqual([expect.objectContaining({ number: 1, head: branch, base: "main", state: "open" })]);
    const opened = github.requests.find((r) => r.method === "POST" && r.path === "/repos/octo/app/pulls");
    expect(opened?.headers.authorization).toBe("token ghs_fake_token");
    expect((opened!.json as { body: string }).body).toMatch(/verified/);
    expect(step.summary).toContain(`pull request #1`);
  });

  test("an unverified run's artifact is refused: no branch is pushed and no pull request is asked for", async () => {
    const { github, checkout, remote } = await runJob("breaks-add.sh", "verification_failed");
    const repository = fakeRepository("octo", "app");
    github.addRoutes(...repository.routes);
    const step = await runStep({ workspace: checkout, github, inputs: publishInputs, jobId: "job-publish" });

    expect(step.code).toBe(1);
    expect(errorLines(step.stdout)).toEqual([expect.stringMatching(/^::error::not published: .*verification_failed/)]);
    expect(step.outputs.size).toBe(0);
    expect(gitIn(remote, "for-each-ref", "--format=%(refname)")).toBe("refs/heads/main\n");
    expect(github.requests.some((r) => r.path.startsWith("/repos/"))).toBe(false);
    expect(repository.pulls).toEqual([]);
  });

  test("an artifact changed in storage after the run job finalised it is refused before publishRun sees it", async () => {
    const { github, artifacts, checkout, remote } = await runJob();
    const stored = artifacts.artifacts[0]!;
    stored.zip = Buffer.concat([stored.zip, Buffer.from("tampered")]);
    const step = await runStep({ workspace: checkout, github, inputs: publishInputs, jobId: "job-publish" });

    expect(step.code).toBe(1);
    expect(errorLines(step.stdout)).toEqual([expect.stringMatching(/^::error::the artifact handoff-run could not be downloaded: /)]);
    expect(step.stdout).not.toContain("downloaded artifact handoff-run");
    expect(step.outputs.size).toBe(0);
    expect(gitIn(remote, "for-each-ref", "--format=%(refname)")).toBe("refs/heads/main\n");
    expect(github.requests.some((r) => r.path.startsWith("/repos/"))).toBe(false);
  });

  test("a publish job without a token is an input error of one line and downloads nothing", async () => {
    const { github } = await standIn();
    const workspace = await makeRepo(FAILING_ADD_PROJECT);
    const step = await runStep({ workspace, github, inputs: { mode: "publish", "github-token": "" } });
    expect(step.code).toBe(1);
    expect(errorLines(step.stdout)).toEqual([expect.stringMatching(/^::error::input 'github-token' is empty/)]);
    expect(github.requests).toEqual([]);
    expect(existsSync(join(workspace, ".git"))).toBe(true);
    expect(readdirSync(workspace).sort()).toEqual([".git", ".gitignore", "math.js", "package.json", "test.js"]);
  });
  /** The run job's remote served over https-like smart HTTP by the stand-in, a private repository: nothing works without a token. */
  async function overHttp(job: Awaited<ReturnType<typeof runJob>>, tokens = { write: ["ghp_personal_token"], read: ["ghs_read_only"] }) {
    const projectRoot = tempDir("handoff-git-http");
    mkdirSync(join(projectRoot, "octo"));
    gitIn(projectRoot, "clone", "-q", "--bare", job.remote, join(projectRoot, "octo", "app.git"));
    const served = fakeGitRemote({ projectRoot, owner: "octo", name: "app", tokens });
    job.github.addRoutes(served.route);
    // actions/checkout with persist-credentials: false: the remote is the URL and nothing in .git/config can push.
    gitIn(job.checkout, "remote", "set-url", "origin", served.url(job.github));
    return { bare: join(projectRoot, "octo", "app.git") };
  }

  test("the push carries the github-token input (a checkout that persisted no credential), and the token is never written to .git/config", async () => {
    const job = await runJob();
    const { bare } = await overHttp(job);
    const repository = fakeRepository("octo", "app");
    job.github.addRoutes(...repository.routes);
    const step = await runStep({
      workspace: job.checkout,
      github: job.github,
      inputs: { ...publishInputs, "github-token": "ghp_personal_token" },
      jobId: "job-publish",
    });

    expect(errorLines(step.stdout), step.stdout + step.stderr).toEqual([]);
    const branch = `handoff/${job.runId}`;
    expect(gitIn(bare, "rev-parse", `refs/heads/${branch}`).trim()).toBe(step.outputs.get("commit"));
    expect(step.stdout).toContain(`pushed ${branch} with the github-token input`);
    const pushes = job.github.requests.filter((r) => r.path.includes("git-receive-pack"));
    expect(pushes.length).toBeGreaterThan(0);
    const header = `basic ${Buffer.from("x-access-token:ghp_personal_token").toString("base64")}`;
    for (const push of pushes) expect(push.headers.authorization).toBe(header);
    expect(readFileSync(join(job.checkout, ".git", "config"), "utf8")).not.toMatch(/extraheader|ghp_personal_token/i);
    expect(step.stdout).toContain(`::add-mask::${Buffer.from("x-access-token:ghp_personal_token").toString("base64")}`);
    expect(repository.pulls).toHaveLength(1);
  });

  test("a token that cannot push fails the step with GitHub's words and the permission it needs, and no pull request is asked for", async () => {
    const job = await runJob();
    const { bare } = await overHttp(job);
    const repository = fakeRepository("octo", "app");
    job.github.addRoutes(...repository.routes);
    const step = await runStep({
      workspace: job.checkout,
      github: job.github,
      inputs: { ...publishInputs, "github-token": "ghs_read_only" },
      jobId: "job-publish",
    });

    expect(step.code).toBe(1);
    expect(errorLines(step.stdout)).toEqual([
      expect.stringMatching(
        /^::error::not published: .*Permission to octo\/app\.git denied to github-actions\[bot\]\..*permissions: \{ contents: write \}/,
      ),
    ]);
    expect(gitIn(bare, "for-each-ref", "--format=%(refname)")).toBe("refs/heads/main\n");
    expect(repository.pulls).toEqual([]);
  });

  test("GitHub's refusals of the pull request name the setting or permission that is missing", async () => {
    for (const [refusal, says] of [
      [
        "GitHub Actions is not permitted to create or approve pull requests.",
        'tick "Allow GitHub Actions to create and approve pull requests" in the repository\'s Settings → Actions → General → Workflow permissions',
      ],
      [
        "Resource not accessible by integration",
        "the token lacks pull-requests: write; give the publish job `permissions: { contents: write, pull-requests: write }`",
      ],
    ] as const) {
      const job = await runJob();
      const repository = fakeRepository("octo", "app");
      job.github.addRoutes(...repository.routes, (request, url) =>
        request.method === "POST" && url.pathname === "/repos/octo/app/pulls"
          ? {
              status: 403,
              json: {
                message: refusal,
                documentation_url: "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
                status: "403",
              },
            }
          : undefined,
      );
      const step = await runStep({ workspace: job.checkout, github: job.github, inputs: publishInputs, jobId: "job-publish" });
      expect(step.code).toBe(1);
      expect(errorLines(step.stdout)).toHaveLength(1);
      expect(errorLines(step.stdout)[0]).toContain(`(403: ${refusal})`);
      expect(errorLines(step.stdout)[0]).toContain(says);
      await fake?.close();
      fake = undefined;
    }
  });
});

describe.skipIf(!bwrap.ok)("the base environment across workflow runs (the Actions cache)", () => {
  /** A setup that installs: what it made, and when, is in node_modules/ (ignored), so a second install shows. */
  const SETUP = "mkdir -p node_modules/dep && date +%s%N >> node_modules/dep/installed";
  const ENV_INPUTS = { ...RUN_INPUTS, sandbox: "bwrap", setup: SETUP, "agent-cmd": agent("fixes-add.sh") };

  /**
   * One workflow run's `handoff` job on a fresh runner: a new checkout of the same commit at the same path (GitHub's
   * `/home/runner/work/<repo>/<repo>`, here `<work>/app`), and an empty handoff cache.
   */
  async function workflowRun(github: FakeGitHub, bare: string, work: string, id: string) {
    const checkout = join(work, "app");
    rmSync(checkout, { recursive: true, force: true });
    gitIn(work, "clone", "-q", bare, checkout);
    const cacheDir = join(tempDir("handoff-runner-cache"), "handoff");
    const step = await runStep({ workspace: checkout, github, inputs: ENV_INPUTS, workflowRun: id, env: { HANDOFF_CACHE_DIR: cacheDir } });
    expect(step.outputs.get("verdict"), step.stdout + step.stderr).toBe("verified");
    const result = JSON.parse(readFileSync(join(step.outputs.get("run-dir")!, "result.json"), "utf8"));
    return { step, environment: result.environment as { key: string; source: string } };
  }

  async function aRepository() {
    const source = await makeRepo(FAILING_ADD_PROJECT);
    const bare = join(tempDir("handoff-origin"), "app.git");
    gitIn(source, "clone", "-q", "--bare", source, bare);
    return { bare, work: tempDir("handoff-work") };
  }

  test("the first workflow run builds the environment and saves it; the second, on the same commit, restores it and installs nothing", async () => {
    const { github, cache } = await standIn();
    const { bare, work } = await aRepository();

    const first = await workflowRun(github, bare, work, "c0ffee00-0000-4000-8000-000000000011");
    expect(first.environment.source).toBe("built");
    const key = first.environment.key;
    expect(first.step.stdout).toContain(`base environment ${key.slice(0, 12)} is not in the Actions cache: the run builds it`);
    expect(first.step.stderr).toContain(`[setup] $ ${SETUP}`);
    console.log(
      first.step.stdout
        .split("\n")
        .filter((l) => /environment|cache|warning/i.test(l))
        .join("\n"),
    );
    expect(cache.entries).toEqual([
      expect.objectContaining({ key: expect.stringMatching(new RegExp(`^handoff-environment-${key}-[0-9a-f]{64}$`)), finalized: true }),
    ]);
    expect(first.step.stdout).toContain(`saved to the Actions cache as ${cache.entries[0]!.key}`);

    const second = await workflowRun(github, bare, work, "c0ffee00-0000-4000-8000-000000000012");
    expect(second.step.stdout).toContain(`base environment ${key.slice(0, 12)} restored from the Actions cache (${cache.entries[0]!.key})`);
    expect(second.environment).toMatchObject({ key, source: "reused" });
    expect(second.step.stderr).not.toContain("[setup]");
    expect(second.step.stdout).toContain("not saved: the run reused it");
    expect(cache.entries).toHaveLength(1);
  });

  test("an archive changed in the Actions cache after it was saved is refused, and the run builds the environment again", async () => {
    const { github, cache } = await standIn();
    const { bare, work } = await aRepository();
    const first = await workflowRun(github, bare, work, "c0ffee00-0000-4000-8000-000000000021");
    const stored = cache.entries[0]!;
    // A tracked file of the environment changed in storage, the entry still a valid archive: the test it runs would
    // then always pass. (The entry is zstd over tar over handoff's tar: the same length keeps both tars valid.)
    const archive = execFileSync("zstd", ["-d", "-c"], { input: stored.archive });
    const at = archive.indexOf("if (add(2, 2) !== 4)");
    expect(at).toBeGreaterThan(0);
    archive.write("if (add(2, 2) === 5)", at);
    stored.archive = execFileSync("zstd", ["-c", "-q"], { input: archive });

    const second = await workflowRun(github, bare, work, "c0ffee00-0000-4000-8000-000000000022");
    expect(second.step.stdout).toMatch(
      new RegExp(
        `base environment ${first.environment.key.slice(0, 12)} from the Actions cache \\(${stored.key}\\) refused: the archive's sha256 is [0-9a-f]{12}, not the [0-9a-f]{12} it was saved with; the run builds it again`,
      ),
    );
    expect(second.environment.source).toBe("built");
    expect(second.step.stderr).toContain("[setup]");
    // Saved again under its own sha256: the next run restores the newer entry.
    expect(cache.entries.map((entry) => entry.finalized)).toEqual([true, true]);
  });
});
