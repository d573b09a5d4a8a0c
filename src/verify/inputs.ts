import { globToRegExp, matchesAnyGlob } from "../patch/rules/glob.js";
import { type SimpleCommand, repoPath, simpleCommands } from "./command-words.js";
import { RUNNER_KEYS, parsePackageJson, scriptBody, scriptNames } from "./package-json.js";
import { isRunnerConfig, isTestFile } from "./patterns.js";

/**
 * Which files of the base commit decide what verification runs (issue 12 item 1; docs/gates.md "Verification
 * inputs"). Everything is read from the base commit, never from the agent's tree: the commands as given, the base's
 * paths and its root package.json. Pure: no git, no file system; it never throws on what a command or a
 * package.json holds.
 */
export type InputReason = "named_by_command" | "package_script" | "runner_config" | "test_file" | "protected";

/** The order in which reasons win when a path has several. */
export const INPUT_REASONS: readonly InputReason[] = ["named_by_command", "package_script", "runner_config", "test_file", "protected"];

export interface VerificationInput {
  readonly path: string;
  readonly reason: InputReason;
  readonly why: string;
}

export interface VerificationInputs {
  /** Paths of the base commit that decide what verification runs, sorted, each once (first reason wins in the order above). */
  readonly files: readonly VerificationInput[];
  /** Root package.json scripts the commands run (transitively, with pre/post), by name; empty when none. */
  readonly scripts: readonly string[];
  /** The `--protect` globs, as given: an added path matching one is an input too (inputFor). */
  readonly protect: readonly string[];
  /** `files` by path, and the globs compiled: made once, for a patch of 1000 files against 50,000 inputs (inputFor). */
  readonly byPath: ReadonlyMap<string, VerificationInput>;
  readonly protectPatterns: readonly RegExp[];
}

export interface InputsRequest {
  readonly commands: readonly string[];
  readonly basePaths: readonly string[];
  readonly readBase: (path: string) => Buffer | null;
  readonly protect: readonly string[];
}

/** How many inputs request.json lists; the rest are counted (`omitted`). */
export const MAX_LISTED_INPUTS = 1000;
/** Glob words (`tests/*.py`) matched against the base tree, per run: each costs a pass over every path. */
const MAX_GLOBS = 16;
/** How deep scripts that run scripts are followed (each is followed once anyway). */
const MAX_SCRIPT_DEPTH = 16;
/** Longest command shown in a `why`. */
const SHOWN_COMMAND = 80;

const PACKAGE_JSON = "package.json";
const INSTALL_SCRIPTS = ["preinstall", "install", "postinstall", "prepublish", "preprepare", "prepare", "postprepare"];
const MAKEFILES = ["GNUmakefile", "makefile", "Makefile"];
/** Package-manager options that take the next word as their value. */
const VALUED_OPTIONS = new Set(["--prefix", "-C", "--dir", "--cwd", "--filter", "-F", "-w", "--workspace"]);

