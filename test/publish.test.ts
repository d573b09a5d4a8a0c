import { createHash } from "node:crypto";
import { cpSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { type PublishRequest, publishRun } from "../src/action/publish.js";
import { PublishRefusedError } from "../src/lib/errors.js";
import { renderReport } from "../src/review/report.js";
import { loadRun } from "../src/run-dir/run-lookup.js";
import { fakeRepository } from "./helpers/fake-github/rest.js";
import { type FakeGitHub, startFakeGitHub } from "./helpers/fake-github/server.js";
import { FAILING_ADD_PROJECT, gitIn, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, delegate } from "./helpers/run.js";

/**
 * Issue 17 item 2, publish mode: the run job's artifact (a downloaded run directory) becomes a branch on the remote
 * and a pull request whose body is the report, only after the same checks as `handoff apply`, and the patch rules again.
 */
const TOKEN = "ghs_publishTestToken";
let fake: FakeGitHub | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

interface Published {
  readonly request: PublishRequest;
  readonly remote: string;
  readonly runId: string;
  readonly github: ReturnType<typeof fakeRepository>;
  readonly fake: FakeGitHub;
}

/** A verified run of the fixture, its directory copied as the artifact download would, a bare remote and a checkout of it. */
async function artifactOfARun(agentScript = "fixes-add.sh"): Promise<Published> {
  const repo = await makeRepo(FAILING_ADD_PROJECT);
  const run = await delegate(repo, agent(agentScript), { verify: ["npm test"] });
  const root = tempDir("handoff-publish");
  const downloaded = join(root, "artifact", run.result.runId);
  cpSync(run.runDir, downloaded, { recursive: true });
  const remote = join(root, "remote.git");
  gitIn(root, "clone", "-q", "--bare", repo, remote);
  const workspace = join(root, "workspace");
  gitIn(root, "clone", "-q", remote, workspace);
  const github = fakeRepository("octo", "demo");
  fake = await startFakeGitHub(...github.routes);
  const request: PublishRequest = {
    runDir: downloaded,
    repo: workspace,
    remote,
    branch: undefined,
    baseBranch: undefined,
    repository: { owner: "octo", name: "demo" },
    token: TOKEN,
    apiUrl: fake.url,
  };
  return { request, remote, runId: run.result.runId, github, fake };
}

async function refusal(request: PublishRequest): Promise<PublishRefusedError> {
  const error = await publishRun(request).then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(PublishRefusedError);
  expect((error as Error).message).not.toContain("\n");
  return error as PublishRefusedError;
}

function remoteBranches(remote: string): string {
  return gitIn(remote, "for-each-ref", "--format=%(refname)", "refs/heads");
}

describe("publishRun", () => {
  test("pushes a commit of the verified patch by the bot to the remote and opens a pull request whose body is the report", async () => {
    const { request, remote, runId, github, fake } = await artifactOfARun();
    const outcome = await publishRun(request);
    const branch = `handoff/${runId}`;
    expect(outcome).toEqual({
      branch,
      commit: gitIn(remote, "rev-parse", branch).trim(),
      // A path remote: the token is for GitHub's API only (an http(s) remote gets it too: test/action.test.ts).
      credential: "remote",
      pullRequest: { number: 1, url: "https://github.invalid/octo/demo/pull/1", created: true },
    });
    expect(gitIn(remote, "log", "-1", "--format=%an <%ae>%n%s%n%(trailers:key=Handoff-Run,valueonly)", branch)).toBe(
      `github-actions[bot] <41898282+github-actions[bot]@users.noreply.github.com>\nfix the failing test\n${runId}\n\n`,
    );
    expect(gitIn(remote, "show", `${branch}:math.js`)).toContain("return a + b;");

    const calls = fake.requests.map((call) => `${call.method} ${decodeURIComponent(call.path)}`);
    expect(calls).toEqual([
      `GET /repos/octo/demo/pulls?head=octo:${branch}&state=open&per_page=100`,
      "GET /repos/octo/demo",
      "POST /repos/octo/demo/pulls",
    ]);
    for (const call of fake.requests) expect(call.headers.authorization).toBe(`token ${TOKEN}`);
    const sent = fake.requests[2]!.json as Record<string, string>;
    expect(sent).toMatchObject({ title: "fix the failing test", head: branch, base: "main" });
    expect(sent.body).toBe(renderReport(loadRun(request.runDir), "markdown"));
    expect(github.pulls).toHaveLength(1);
  });

  test("a second publish of the same run makes the same commit and updates the open pull request instead of opening another", async () => {
    const { request, remote, runId, github, fake } = await artifactOfARun();
    const first = await publishRun(request);
    // The branch the first publish left is its own (a Handoff-Run trailer): a later job may move it.
    const second = await publishRun(request);
    expect(second.commit).toBe(first.commit);
    expect(second.pullRequest).toEqual({ ...first.pullRequest, created: false });
    expect(github.pulls).toHaveLength(1);
    expect(fake.requests.slice(3).map((call) => call.method)).toEqual(["GET", "PATCH"]);
    expect(fake.requests[4]!.path).toBe("/repos/octo/demo/pulls/1");
    expect(remoteBranches(remote)).toBe(`refs/heads/handoff/${runId}\nrefs/heads/main\n`);
  });

  test("refuses an unverified run, and asks GitHub nothing", async () => {
    const { request, remote, fake } = await artifactOfARun("does-nothing.sh");
    expect((await refusal(request)).code).toBe("not_verified");
    expect(fake.requests).toEqual([]);
    expect(remoteBranches(remote)).toBe("refs/heads/main\n");
  });

  test("refuses a tampered changes.patch (its sha256 is not result.json's)", async () => {
    const { request, remote, fake } = await artifactOfARun();
    const patch = join(request.runDir, "changes.patch");
    writeFileSync(patch, readFileSync(patch, "utf8").replace("a + b", "a * b"));
    const refused = await refusal(request);
    expect(refused.code).toBe("patch_modified");
    expect(refused.message).toMatch(/changes\.patch does not match the sha256 recorded in result\.json/);
    expect(fake.requests).toEqual([]);
    expect(remoteBranches(remote)).toBe("refs/heads/main\n");
  });

  test("refuses a result.json that does not match the schema", async () => {
    const { request, fake } = await artifactOfARun();
    const resultPath = join(request.runDir, "result.json");
    const result = JSON.parse(readFileSync(resultPath, "utf8")) as Record<string, unknown>;
    writeFileSync(resultPath, JSON.stringify({ ...result, repo: { path: "/", baseCommit: 42 } }));
    const refused = await refusal(request);
    expect(refused.code).toBe("bad_result");
    expect(refused.message).toMatch(/result\.json does not match schema version 1/);
    expect(fake.requests).toEqual([]);
  });

  test("refuses a changes.patch that is a symbolic link, even to the very bytes result.json hashed", async () => {
    const { request, remote, fake } = await artifactOfARun();
    const patch = join(request.runDir, "changes.patch");
    const elsewhere = join(tempDir("handoff-elsewhere"), "changes.patch");
    cpSync(patch, elsewhere);
    rmSync(patch);
    symlinkSync(elsewhere, patch);
    expect((await refusal(request)).code).toBe("untrusted_artifact");
    expect(fake.requests).toEqual([]);
    expect(remoteBranches(remote)).toBe("refs/heads/main\n");
  });

  test("refuses a patch that breaks handoff's patch rules although result.json hashed it (a forged artifact)", async () => {
    const { request, fake } = await artifactOfARun();
    const forged =
      "diff --git a/link b/link\nnew file mode 120000\nindex 0000000..1d6a4e1\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n";
    writeFileSync(join(request.runDir, "changes.patch"), forged);
    const resultPath = join(request.runDir, "result.json");
    const result = JSON.parse(readFileSync(resultPath, "utf8")) as { patch: { sha256: string } };
    result.patch.sha256 = createHash("sha256").update(forged).digest("hex");
    writeFileSync(resultPath, JSON.stringify(result));
    const refused = await refusal(request);
    expect(refused.code).toBe("patch_rules");
    expect(refused.message).toMatch(/patch rules: symlink \(link\)/);
    expect(fake.requests).toEqual([]);
  });

  test("refuses a branch on the remote that handoff did not make, and leaves it where it was", async () => {
    const { request, remote, runId, fake } = await artifactOfARun();
    const theirs = gitIn(remote, "rev-parse", "main").trim();
    gitIn(remote, "update-ref", `refs/heads/handoff/${runId}`, theirs);
    const refused = await refusal(request);
    expect(refused.code).toBe("foreign_branch");
    expect(refused.message).toMatch(new RegExp(`already has a branch handoff/${runId} that handoff did not make`));
    expect(gitIn(remote, "rev-parse", `handoff/${runId}`).trim()).toBe(theirs);
    expect(fake.requests).toEqual([]);
  });
});
