const CONFIG_EXTENSIONS = "{js,cjs,mjs,ts,cts,mts,json}";

/**
 * Test-runner configuration files, at any depth (a monorepo's packages have their own): a change to one warns
 * `verification_config` (risk-paths.ts), so the reviewer sees it. Whether the held run puts it back is decided by
 * kind (config-kinds.ts), which covers every one of these and more.
 */
export const RUNNER_CONFIG_GLOBS: readonly string[] = [
  ...["vitest", "vite", "jest", "playwright", "cypress", "ava"].map((runner) => `${runner}.config.${CONFIG_EXTENSIONS}`),
  `karma.conf.${CONFIG_EXTENSIONS}`,
  "vitest.workspace.*",
  `{jest,vitest}.setup.${CONFIG_EXTENSIONS}`,
  ".mocharc*",
  ".nycrc*",
  ".c8rc*",
  "pytest.ini",
  "conftest.py",
  "tox.ini",
  "noxfile.py",
  ".rspec",
  "phpunit.xml*",
];

/** Test files: existing tests whose edit or deletion can make verification pass vacuously. */
export const TEST_FILE_PATTERNS: readonly RegExp[] = [
  /(^|\/)(tests?|__tests__|spec|specs)\//u,
  // What the tests are checked against or replaced with: mocks (jest uses a root __mocks__/x.js for the module x),
  // snapshots, fixtures and Go's testdata.
  /(^|\/)(__mocks__|__snapshots__|__fixtures__|fixtures|testdata)\//u,
  /(^|\/)tests?\.[^/]+$/u,
  /\.(test|spec)\.[^/]+$/u,
  /(^|\/)test_[^/]+\.py$/u,
  /_test\.(go|py|rb)$/u,
];

/** One alternation of all the patterns: a repository of 200,000 paths is tested once per path, not 20 times. */
const anyOf = (patterns: readonly RegExp[]) => new RegExp(patterns.map((pattern) => `(?:${pattern.source})`).join("|"), "u");
const TEST_FILE = anyOf(TEST_FILE_PATTERNS);

export function isTestFile(path: string): boolean {
  return TEST_FILE.test(path);
}
