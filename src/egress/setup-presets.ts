import { basename } from "node:path";
import { simpleCommands } from "../verify/command-words.js";
import type { AllowRule } from "./allow-rules.js";
import { NETWORK_PRESETS, type PresetName } from "./presets.js";

/**
 * How a setup command's registries are inferred, one row per package manager: the program (its first word, by base
 * name) and the subcommands that install (`*`: any). Documented as this table in docs/containment.md.
 */
export const SETUP_INFERENCE: readonly {
  readonly preset: PresetName;
  readonly program: string;
  readonly subcommands: readonly string[];
}[] = [
  { preset: "npm", program: "npm", subcommands: ["ci", "install", "i", "add", "update", "exec", "x", "rebuild", "dedupe"] },
  { preset: "npm", program: "npx", subcommands: ["*"] },
  { preset: "npm", program: "yarn", subcommands: ["*"] },
  { preset: "npm", program: "pnpm", subcommands: ["*"] },
  { preset: "npm", program: "corepack", subcommands: ["*"] },
  { preset: "pypi", program: "pip", subcommands: ["install", "download", "wheel"] },
  { preset: "pypi", program: "pip3", subcommands: ["install", "download", "wheel"] },
  { preset: "pypi", program: "uv", subcommands: ["sync", "pip", "add", "run", "venv", "lock", "tool"] },
  { preset: "pypi", program: "poetry", subcommands: ["install", "add", "lock", "update"] },
  { preset: "pypi", program: "pipenv", subcommands: ["install", "sync", "lock"] },
  { preset: "pypi", program: "pdm", subcommands: ["install", "sync", "add", "lock"] },
  {
    preset: "crates",
    program: "cargo",
    subcommands: ["build", "fetch", "test", "check", "install", "run", "generate-lockfile", "update", "vendor", "clippy", "doc", "bench"],
  },
  { preset: "go", program: "go", subcommands: ["mod", "build", "test", "get", "install", "run", "vet", "generate"] },
  { preset: "github", program: "gh", subcommands: ["*"] },
];

/** `python -m pip install …` and `python3 -m pip …` are pip. */
const PYTHONS = /^python(?:\d+(?:\.\d+)?)?$/;

/**
 * The registry presets a setup command needs, read from its words (src/verify/command-words.ts): `npm ci` gets npm,
 * `pip install -r requirements.txt` pypi, `git clone https://github.com/…` github. Nothing is run or expanded; a
 * command with no such word gets nothing, and `--allow-net` names the rest.
 */
export function setupRules(commands: readonly string[]): AllowRule[] {
  const rules: AllowRule[] = [];
  const seen = new Set<string>();
  for (const command of commands) {
    for (const preset of presetsOf(command)) {
      if (seen.has(`${preset}\0${command}`)) continue;
      seen.add(`${preset}\0${command}`);
      for (const host of NETWORK_PRESETS[preset])
        rules.push({ kind: "host", host, port: null, preset, source: { kind: "setup", command } });
    }
  }
  return rules;
}

function presetsOf(command: string): PresetName[] {
  const found = new Set<PresetName>();
  for (const simple of simpleCommands(command)) {
    let words = simple.words.map((word) => word);
    if (words.length === 0) continue;
    if (PYTHONS.test(basename(words[0]!)) && words[1] === "-m" && words[2] !== undefined) words = words.slice(2);
    const program = basename(words[0]!);
    const sub = words.slice(1).find((word) => !word.startsWith("-"));
    for (const row of SETUP_INFERENCE) {
      if (row.program !== program) continue;
      if (row.subcommands.includes("*") || (sub !== undefined && row.subcommands.includes(sub))) found.add(row.preset);
    }
    if (program === "git" && ["clone", "fetch", "pull", "submodule", "ls-remote"].includes(sub ?? "") && words.some(namesGithub))
      found.add("github");
    if (program === "git" && sub === "submodule") found.add("github");
  }
  return [...found];
}

function namesGithub(word: string): boolean {
  return /(?:^|[/@.])github\.com[:/]/i.test(word) || /^https?:\/\/(?:[^/]*\.)?githubusercontent\.com\//i.test(word);
}
