import { execFileSync } from "node:child_process";
import { describe, expect, test } from "vitest";
import type { RunOptions } from "../src/run/options.js";
import { makeRepo } from "./helpers/repo.js";
import { delegateWithoutSandbox } from "./helpers/run.js";

/**
 * Bytecode and test-runner caches (src/patch/tool-caches.ts) are no change of the patch's, whoever writes them: the
 * agent running the tests in its workspace, or the verify commands in the checkout. A small Python project with no
 * `.gitignore`, as `git init` leaves one; the runs go without the sandbox, where the user's own python3 starts
 * (docs/gates.md, "Tool caches").
 */

const PROJECT = {
  "calc.py": "def add(a, b):\n    return a - b\n",
  "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n",
};
const FIX = "sed -i 's/a - b/a + b/' calc.py";
/** Imports the module, which writes __pycache__/calc.cpython-*.pyc, and checks the fix. */
const CHECK = `python3 -c 'import sys, calc; sys.exit(calc.add(2, 2) != 4)'`;

const hasPytest = (() => {
  try {
    execFileSync("python3", ["-m", "pytest", "--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

async function run(agentCmd: string, verify: string, files: Record<string, string> = PROJECT, options: Partial<RunOptions> = {}) {
  const repo = await makeRepo(files);
  const { result } = await delegateWithoutSandbox(repo, agentCmd, { verify: [verify], ...options });
  return result;
}

describe("tool caches are not the patch's changes", () => {
  test("an honest fix whose verify command writes __pycache__/ is verified", async () => {
    const result = await run(FIX, CHECK);
    expect(result.terminalReason, result.summary).toBe("verified");
    expect(result.patch?.files.map((f) => f.path)).toEqual(["calc.py"]);
  });

  test.runIf(hasPytest)(
    "an honest fix verified by real pytest (__pycache__/ with its rewritten tests, .pytest_cache/) is verified",
    async () => {
      const result = await run(FIX, "python3 -m pytest -q");
      expect(result.terminalReason, result.summary).toBe("verified");
      expect(result.verification.commands.map((c) => c.exitCode)).toEqual([0]);
    },
  );

  test("an agent that ran the tests in its workspace: its .pyc files and caches are left out of the patch, with a warning naming them", async () => {
    const caches = "mkdir -p .pytest_cache/v/cache .mypy_cache && echo '{}' > .pytest_cache/v/cache/lastfailed && echo x > .mypy_cache/x";
    const result = await run(`${FIX} && ${CHECK} && ${caches}`, CHECK);
    expect(result.terminalReason, result.summary).toBe("verified");
    expect(result.patch?.files.map((f) => f.path)).toEqual(["calc.py"]);
    expect(result.policy.violations).toEqual([]);
    const left = result.policy.warnings.filter((w) => w.rule === "tool_caches_left_out");
    expect(left).toEqual([
      expect.objectContaining({ path: "", message: expect.stringContaining(".mypy_cache/, .pytest_cache/, __pycache__/") }),
    ]);
    expect(result.policy.warnings.filter((w) => w.rule === "ignored_files_added")).toEqual([]);
  });

  test("a verify command that leaves a new file beside the caches: verification_changed_patch naming it as new and untracked", async () => {
    const result = await run(FIX, `${CHECK} && echo 4 > result.txt`);
    expect(result.terminalReason).toBe("verification_failed");
    expect(result.detail).toBe("verification_changed_patch");
    expect(result.summary).toBe(
      "the verification commands wrote 1 new untracked file (result.txt) that no .gitignore covers: the tested tree is not the patch",
    );
    expect(result.hint).toContain(".gitignore");
  });

  test("a verify command that rewrites a file of the patch: verification_changed_patch naming it as a changed tracked file", async () => {
    const result = await run(FIX, `${CHECK} && echo '# formatted' >> calc.py`);
    expect(result.detail).toBe("verification_changed_patch");
    expect(result.summary).toBe("the verification commands changed 1 tracked file (calc.py): the tested tree is not the patch");
    expect(result.hint).toContain("read-only");
  });

  test("a file the repository tracks under __pycache__/ stays a change: the agent's edit is in the patch, a verify command's edit changed the tested tree", async () => {
    const files = { ...PROJECT, "__pycache__/committed.pyc": "kept on purpose\n" };
    // A setup gives a base environment (an overlay workspace where it works): its __pycache__/ is no setup leftover either.
    // A fix that changes calc.py's size: Python trusts setup's bytecode while the source's mtime second and size are
    // unchanged, and this agent edits within a second of setup (a real agent takes longer).
    const resized = "sed -i 's/a - b/a + b  # fixed/' calc.py";
    const edited = await run(`${resized} && echo edited >> __pycache__/committed.pyc && ${CHECK}`, CHECK, files, {
      setup: ["python3 -c 'import calc'"],
    });
    expect(edited.terminalReason, edited.summary).toBe("verified");
    // No setup_changed_tree for setup's bytecode; the agent's own next to the tracked file is named.
    expect(edited.policy.warnings.filter((w) => w.rule !== "no_sandbox")).toEqual([
      expect.objectContaining({ rule: "tool_caches_left_out", message: expect.stringMatching(/: __pycache__\/calc\.cpython-\d+\.pyc$/) }),
    ]);
    expect(edited.patch?.files.map((f) => `${f.change} ${f.path}`)).toEqual(["modified __pycache__/committed.pyc", "modified calc.py"]);
    const rewritten = await run(FIX, `${CHECK} && echo rewritten >> __pycache__/committed.pyc`, files);
    expect(rewritten.detail).toBe("verification_changed_patch");
    expect(rewritten.summary).toContain("changed 1 tracked file (__pycache__/committed.pyc)");
  });
});
