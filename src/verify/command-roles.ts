import { SHELLS, type SimpleCommand } from "./command-words.js";

/**
 * What each word of a simple command does with the file it names (issue 26 item 1). Only a word that names what is
 * *executed* (`sh X`, `node X`, `./X`, `. X`) or *loaded as configuration* (`--config X`, `-r X`, `--require X`…),
 * or the test files a test runner is given, makes a file a verification input. Every other word is *mentioned*:
 * data or a target (`grep -q fixed a.txt`, `eslint *.js`, `babel src -d dist`): what the task may change.
 */
export type WordRole =
  /** Run as a program or a script; `shell`: a shell script, whose own commands are read in turn. */
  | { readonly kind: "executed"; readonly word: string; readonly shell: boolean; readonly by: string }
  | { readonly kind: "config"; readonly word: string; readonly by: string }
  /** Given to a test runner: test files, or a glob or directory of them. */
  | { readonly kind: "tests"; readonly word: string; readonly glob: boolean; readonly runner: string; readonly by: string }
  | { readonly kind: "mentioned"; readonly word: string; readonly glob: boolean; readonly by: string };

export interface CommandRoles {
  readonly roles: readonly WordRole[];
  /** The command a wrapper runs (`nyc mocha`, `python -m pytest`, `cross-env A=1 jest`), read as a command of its own. */
  readonly inner: readonly string[] | null;
}

const SOURCE = new Set([".", "source"]);
const INTERPRETERS = new Set([
  "node",
  "nodejs",
  "python",
  "python2",
  "python3",
  "pypy3",
  "ruby",
  "perl",
  "php",
  "tsx",
  "ts-node",
  "ts-node-esm",
  "babel-node",
  "esno",
  "esr",
  "coffee",
  "deno",
  "bun",
]);
const TEST_RUNNERS = new Set([
  "mocha",
  "_mocha",
  "jest",
  "vitest",
  "tap",
  "ava",
  "tape",
  "uvu",
  "jasmine",
  "karma",
  "playwright",
  "cypress",
  "pytest",
  "py.test",
  "lab",
  "qunit",
  "borp",
  "brittle",
  "zora",
  "tsd",
]);
/** Subcommands of runners and interpreters: words, not files. */
const SUBCOMMANDS = new Set(["run", "test", "watch", "start", "exec", "open"]);
/** Wrappers that run the command after their own options. */
const WRAPPERS = new Set(["nyc", "c8", "cross-env", "cross-env-shell", "dotenv", "xvfb-run", "with-env"]);

/** Options whose value is loaded as configuration or code, whatever the command (`--config=X` too). */
const CONFIG_OPTIONS = new Set([
  "--config",
  "-c",
  "--config-file",
  "--configFile",
  "--require",
  "-r",
  "--import",
  "--loader",
  "--experimental-loader",
  "--env-file",
  "--setup",
  "--setup-file",
  "--setupFiles",
  "--setup-files",
  "--setupFilesAfterEnv",
  "--globalSetup",
  "--global-setup",
  "--globalTeardown",
  "--global-teardown",
  "--rootDir",
  "--root-dir",
  "--rcfile",
  "--nycrc-path",
  "--file",
  "--preload",
  "--reporter",
  "--test-reporter",
  "--testEnvironment",
  "--resolver",
  "--snapshotResolver",
  "--project",
  "--tsconfig",
  "--spec",
]);
/** Options of an interpreter whose value is data or inline code: the next word is theirs, not a script. */
const VALUED_OPTIONS = new Set([
  "-e",
  "--eval",
  "-p",
  "--print",
  "-C",
  "--conditions",
  "--test-name-pattern",
  "--test-reporter-destination",
  "--input-type",
  "-W",
  "-X",
  "-o",
  "--title",
  "--stack-size",
  "-t",
  "--testNamePattern",
  "-k",
  "-m",
  "--ignore",
  "--grep",
  "-g",
  "--timeout",
  "--include",
  "--exclude",
  "-n",
]);
/** Options after which an interpreter runs no script file: the code is inline. */
const INLINE_CODE = new Set(["-e", "--eval", "-p", "--print", "-c"]);

function baseName(word: string): string {
  return word.slice(word.lastIndexOf("/") + 1);
}

/** `--opt=value` → [--opt, value]; other words → [word, null]. */
function splitOption(word: string): [string, string | null] {
  if (!word.startsWith("-")) return [word, null];
  const equals = word.indexOf("=");
  return equals === -1 ? [word, null] : [word.slice(0, equals), word.slice(equals + 1)];
}