export function findVerificationInputs(request: InputsRequest): VerificationInputs {
  const base = new Set(request.basePaths);
  const found = new Map<string, VerificationInput>();
  const add = (path: string, reason: InputReason, why: string) => {
    const existing = found.get(path);
    if (!existing || INPUT_REASONS.indexOf(reason) < INPUT_REASONS.indexOf(existing.reason)) found.set(path, { path, reason, why });
  };
  const pkg = base.has(PACKAGE_JSON) ? readPackage(request.readBase) : null;
  const reader = new CommandReader(base, pkg, add);
  for (const command of request.commands) reader.read(command, { reason: "named_by_command", label: `"${shorten(command)}"`, depth: 0 });

  const scripts = [...reader.scripts].sort();
  if (base.has(PACKAGE_JSON)) {
    const shown = scripts.length > 10 ? `${scripts.slice(0, 10).join(", ")}, … (${scripts.length} in all)` : scripts.join(", ");
    if (scripts.length > 0) add(PACKAGE_JSON, "package_script", `its scripts ${shown} run by ${reader.firstScriptCommand}`);
    const keys = pkg === null ? [] : RUNNER_KEYS.filter((key) => Object.hasOwn(pkg, key));
    if (keys.length > 0) add(PACKAGE_JSON, "runner_config", `its ${keys.join(", ")} key configures a test runner`);
    else if (reader.runnerNamed !== null) add(PACKAGE_JSON, "runner_config", `${reader.runnerNamed} reads its config from it`);
  }
  const protect = request.protect.map(globToRegExp);
  for (const path of request.basePaths) {
    if (isRunnerConfig(path)) add(path, "runner_config", "a test-runner config");
    if (isTestFile(path)) add(path, "test_file", "a test file");
    if (protect.length > 0 && matchesAnyGlob(path, protect)) add(path, "protected", "matches --protect");
  }
  const files = [...found.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { files, scripts, protect: [...request.protect], byPath: found, protectPatterns: protect };
}

/**
 * The input a path the patch changed is, or null. An ADDED path counts only as a runner config or a protected path
 * (a new runner config shadows the defaults), or as the root package.json when the commands run its scripts and
 * the base has none (`npm test` fails there, and the patch's file decides it); added tests stay, they are not
 * inputs. For package.json, this says
 * only that the file is an input: whether the change touches what verification runs is `scriptsChanged` with
 * `inputs.scripts` and `runnerKeysChanged` (package-json.ts); a dependency change alone touches neither.
 */
export function inputFor(inputs: VerificationInputs, path: string, change: "added" | "modified" | "deleted"): VerificationInput | null {
  if (change !== "added") return inputs.byPath.get(path) ?? null;
  if (path === PACKAGE_JSON && inputs.scripts.length > 0)
    return { path, reason: "package_script", why: "a new package.json holding the scripts the commands run" };
  if (isRunnerConfig(path)) return { path, reason: "runner_config", why: "a new test-runner config: it can shadow the base's" };
  if (matchesAnyGlob(path, inputs.protectPatterns)) return { path, reason: "protected", why: "matches --protect" };
  return null;
}

/** What request.json lists: the first MAX_LISTED_INPUTS inputs, and how many more there are. */
export function inputsRecord(inputs: VerificationInputs): {
  readonly count: number;
  readonly files: readonly VerificationInput[];
  readonly omitted: number;
  readonly scripts: readonly string[];
  readonly protect: readonly string[];
} {
  const files = inputs.files.slice(0, MAX_LISTED_INPUTS).map(({ path, reason, why }) => ({ path, reason, why }));
  return {
    count: inputs.files.length,
    files,
    omitted: inputs.files.length - files.length,
    scripts: inputs.scripts,
    protect: inputs.protect,
  };
}

function readPackage(readBase: (path: string) => Buffer | null): Record<string, unknown> | null {
  const bytes = readBase(PACKAGE_JSON);
  return bytes === null ? null : parsePackageJson(bytes);
}

function shorten(command: string): string {
  const line = command.replace(/\s+/gu, " ").trim();
  return line.length > SHOWN_COMMAND ? `${line.slice(0, SHOWN_COMMAND - 1)}…` : line;
}

interface ReadContext {
  readonly reason: "named_by_command" | "package_script";
  /** How the command is named in a `why`: `"sh check.sh"`, `script "test"`. */
  readonly label: string;
  readonly depth: number;
}

/** Reads commands (and the scripts they run) for the files they name. */
class CommandReader {
  readonly scripts = new Set<string>();
  firstScriptCommand = "";
  /** A runner that reads package.json (jest, mocha…) named by a command, or null. */
  runnerNamed: string | null = null;
  readonly #base: ReadonlySet<string>;
  readonly #pkg: Record<string, unknown> | null;
  readonly #baseScripts: ReadonlySet<string>;
  readonly #expanded = new Set<string>();
  readonly #add: (path: string, reason: InputReason, why: string) => void;
  #globs = 0;

  constructor(
    base: ReadonlySet<string>,
    pkg: Record<string, unknown> | null,
    add: (path: string, reason: InputReason, why: string) => void,
  ) {
    this.#base = base;
    this.#pkg = pkg;
    this.#baseScripts = new Set(scriptNames(pkg));
    this.#add = add;
  }

  read(command: string, context: ReadContext): void {
    for (const simple of simpleCommands(command)) this.#readSimple(simple, context);
  }

  #readSimple(simple: SimpleCommand, context: ReadContext): void {
    const why = `named by ${context.label}`;
    for (const word of [...simple.words, ...simple.assignedValues, ...simple.reads]) {
      const path = this.#fileNamed(simple.cwd, fileWord(word));
      if (path !== null) this.#add(path, context.reason, why);
      const runner = RUNNER_KEYS.find((key) => key === baseName(word));
      if (runner !== undefined && this.runnerNamed === null) this.runnerNamed = runner;
    }
    for (const pattern of simple.globs) {
      if (this.#globs++ >= MAX_GLOBS) continue;
      const regex = shellGlob(simple.cwd, pattern);
      if (regex !== null) for (const path of this.#base) if (regex.test(path)) this.#add(path, context.reason, why);
    }
    const words = withoutRunner(simple.words);
    const name = baseName(words[0] ?? "");
    if (name === "make" || name === "gmake") this.#readMake({ ...simple, words }, context.reason, why);
    for (const script of this.#scriptsRun(name, words.slice(1))) this.#runScript(script, context);
  }

  /** The base file `word` names from `cwd`, or null (not a file of the base: a directory, an option, outside). */
  #fileNamed(cwd: string | null, word: string | null): string | null {
    if (word === null) return null;
    const path = repoPath(cwd, word);
    return path !== null && this.#base.has(path) ? path : null;
  }

  /** `make` reads GNUmakefile, makefile or Makefile in its directory (`-C dir`), or the files given with `-f`. */
  #readMake(simple: SimpleCommand, reason: ReadContext["reason"], why: string): void {
    let dir: string | null = simple.cwd;
    const files: string[] = [];
    const args = simple.words.slice(1);
    for (let i = 0; i < args.length; i++) {
      const option = makeOption(args[i]!, args[i + 1]);
      if (option === null) continue;
      if (option.tookNext) i++;
      if (option.kind === "directory") dir = dir === null ? null : repoPath(dir, option.value);
      else files.push(option.value);
    }
    const named = files.length > 0 ? files : MAKEFILES;
    for (const file of named) {
      const path = this.#fileNamed(dir, file);
      if (path !== null) this.#add(path, reason, why);
    }
  }

  /**
   * Root package.json scripts a package-manager command runs, with their pre- and post- scripts (npm runs them;
   * yarn berry and pnpm by default do not, and are treated alike for simplicity). An install runs the root's
   * install and prepare scripts. A bare `yarn X` / `pnpm X` / `bun X` counts only when X is a script of the base.
   */
  #scriptsRun(name: string, args: readonly string[]): string[] {
    const operands = operandsOf(args);
    const [sub, next] = [operands[0], operands[1]];
    const lifecycle = (script: string) => [`pre${script}`, script, `post${script}`];
    const isScript = (script: string | undefined): script is string => script !== undefined && this.#baseScripts.has(script);
    switch (name) {
      case "npm":
        if (sub === undefined) return [];
        if (["test", "t", "tst"].includes(sub)) return lifecycle("test");
        if (["start", "stop"].includes(sub)) return lifecycle(sub);
        if (sub === "restart") return [...lifecycle("restart"), ...lifecycle("stop"), ...lifecycle("start")];
        if (["run", "run-script", "rum", "urn"].includes(sub)) return next === undefined ? [] : lifecycle(next);
        if (["it", "install-test", "cit", "clean-install-test"].includes(sub)) return [...INSTALL_SCRIPTS, ...lifecycle("test")];
        if (
          [
            "install",
            "i",
            "in",
            "ins",
            "inst",
            "insta",
            "instal",
            "isnt",
            "isnta",
            "isntal",
            "isntall",
            "add",
            "ci",
            "clean-install",
            "ic",
            "install-clean",
            "isntall-clean",
          ].includes(sub)
        )
          return INSTALL_SCRIPTS;
        return [];
      case "yarn":
      case "pnpm":
        if (sub === undefined) return name === "yarn" ? INSTALL_SCRIPTS : []; // a bare `yarn` installs
        if (["install", "i", "add"].includes(sub)) return INSTALL_SCRIPTS;
        if (sub === "run" || sub === "run-script") return next === undefined ? [] : lifecycle(next);
        if (["test", "t", "tst"].includes(sub)) return lifecycle("test");
        if (sub === "start") return lifecycle("start");
        return isScript(sub) ? lifecycle(sub) : [];
      case "bun":
        if (sub === "install" || sub === "i") return INSTALL_SCRIPTS;
        if (sub === "run") return isScript(next) ? lifecycle(next) : [];
        return sub !== "test" && isScript(sub) ? lifecycle(sub) : []; // `bun test` is bun's own runner
      case "run-s":
      case "run-p":
      case "npm-run-all":
        return operands.flatMap((operand) =>
          [...this.#baseScripts].filter((script) => scriptPattern(operand).test(script)).flatMap(lifecycle),
        );
      default:
        return [];
    }
  }

  /** Lists a script and, once, reads its body at the base as a command run at the package root. */
  #runScript(script: string, context: ReadContext): void {
    if (!this.firstScriptCommand) this.firstScriptCommand = context.label;
    this.scripts.add(script);
    if (this.#expanded.has(script) || context.depth >= MAX_SCRIPT_DEPTH) return;
    this.#expanded.add(script);
    const body = scriptBody(this.#pkg, script);
    if (body !== null) this.read(body, { reason: "package_script", label: `script "${script}"`, depth: context.depth + 1 });
  }
}

/** `-C dir`, `-Cdir`, `--directory=dir`; `-f file`, `-ffile`, `--file=file`, `--makefile=file`; else null. */
function makeOption(word: string, next: string | undefined): { kind: "directory" | "file"; value: string; tookNext: boolean } | null {
  for (const [kind, short, long] of [
    ["directory", "-C", ["--directory"]],
    ["file", "-f", ["--file", "--makefile"]],
  ] as const) {
    if (word === short || (long as readonly string[]).includes(word))
      return next === undefined ? null : { kind, value: next, tookNext: true };
    if (word.startsWith(short) && !word.startsWith("--")) return { kind, value: word.slice(2), tookNext: false };
    const equals = long.find((name) => word.startsWith(`${name}=`));
    if (equals !== undefined) return { kind, value: word.slice(equals.length + 1), tookNext: false };
  }
  return null;
}

/** Words that are not options, and not the values of the package managers' valued options. */
function operandsOf(args: readonly string[]): string[] {
  const operands: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    if (word === "--") break;
    if (VALUED_OPTIONS.has(word)) i++;
    else if (!word.startsWith("-")) operands.push(word);
  }
  return operands;
}

/** npm-run-all's script patterns: `test:*` matches `test:unit`, not `test:unit:fast`; `test:**` matches both. */
function scriptPattern(operand: string): RegExp {
  const source = operand
    .replace(/[.+^${}()|[\]\\]/gu, "\\$&")
    .replace(/\*\*/gu, "\u0000")
    .replace(/\*/gu, "[^:]*")
    .replace(/\u0000/gu, ".*");
  return new RegExp(`^${source}$`, "u");
}

/** The words of the command `npx X`, `bunx X`, `npm exec X`, `pnpm dlx X`… runs (X first); other commands as they are. */
function withoutRunner(words: readonly string[]): readonly string[] {
  const name = baseName(words[0] ?? "");
  const runs = ["npx", "bunx"].includes(name)
    ? 1
    : ["npm", "pnpm", "yarn"].includes(name) && ["exec", "x", "dlx"].includes(words[1] ?? "")
      ? 2
      : 0;
  if (runs === 0) return words;
  let i = runs;
  while (i < words.length && words[i]!.startsWith("-")) i += ["-p", "--package", "-c", "--call"].includes(words[i]!) ? 2 : 1;
  return words.slice(words[i] === "--" ? i + 1 : i);
}

/** A shell glob from `cwd` as a pattern anchored at the top of the repository (src/patch/rules/glob.ts), or null if it cannot compile. */
function shellGlob(cwd: string | null, pattern: string): RegExp | null {
  const path = repoPath(cwd, pattern);
  if (path === null) return null;
  try {
    return globToRegExp(`/${path}`);
  } catch {
    return null;
  }
}

/** The file part of a word: the value of `--opt=value`, a pytest node id's file (`tests/x.py::test_a`), or null for another option. */
function fileWord(word: string): string | null {
  let file = word;
  if (file.startsWith("-")) {
    const equals = file.indexOf("=");
    if (equals === -1) return null;
    file = file.slice(equals + 1);
  }
  const nodeId = file.indexOf("::");
  return nodeId === -1 ? file : file.slice(0, nodeId);
}

function baseName(word: string): string {
  return word.slice(word.lastIndexOf("/") + 1);
}
