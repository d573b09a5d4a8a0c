import { globToRegExp, matchesAnyGlob } from "../patch/rules/glob.js";
import { type WordRole, commandRoles } from "./command-roles.js";
import { type SimpleCommand, repoPath, simpleCommands } from "./command-words.js";
import { MANIFEST, configKind, configKindWhy, isManifest } from "./config-kinds.js";
import { parsePackageJson, scriptBody, scriptNames } from "./manifest.js";
import { isTestFile } from "./patterns.js";

/**
 * Which files decide *how* verification runs (issue 26 item 1; docs/verification.md "What is held to the base").
 * Decided by kind, not by list: test files; configuration files wherever they are (config-kinds.ts); every
 * package.json, field by field (manifest.ts); what a setup or verify command *executes* or *loads as configuration*
 * (`sh X`, `node X`, `--config X`, the tests a runner is given), and the shell scripts those run in turn. A file a
 * command only *mentions* (`grep -q fixed a.txt`, `eslint *.js`) is what the task may change: it is recorded only
 * to say why it is not held. Everything is read from the base commit, never from the agent's tree. Pure: no git,
 * no file system; it never throws on what a command or a package.json holds.
 */
export type InputReason = "manifest" | "named_by_command" | "configuration" | "test_file" | "protected";

/** The order in which reasons win when a path has several. */
export const INPUT_REASONS: readonly InputReason[] = ["manifest", "named_by_command", "configuration", "test_file", "protected"];

export interface VerificationInput {
  readonly path: string;
  readonly reason: InputReason;
  readonly why: string;
}

/** A file (or a glob of them) a command names only as data or a target, and how: "an argument of eslint (script "lint")". */
export interface Mention {
  readonly path: string | null;
  readonly pattern: RegExp | null;
  readonly why: string;
}

export interface VerificationInputs {
  /** Paths of the base commit that decide how verification runs, sorted, each once (first reason wins in the order above). */
  readonly files: readonly VerificationInput[];
  /** Root package.json scripts the commands run (transitively, with pre/post), by name; empty when none. */
  readonly scripts: readonly string[];
  /** The `--protect` globs, as given: an added path matching one is an input too (inputFor). */
  readonly protect: readonly string[];
  /** `--allow-config` paths, as given: files the task must change, never held (inputFor). */
  readonly allowConfig: readonly string[];
  /** `files` by path, and the globs compiled: made once, for a patch of 1000 files against 50,000 inputs (inputFor). */
  readonly byPath: ReadonlyMap<string, VerificationInput>;
  /** What the commands execute or load, by path, whether or not the base has it: an added one decides too. */
  readonly named: ReadonlyMap<string, VerificationInput>;
  readonly protectPatterns: readonly RegExp[];
  /** Where the commands only mention a file: why a changed one is not held. */
  readonly mentions: readonly Mention[];
  /** Base files the reading needs the content of (shell scripts the commands run) that `readBase` did not have. */
  readonly wanted: readonly string[];
}

export interface InputsRequest {
  readonly commands: readonly string[];
  readonly basePaths: readonly string[];
  /** A base file's content, or null when it was not read (it is then listed in `wanted`) or is absent. */
  readonly readBase: (path: string) => Buffer | null;
  readonly protect: readonly string[];
  readonly allowConfig?: readonly string[];
}

/** How many inputs request.json lists; the rest are counted (`omitted`). */
export const MAX_LISTED_INPUTS = 1000;
/** Glob words (`tests/*.py`) matched against the base tree, per run: each costs a pass over every path. */
const MAX_GLOBS = 16;
/** How deep scripts that run scripts are followed (each is followed once anyway). */
const MAX_SCRIPT_DEPTH = 16;
/** Shell scripts whose content is read, per run. */
export const MAX_SCRIPTS_READ = 64;
/** Mentions kept to explain changed files: a command of 10,000 words does not keep 10,000. */
const MAX_MENTIONS = 2000;
/** Longest command shown in a `why`. */
const SHOWN_COMMAND = 80;