/**
 * The roles of a simple command's words. `label` names where the command came from in a `by` (`script "lint"`).
 * The command's own name is executed when it is a path (`./check.sh`, `scripts/test`).
 */
export function commandRoles(simple: SimpleCommand, label: string): CommandRoles {
  const words = simple.words;
  const roles: WordRole[] = [];
  const first = words[0] ?? "";
  const name = baseName(first);
  const by = (what: string) => `${what} (${label})`;
  if (first.includes("/")) roles.push({ kind: "executed", word: first, shell: /\.(sh|bash)$/u.test(first), by: by(`run as \`${first}\``) });
  for (const value of simple.assignedValues) rolesOfAssignment(value, roles, by("an assignment"));
  // `sh < x.sh` runs x.sh; `sh check.sh < data.txt` and `grep x < data.txt` read data.
  const scriptless = (SHELLS.has(name) || INTERPRETERS.has(name)) && !words.slice(1).some((word) => !word.startsWith("-"));
  for (const read of simple.reads)
    roles.push(
      scriptless
        ? { kind: "executed", word: read, shell: SHELLS.has(name), by: by(`read by ${name} as its script`) }
        : { kind: "mentioned", word: read, glob: false, by: by(`read by ${name || "the command"} as input`) },
    );
  const globs = new Set(simple.globs);
  const args = words.slice(1);

  if (SOURCE.has(name)) {
    if (args[0] !== undefined) roles.push({ kind: "executed", word: args[0], shell: true, by: by(`sourced by \`${name}\``) });
    return { roles, inner: null };
  }
  if (SHELLS.has(name)) {
    // `sh -c '…'`: the string is read as commands of its own (command-words.ts); no file is its script.
    if (args.some((arg) => /^-[A-Za-z]*c[A-Za-z]*$/u.test(arg))) return { roles, inner: null };
    const script = operandIndex(args, new Set(["-o", "+o"]));
    if (script !== -1) {
      roles.push({ kind: "executed", word: args[script]!, shell: true, by: by(`run by \`${name}\``) });
      for (const arg of args.slice(script + 1)) roles.push(mentioned(arg, globs, by(`an argument of ${args[script]}`)));
    }
    return { roles, inner: null };
  }
  if (WRAPPERS.has(name)) return { roles: [...roles, ...optionRoles(args, name, by, globs).roles], inner: afterOptions(args) };
  if (INTERPRETERS.has(name)) return interpreterRoles(name, args, roles, by, globs);
  const runner = TEST_RUNNERS.has(name);
  let subcommandSeen = false;
  for (let i = 0; i < args.length; i++) {
    const [option, value] = splitOption(args[i]!);
    if (option.startsWith("-")) {
      const taken = value ?? (CONFIG_OPTIONS.has(option) || VALUED_OPTIONS.has(option) ? args[i + 1] : undefined);
      if (value === null && taken !== undefined) i++;
      if (taken !== undefined && CONFIG_OPTIONS.has(option)) roles.push(configRole(option, taken, name, by, globs));
      continue;
    }
    if (runner && !subcommandSeen && SUBCOMMANDS.has(option)) {
      subcommandSeen = true;
      continue;
    }
    roles.push(
      runner
        ? { kind: "tests", word: option, glob: globs.has(option), runner: name, by: by(`given to ${name} as tests`) }
        : mentioned(option, globs, by(`an argument of ${name}`)),
    );
  }
  return { roles, inner: null };
}

function mentioned(word: string, globs: ReadonlySet<string>, by: string): WordRole {
  return { kind: "mentioned", word, glob: globs.has(word), by };
}

function configRole(option: string, value: string, name: string, by: (what: string) => string, globs: ReadonlySet<string>): WordRole {
  if (option === "--spec") return { kind: "tests", word: value, glob: globs.has(value), runner: name, by: by(`given to ${name} as tests`) };
  return { kind: "config", word: value, by: by(`loaded by ${name} through ${option}`) };
}

