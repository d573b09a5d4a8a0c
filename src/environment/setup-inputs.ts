import { globToRegExp } from "../patch/rules/glob.js";
import { repoPath, simpleCommands } from "../verify/command-words.js";

/**
 * The files the setup commands depend on: a change to one means the environment built from the base no longer
 * fits. By default the manifests and lockfiles of the usual package managers, at any depth, and every tracked file a
 * setup command names (`bash scripts/setup.sh`); `--setup-inputs GLOB` and `.handoff.json` `setupInputs` add more.
 */
export const DEFAULT_SETUP_INPUTS: readonly string[] = [
  // npm, yarn, pnpm, bun
  "package.json",
  "package-lock.json",
  "npm-shrinkwrap.json",
  "yarn.lock",
  ".yarnrc",
  ".yarnrc.yml",
  "pnpm-lock.yaml",
  "pnpm-workspace.yaml",
  "bun.lock",
  "bun.lockb",
  ".npmrc",
  ".nvmrc",
  ".node-version",
  // Python
  "requirements*.txt",
  "constraints*.txt",
  "pyproject.toml",
  "poetry.lock",
  "uv.lock",
  "Pipfile",
  "Pipfile.lock",
  "setup.py",
  "setup.cfg",
  // Rust, Go, Ruby, PHP
  "Cargo.toml",
  "Cargo.lock",
  "rust-toolchain",
  "rust-toolchain.toml",
  "go.mod",
  "go.sum",
  "Gemfile",
  "Gemfile.lock",
  "*.gemspec",
  "composer.json",
  "composer.lock",
];

export interface SetupInputs {
  /** Whether a repository path is a setup input. */
  matches(path: string): boolean;
}

/** Globs as `--allow` reads them (src/patch/rules/glob.ts): without a `/`, a name at any depth. */
export function setupInputs(setup: readonly string[], extra: readonly string[]): SetupInputs {
  // One alternation: a repository of 100,000 paths is tested once per path, not 40 times.
  const pattern = new RegExp([...DEFAULT_SETUP_INPUTS, ...extra].map((glob) => `(?:${globToRegExp(glob).source})`).join("|"), "u");
  const named = new Set<string>();
  for (const command of setup) {
    for (const simple of simpleCommands(command)) {
      for (const word of [...simple.words, ...simple.reads, ...simple.assignedValues]) {
        const path = repoPath(simple.cwd, word);
        if (path !== null) named.add(path);
      }
    }
  }
  return {
    matches: (path) => {
      return named.has(path) || pattern.test(path);
    },
  };
}