const INSTALL_SCRIPTS = ["preinstall", "install", "postinstall", "prepublish", "preprepare", "prepare", "postprepare"];
const MAKEFILES = ["GNUmakefile", "makefile", "Makefile"];
/** Package-manager options that take the next word as their value. */
const VALUED_OPTIONS = new Set(["--prefix", "-C", "--dir", "--cwd", "--filter", "-F", "-w", "--workspace"]);
/** Runners whose positional words are name filters, not files or directories (`jest src`, `vitest math`). */
const FILTER_RUNNERS = new Set(["jest", "vitest", "playwright", "pytest", "py.test", "cypress", "karma"]);

export function findVerificationInputs(request: InputsRequest): VerificationInputs {
  const base = new Set(request.basePaths);
  const found = new Map<string, VerificationInput>();
  const add = (path: string, reason: InputReason, why: string) => {
    const existing = found.get(path);
    if (!existing || INPUT_REASONS.indexOf(reason) < INPUT_REASONS.indexOf(existing.reason)) found.set(path, { path, reason, why });
  };
  const pkg = base.has(MANIFEST) ? readPackage(request.readBase) : null;
  const reader = new CommandReader(request.basePaths, base, pkg, request.readBase, add);
  for (const command of request.commands) reader.read(command, { label: `"${shorten(command)}"`, depth: 0 });

  const scripts = [...reader.scripts].sort();
  const protect = request.protect.map(globToRegExp);
  for (const path of request.basePaths) {
    const input = kindOf(path, protect);
    if (input !== null) add(path, input.reason, input.why);
  }
  if (found.has(MANIFEST) && scripts.length > 0) {
    const shown = scripts.length > 10 ? `${scripts.slice(0, 10).join(", ")}, … (${scripts.length} in all)` : scripts.join(", ");
    found.set(MANIFEST, {
      path: MANIFEST,
      reason: "manifest",
      why: `the package manifest (its scripts ${shown} run by ${reader.firstScriptCommand})`,
    });
  }
  const files = [...found.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return {
    files,
    scripts,
    protect: [...request.protect],
    allowConfig: [...(request.allowConfig ?? [])],
    byPath: found,
    named: reader.named,
    protectPatterns: protect,
    mentions: reader.mentions,
    wanted: [...reader.wanted],
  };
}

/** A path's input by kind alone (no command needed): the manifest, a configuration file, a test file, or --protect. */
function kindOf(path: string, protect: readonly RegExp[]): VerificationInput | null {
  if (isManifest(path)) return { path, reason: "manifest", why: "the package manifest (held whole but its dependencies)" };
  const kind = configKind(path);
  if (kind !== null) return { path, reason: "configuration", why: configKindWhy(kind) };
  if (isTestFile(path)) return { path, reason: "test_file", why: "a test file" };
  if (protect.length > 0 && matchesAnyGlob(path, protect)) return { path, reason: "protected", why: "matches --protect" };
  return null;
}

/**
 * The input a path the patch changed is, or null (the patch may change it freely). `--allow-config` wins over
 * everything: the user named a file the task must change. A test file the patch ADDS is an input too: the run held
 * to the base runs the base's tests only, so a new test file cannot hook the runner (mocha loads every file into
 * one process). For a package.json this says only that the file is an input: whether the change touches more than
 * its dependencies is manifest.ts's to say.
 */
export function inputFor(inputs: VerificationInputs, path: string, change: "added" | "modified" | "deleted"): VerificationInput | null {
  if (inputs.allowConfig.includes(path)) return null;
  const named = inputs.named.get(path) ?? (change === "added" ? null : inputs.byPath.get(path));
  if (named && named.reason !== "manifest" && named.reason !== "configuration" && named.reason !== "test_file") return named;
  const kind = kindOf(path, inputs.protectPatterns);
  if (kind?.reason === "test_file" && change === "added")
    return { path, reason: "test_file", why: "a test file the patch adds (the run held to the base runs the base's tests only)" };
  return kind ?? named ?? null;
}

/** Why a changed file that is no input is not held, when a command names it: "splat.js is an argument of eslint (script "lint")". */
export function mentionOf(inputs: VerificationInputs, path: string): string | null {
  for (const mention of inputs.mentions) {
    if (mention.path === path || mention.pattern?.test(path)) return mention.why;
  }
  return null;
}

/** What request.json lists: the first MAX_LISTED_INPUTS inputs, and how many more there are. */
export function inputsRecord(inputs: VerificationInputs): {
  readonly count: number;
  readonly files: readonly VerificationInput[];
  readonly omitted: number;
  readonly scripts: readonly string[];
  readonly protect: readonly string[];
  readonly allowConfig: readonly string[];
} {
  const files = inputs.files.slice(0, MAX_LISTED_INPUTS).map(({ path, reason, why }) => ({ path, reason, why }));
  return {
    count: inputs.files.length,
    files,
    omitted: inputs.files.length - files.length,
    scripts: inputs.scripts,
    protect: inputs.protect,
    allowConfig: inputs.allowConfig,
  };
}

function readPackage(readBase: (path: string) => Buffer | null): Record<string, unknown> | null {
  const bytes = readBase(MANIFEST);
  return bytes === null ? null : parsePackageJson(bytes);
}

function shorten(command: string): string {
  const line = command.replace(/\s+/gu, " ").trim();
  return line.length > SHOWN_COMMAND ? `${line.slice(0, SHOWN_COMMAND - 1)}…` : line;
}

interface ReadContext {
  /** How the command is named in a `why`: `"sh check.sh"`, `script "test"`. */
  readonly label: string;
  readonly depth: number;
}

/** Reads commands (and the scripts and shell files they run) for the files they execute, load or mention. */
class CommandReader {
  readonly scripts = new Set<string>();
  firstScriptCommand = "";
  readonly named = new Map<string, VerificationInput>();
  readonly mentions: Mention[] = [];
  readonly wanted = new Set<string>();
  readonly #paths: readonly string[];
  readonly #base: ReadonlySet<string>;
  readonly #pkg: Record<string, unknown> | null;
  readonly #baseScripts: ReadonlySet<string>;
  readonly #readBase: (path: string) => Buffer | null;
  readonly #expanded = new Set<string>();
  readonly #shellFilesRead = new Set<string>();
  readonly #add: (path: string, reason: InputReason, why: string) => void;
  #globs = 0;

  constructor(
    paths: readonly string[],
    base: ReadonlySet<string>,
    pkg: Record<string, unknown> | null,
    readBase: (path: string) => Buffer | null,
    add: (path: string, reason: InputReason, why: string) => void,
  ) {
    this.#paths = paths;
    this.#base = base;
    this.#pkg = pkg;
    this.#baseScripts = new Set(scriptNames(pkg));
    this.#readBase = readBase;
    this.#add = add;
  }

  read(command: string, context: ReadContext, cwd: string | null = ""): void {
    for (const simple of simpleCommands(command, cwd)) this.#readSimple(simple, context);
  }

  #readSimple(simple: SimpleCommand, context: ReadContext, wrapped = 0): void {
    const words = withoutRunner(simple.words);
    const command = { ...simple, words };
    const { roles, inner } = commandRoles(command, context.label);
    for (const role of roles) this.#role(simple.cwd, role, context);
    if (inner !== null && wrapped < 4) this.#readSimple({ ...simple, words: inner, assignedValues: [], reads: [] }, context, wrapped + 1);
    const name = baseName(words[0] ?? "");
    if (name === "make" || name === "gmake") this.#readMake(command, `read by make (${context.label})`);
    for (const script of this.#scriptsRun(name, words.slice(1))) this.#runScript(script, context);
  }

  #role(cwd: string | null, role: WordRole, context: ReadContext): void {
    switch (role.kind) {
      case "executed":
      case "config": {
        const path = role.word.includes("$") ? null : repoPath(cwd, fileWord(role.word) ?? "");
        if (path === null) return;
        this.#name(path, role.by);
        if (role.kind === "executed") this.#readShellFile(path, cwd, role.shell, context);
        return;
      }
      case "tests":
        this.#tests(cwd, role, role.by);
        return;
      case "mentioned":
        this.#mention(cwd, role.word, role.glob, role.by);
        return;
    }
  }

  /** A file a command executes or loads: an input whether or not the base has it (an added one decides too). */
  #name(path: string, why: string): void {
    if (!this.named.has(path)) this.named.set(path, { path, reason: "named_by_command", why });
    if (this.#base.has(path)) this.#add(path, "named_by_command", why);
  }

  /** The files a test runner is given: a file, a glob, or (for runners that take paths) a directory of them. */
  #tests(cwd: string | null, { word, glob, runner }: { word: string; glob: boolean; runner: string }, why: string): void {
    if (glob) {
      if (FILTER_RUNNERS.has(runner) || this.#globs++ >= MAX_GLOBS) return;
      const regex = shellGlob(cwd, word);
      if (regex !== null) for (const path of this.#paths) if (regex.test(path)) this.#add(path, "named_by_command", why);
      return;
    }
    const path = repoPath(cwd, fileWord(word) ?? "");
    if (path === null) return;
    if (this.#base.has(path) || /\.[A-Za-z0-9]+$/u.test(path)) {
      this.#name(path, why);
      return;
    }
    if (FILTER_RUNNERS.has(runner) || this.#globs++ >= MAX_GLOBS) return;
    const prefix = `${path}/`;
    for (const base of this.#paths) if (base.startsWith(prefix) && /\.(c|m)?[jt]sx?$/u.test(base)) this.#add(base, "named_by_command", why);
  }

  #mention(cwd: string | null, word: string, glob: boolean, why: string): void {
    if (this.mentions.length >= MAX_MENTIONS) return;
    if (glob) {
      const regex = shellGlob(cwd, word);
      if (regex !== null) this.mentions.push({ path: null, pattern: regex, why });
      return;
    }
    const path = repoPath(cwd, fileWord(word) ?? "");
    if (path !== null) this.mentions.push({ path, pattern: null, why });
  }

  /**
   * A shell script the commands run (`sh x.sh`, `. lib.sh`, `./x` with a shell's `#!`): its own commands are read
   * in turn, from the directory it is run in. Its content comes from `readBase`; one not yet read is `wanted`.
   */
  #readShellFile(path: string, cwd: string | null, shell: boolean, context: ReadContext): void {
    if (!this.#base.has(path) || this.#shellFilesRead.has(path) || context.depth >= MAX_SCRIPT_DEPTH) return;
    if (this.#shellFilesRead.size >= MAX_SCRIPTS_READ) return;
    const bytes = this.#readBase(path);
    if (bytes === null) {
      if (this.wanted.size < MAX_SCRIPTS_READ) this.wanted.add(path);
      return;
    }
    this.#shellFilesRead.add(path);
    const text = bytes.toString("utf8");
    const shebang = /^#!\s*\S*?(?:\/|\benv\s+)(sh|bash|dash|zsh|ksh)\b/u.test(text);
    if (!shell && !shebang) return;
    this.read(text, { label: `"${path}"`, depth: context.depth + 1 }, cwd);
  }

  /** `make` reads GNUmakefile, makefile or Makefile in its directory (`-C dir`), or the files given with `-f`. */
  #readMake(simple: SimpleCommand, why: string): void {
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
      const path = dir === null ? null : repoPath(dir, file);
      if (path !== null && (files.length > 0 || this.#base.has(path))) this.#name(path, why);
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
    if (body !== null) this.read(body, { label: `script "${script}"`, depth: context.depth + 1 });
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
