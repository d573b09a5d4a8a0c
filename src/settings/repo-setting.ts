/**
 * `-C, --repo DIR`: its own module so that `show`, `list` and `apply` take it without loading the whole settings table
 * (which names every backend).
 */
export const REPO_SETTING = {
  option: "repo",
  flag: "repo",
  short: "C",
  kind: "value",
  meta: "DIR",
  file: { key: "repo", schema: "text", lineOnly: true },
  help: { run: ["the source repository (default: current directory)"] },
} as const;