/** `NODE_OPTIONS="--require ./hook.cjs"`: options inside the value are read as options; a plain value naming a file is configuration. */
function rolesOfAssignment(value: string, roles: WordRole[], by: string): void {
  const parts = value.split(/\s+/u).filter((part) => part !== "");
  if (parts.length === 1 && !parts[0]!.startsWith("-")) {
    roles.push({ kind: "config", word: parts[0]!, by });
    return;
  }
  for (let i = 0; i < parts.length; i++) {
    const [option, inline] = splitOption(parts[i]!);
    if (!option.startsWith("-")) continue;
    const taken = inline ?? (CONFIG_OPTIONS.has(option) ? parts[i + 1] : undefined);
    if (inline === null && taken !== undefined) i++;
    if (taken !== undefined && CONFIG_OPTIONS.has(option)) roles.push({ kind: "config", word: taken, by });
  }
}

/** The config options among a wrapper's or interpreter's options, up to its first operand. */
function optionRoles(
  args: readonly string[],
  name: string,
  by: (what: string) => string,
  globs: ReadonlySet<string>,
): { roles: WordRole[]; operand: number; inline: boolean } {
  const roles: WordRole[] = [];
  for (let i = 0; i < args.length; i++) {
    const [option, value] = splitOption(args[i]!);
    if (option === "--") return { roles, operand: i + 1 < args.length ? i + 1 : -1, inline: false };
    if (!option.startsWith("-")) return { roles, operand: i, inline: false };
    if (INLINE_CODE.has(option) && name !== "cross-env" && name !== "nyc" && name !== "c8") return { roles, operand: -1, inline: true };
    const taken = value ?? (CONFIG_OPTIONS.has(option) || VALUED_OPTIONS.has(option) ? args[i + 1] : undefined);
    if (value === null && taken !== undefined && option !== "-m") i++;
    if (option === "-m") return { roles, operand: i + 1 < args.length ? i + 1 : -1, inline: false };
    if (taken !== undefined && CONFIG_OPTIONS.has(option)) roles.push(configRole(option, taken, name, by, globs));
  }
  return { roles, operand: -1, inline: false };
}

/** The words after a wrapper's options and leading `NAME=value` assignments (cross-env's): the command it runs. */
function afterOptions(args: readonly string[]): readonly string[] | null {
  let i = 0;
  while (i < args.length && (args[i]!.startsWith("-") || /^[A-Za-z_][A-Za-z0-9_]*=/u.test(args[i]!))) {
    if (args[i] === "--") {
      i++;
      break;
    }
    i += CONFIG_OPTIONS.has(args[i]!) || VALUED_OPTIONS.has(args[i]!) ? 2 : 1;
  }
  return i < args.length ? args.slice(i) : null;
}

/**
 * `node X args`: X is executed, its arguments mentioned; `node --test a b` runs a and b as tests; `python -m
 * pytest …` runs pytest; `deno test`/`bun test` run tests; `node -e '…'` runs no file.
 */
function interpreterRoles(
  name: string,
  args: readonly string[],
  roles: WordRole[],
  by: (what: string) => string,
  globs: ReadonlySet<string>,
): CommandRoles {
  const options = optionRoles(args, name, by, globs);
  roles.push(...options.roles);
  if (options.inline || options.operand === -1) return { roles, inner: null };
  const moduleRun = args[options.operand - 1] === "-m";
  if (moduleRun) return { roles, inner: args.slice(options.operand) };
  const testMode =
    args.slice(0, options.operand).includes("--test") || ((name === "deno" || name === "bun") && args[options.operand] === "test");
  let start = options.operand;
  if ((name === "deno" || name === "bun") && SUBCOMMANDS.has(args[start]!)) start++;
  if (testMode) {
    for (const arg of args.slice(start))
      if (!arg.startsWith("-"))
        roles.push({ kind: "tests", word: arg, glob: globs.has(arg), runner: name, by: by(`given to ${name} as tests`) });
    return { roles, inner: null };
  }
  const script = args[start];
  if (script === undefined) return { roles, inner: null };
  roles.push({ kind: "executed", word: script, shell: false, by: by(`run by \`${name}\``) });
  for (const arg of args.slice(start + 1)) roles.push(mentioned(arg, globs, by(`an argument of ${script}`)));
  return { roles, inner: null };
}

/** The index of a shell's script operand: the first word that is not an option (`-o pipefail` takes its value). */
function operandIndex(args: readonly string[], valued: ReadonlySet<string>): number {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") return i + 1 < args.length ? i + 1 : -1;
    if (valued.has(arg)) {
      i++;
      continue;
    }
    if (!arg.startsWith("-") && !arg.startsWith("+")) return i;
  }
  return -1;
}
