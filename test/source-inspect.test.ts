import { mkdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { inspectSource } from "../src/clone/source-repo.js";
import { UsageError } from "../src/lib/errors.js";
import { gitIn, makeRepo, tempDir } from "./helpers/repo.js";

/** inspectSource: where the source's parts are, from wherever in it the user names, and each refusal as its own error. */
describe("inspectSource", () => {
  test("from a subdirectory: the top level, the git dir, the base commit", async () => {
    const repo = realpathSync(await makeRepo({ "src/a.txt": "a\n" }));
    const source = await inspectSource(join(repo, "src"));
    expect(source).toEqual({
      topLevel: repo,
      gitDir: join(repo, ".git"),
      commonDir: join(repo, ".git"),
      objectFormat: "sha1",
      baseCommit: gitIn(repo, "rev-parse", "HEAD").trim(),
      filterDrivers: [],
    });
  });

  test("a linked worktree: its own git dir, the main repository's common dir, its own HEAD", async () => {
    const repo = realpathSync(await makeRepo({ "a.txt": "a\n" }));
    const linked = join(realpathSync(tempDir("linked")), "wt");
    gitIn(repo, "worktree", "add", "-q", "-b", "other", linked);
    gitIn(linked, "commit", "-q", "--allow-empty", "-m", "on the worktree");
    const source = await inspectSource(linked);
    expect(source.topLevel).toBe(linked);
    expect(source.gitDir).toBe(join(repo, ".git", "worktrees", "wt"));
    expect(source.commonDir).toBe(join(repo, ".git"));
    expect(source.baseCommit).toBe(gitIn(linked, "rev-parse", "HEAD").trim());
  });

  test("the filter drivers the source's config defines", async () => {
    const repo = await makeRepo({ "a.txt": "a\n" });
    gitIn(repo, "config", "filter.lfs.clean", "git-lfs clean -- %f");
    expect((await inspectSource(repo)).filterDrivers).toEqual(["lfs"]);
  });

  test.each([
    ["inside its git directory", (repo: string) => join(repo, ".git"), "inside_git_dir", /inside a repository's git directory/],
    ["not in a repository", () => tempDir("plain"), "not_a_repository", /is not inside a git repository/],
    ["a missing directory", (repo: string) => join(repo, "missing"), "not_a_repository", /no such directory/],
  ])("%s: a usage error naming it", async (_name, at, code, message) => {
    const repo = await makeRepo({ "a.txt": "a\n" });
    const refused = await inspectSource(at(repo)).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UsageError);
    expect(refused).toMatchObject({ code, message: expect.stringMatching(message) });
  });

  test("a repository without a commit: no_head", async () => {
    const repo = tempDir("unborn");
    gitIn(repo, "init", "-q");
    mkdirSync(join(repo, "sub"));
    await expect(inspectSource(join(repo, "sub"))).rejects.toMatchObject({ code: "no_head" });
  });
});
