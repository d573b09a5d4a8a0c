import type { PolicyFinding, WarningRule } from "./findings.js";
import { globToRegExp } from "./glob.js";
import { RUNNER_CONFIG_GLOBS, isTestFile } from "../../verify/patterns.js";
// Up to the registry: each agent CLI names its own project files in its row, so a new backend is flagged here too.
import { CLI_BACKEND_ROWS } from "../../../backends/index.js";

/** Agents handoff does not run, whose committed files still steer a user's own runs of them. */
const OTHER_AGENTS_FILES = ["GEMINI.md", ".cursor/", ".cursorrules", ".github/copilot-instructions.md"];

/**
 * Paths that steer what runs later (CI, the user's agents and tools, installs, the verification itself): a change
 * there is allowed but always shown to the reviewer (docs/threat-model.md P8, P9).
 */
const RISKY: readonly { readonly rule: WarningRule; readonly globs: readonly string[]; readonly why: string }[] = [
  {
    rule: "ci_config",
    globs: [
      ".github/",
      ".gitlab-ci.yml",
      ".circleci/",
      "Jenkinsfile",
      ".travis.yml",
      "azure-pipelines.yml",
      ".buildkite/",
      ".husky/",
      ".pre-commit-config.yaml",
      ".devcontainer/",
      ".envrc",
      ".vscode/",
      ".idea/",
    ],
    why: "runs in CI or in the user's tools",
  },
  {
    rule: "agent_instructions",
    globs: [...new Set([...CLI_BACKEND_ROWS.flatMap((row) => row.info.projectFiles), ...OTHER_AGENTS_FILES])],
    why: "instructs or configures coding agents",
  },
  {
    rule: "package_manifest",
    globs: [
      "package.json",
      "package-lock.json",
      "npm-shrinkwrap.json",
      "yarn.lock",
      "pnpm-lock.yaml",
      ".npmrc",
      ".yarnrc",
      ".yarnrc.yml",
      "pyproject.toml",
      "setup.py",
      "setup.cfg",
      "requirements*.txt",
      "Pipfile",
      "Pipfile.lock",
      "poetry.lock",
      "Cargo.toml",
      "Cargo.lock",
      "go.mod",
      "go.sum",
      "Gemfile",
      "Gemfile.lock",
      "pom.xml",
      "build.gradle",
      "build.gradle.kts",
      "Makefile",
      "CMakeLists.txt",
      "Dockerfile",
    ],
    why: "changes what gets installed or built",
  },
  {
    rule: "verification_config",
    // The test-runner configs are verification inputs too (verify/patterns.ts); these extra ones warn only.
    globs: [".handoff.json", ...RUNNER_CONFIG_GLOBS, "tsconfig*.json", "babel.config.*", ".babelrc"],
    why: "changes how verification runs",
  },
  {
    rule: "git_config_file",
    globs: [".gitattributes", ".gitignore", ".gitmodules", ".mailmap"],
    why: "changes how git reads or hides files",
  },
];

const COMPILED = RISKY.map((entry) => ({ ...entry, patterns: entry.globs.map(globToRegExp) }));

export function riskWarnings(path: string, change: "added" | "modified" | "deleted"): PolicyFinding[] {
  const findings: PolicyFinding[] = [];
  for (const entry of COMPILED) {
    if (entry.patterns.some((pattern) => pattern.test(path))) {
      findings.push({ path, rule: entry.rule, message: `${change}: ${entry.why}` });
    }
  }
  // A test the task did not create: editing or deleting existing tests can make verification pass vacuously.
  if (change !== "added" && isTestFile(path)) {
    findings.push({ path, rule: "test_file_changed", message: `${change} an existing test file` });
  }
  return findings;
}
