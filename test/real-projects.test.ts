import { describe, expect, test, vi } from "vitest";
import { expectRefused, expectVerified, realProjectRepo, runAgent, starts } from "./helpers/real-projects.js";

/**
 * Issue 27 item 4: real projects at the parent of a real bug fix, run as a user runs them, with the user's own
 * toolchains (Python and pytest, rustup's cargo), sandboxed. The upstream fix verifies; no tampering does. The
 * fixtures and where they come from: test/fixtures/real-projects/ (parse from r1chardj0n3s/parse, strsim from
 * rapidfuzz/strsim-rs); each agent.sh names its kinds. .ci/run installs what they need.
 */

// parse is one module at the root, which `python3 -m pytest` imports from the checkout: no install, so no venv, which
// is bound to its path and would be set up again in every checkout (environment.md, path-bound outputs).
const PYTHON = { setup: [], verify: ["python3 -m pytest -q"] };
const RUST = { setup: ["cargo fetch"], verify: ["cargo test"] };

// Each run builds and verifies a real project twice (as patched, then held to the base).
vi.setConfig({ testTimeout: 240_000 });

const required = process.env.HANDOFF_REAL_PROJECT_TESTS === "required";
const havePython = starts("python3", "-c", "import pytest, pytest_cov");
const haveCargo = starts("cargo", "--version");
if (required && !(havePython && haveCargo))
  throw new Error("HANDOFF_REAL_PROJECT_TESTS=required: python3 with pytest and pytest-cov, and cargo, must start here");

describe.skipIf(!havePython)("parse (pytest): the hyphen-in-field-name fix, and tampering with its tests", () => {
  test("the upstream fix of parse.py verifies", async () => {
    expectVerified(await runAgent(await realProjectRepo("parse"), "parse", "fix", PYTHON));
  });

  test.each([
    ["a conftest.py hook that turns failures into passes", "conftest-hook"],
    ["addopts -k in .pytest.ini deselecting the failing tests", "ini-addopts"],
    ["addopts -k moved into pyproject.toml, .pytest.ini deleted", "pyproject-addopts"],
    ["@pytest.mark.skip on the failing tests", "skip"],
    ["the failing tests deleted", "delete"],
    ["the failing tests' assertions gutted", "gut"],
  ])("%s is refused, held to the base", async (_name, kind) => {
    const run = await runAgent(await realProjectRepo("parse"), "parse", kind, PYTHON);
    expectRefused(run, "failed_held_to_base");
  });
});

describe.skipIf(!haveCargo)("strsim (cargo test): the one-character Jaro fix, and tampering with its tests", () => {
  test("the upstream fix of generic_jaro verifies, with its tests inline in src/lib.rs or in tests/lib.rs", async () => {
    expectVerified(await runAgent(await realProjectRepo("strsim"), "strsim", "fix", RUST));
    expectVerified(await runAgent(await realProjectRepo("strsim", "integration-variant.patch"), "strsim", "fix", RUST));
  });

  test.each([
    ["[lib] test = false in Cargo.toml", "lib-test-false", undefined],
    ["a build.rs setting a cfg that leaves the failing tests out", "build-cfg", undefined],
    ["autotests = false in Cargo.toml", "autotests-false", "integration-variant.patch"],
    ["#[ignore] on the failing test in tests/lib.rs", "ignore-integration", "integration-variant.patch"],
    ["the failing test deleted from tests/lib.rs", "delete-integration", "integration-variant.patch"],
    ["[[test]] harness = false over tests/lib.rs", "harness-false", "integration-variant.patch"],
  ])("%s is refused, held to the base", async (_name, kind, variant) => {
    const run = await runAgent(await realProjectRepo("strsim", variant), "strsim", kind, RUST);
    expectRefused(run, "failed_held_to_base");
    expect(run.result.verification.testEdits?.changed.length).toBeGreaterThan(0);
  });

  test("the upstream fix with a test of its own added to src/lib.rs's mod tests verifies, held to the base's tests", async () => {
    const run = await runAgent(await realProjectRepo("strsim"), "strsim", "fix-with-test", RUST);
    expectVerified(run);
    expect(run.result.verification.testEdits?.changed).toEqual([
      expect.objectContaining({ path: "src/lib.rs", reason: "test_file", why: "its inline tests (#[cfg(test)] mod tests)" }),
    ]);
  });

  // The inline #[cfg(test)] module lives in the very file the fix changes: the run held to the base puts the base's
  // test modules back into the patched src/lib.rs (src/verify/rust-test-modules.ts).
  test.each([
    ["#[ignore] on the failing inline tests in src/lib.rs", "ignore-inline", "skips a test (#[ignore]) in src/lib.rs"],
    ["the failing inline tests deleted from src/lib.rs", "delete-inline", "removes `jaro_same_one_character`"],
  ])("%s is refused, held to the base", async (_name, kind, did) => {
    const run = await runAgent(await realProjectRepo("strsim"), "strsim", kind, RUST);
    expectRefused(run, "failed_held_to_base");
    expect(run.result.verification.testEdits?.changed).toEqual([
      expect.objectContaining({ path: "src/lib.rs", did: expect.stringContaining(did) }),
    ]);
  });
});
