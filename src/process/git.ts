import { dirname } from "node:path";
import { GitCommandError } from "../lib/errors.js";
import { captureProcess } from "./process.js";
import { which } from "./which.js";

/**
 * The one hardened way handoff calls git (docs/threat-model.md, rows G1 to G18): argv arrays, a clean environment, an explicit git dir
 * (never discovery in a workspace), and `-c` overrides that switch off every config-driven program git could run.
 * The `-c` list is belt and braces: the real defence is that handoff only points git at a git dir it wrote itself.
 */

/** Where git should look. `gitDir` is always explicit except for `discover`, used on the user's own repo. */
export interface GitTarget {
  readonly gitDir?: string;
  readonly workTree?: string;
  readonly indexFile?: string;
  /** Directory git runs in; never inside a hostile workspace unless gitDir and workTree are explicit. */
  readonly cwd: string;
  /** Extra config (key, value) at command-line priority, through GIT_CONFIG_KEY_n: a key may hold any byte but NUL. */
  readonly config?: readonly (readonly [string, string])[];
  /** Who a commit this call writes is by, and when (`commit-tree`): otherwise handoff's placeholder identity. */
  readonly identity?: GitIdentity;
  /**
   * The user's own git, for what is theirs to do (`apply --commit --push`, reading their user.name): their global and
   * system config, HOME, PATH and ssh agent, so their remotes, credential helpers and ssh keys work. Hooks stay off.
   */
  readonly asUser?: boolean;
}

export interface GitIdentity {
  readonly name: string;
  readonly email: string;
  /** In a form git reads (`@1700000000 +0000`): the same date makes the same commit id. */
  readonly date: string;
}

export interface GitCallOptions {
  readonly input?: string | Buffer;
  readonly maxBuffer?: number;
  /** Exit codes that are answers, not failures (e.g. 1 for `diff --quiet`). */
  readonly okExitCodes?: readonly number[];
  /** Kills git when aborted; the call then throws. */
  readonly signal?: AbortSignal;
}

export interface GitOutput {
  readonly exitCode: number;
  readonly stdout: Buffer;
  readonly stderr: string;
}

export const HARDENING_CONFIG: readonly string[] = [
  "core.hooksPath=/dev/null",
  "core.fsmonitor=false",
  "core.untrackedCache=false",
  "core.excludesFile=/dev/null",
  "core.attributesFile=/dev/null",
  "core.fileMode=true",
  "core.symlinks=true",
  "core.ignoreCase=false",
  "core.precomposeUnicode=false",
  "core.protectNTFS=true",
  "core.protectHFS=true",
  "core.quotePath=true",
  "core.autocrlf=false",
  "core.safecrlf=false",
  "core.trustctime=true",
  "core.checkStat=default",
  "core.sparseCheckout=false",
  "core.splitIndex=false",
  "index.sparse=false",
  "core.pager=cat",
  "core.editor=false",
  "sequence.editor=false",
  "core.askPass=/bin/false",
  "core.sshCommand=/bin/false",
  "credential.helper=",
  "diff.external=",
  "diff.noprefix=false",
  "diff.mnemonicPrefix=false",
  "diff.relative=false",
  "diff.renames=false",
  "diff.ignoreSubmodules=all",
  "diff.submodule=short",
  "diff.orderFile=/dev/null",
  "color.ui=false",
  "status.showUntrackedFiles=all",
  "status.submoduleSummary=false",
  "submodule.recurse=false",
  "fetch.recurseSubmodules=false",
  "protocol.allow=never",
  "protocol.ext.allow=never",
  "protocol.file.allow=never",
  "protocol.ssh.allow=never",
  "protocol.git.allow=never",
  "protocol.http.allow=never",
  "protocol.https.allow=never",
  "gpg.program=/bin/false",
  "gpg.ssh.program=/bin/false",
  "commit.gpgSign=false",
  "tag.gpgSign=false",
  "log.showSignature=false",
  "gc.auto=0",
  "maintenance.auto=false",
  "apply.whitespace=nowarn",
];

/** The settings that would stop the user's own push (`asUser`): their protocols, ssh command and credential helpers. */
const USER_OWNED_SETTINGS = /^(protocol\.|core\.sshCommand=|credential\.helper=)/;

let gitExecutable: string | undefined;

/** Resolves `git` once, from the PATH handoff was started with; later calls run with a minimal PATH. */
export function resolveGitExecutable(): string {
  gitExecutable ??= which("git", process.env.PATH ?? "/usr/bin:/bin") ?? "/usr/bin/git";
  return gitExecutable;
}

/** The environment of every git call: built from nothing, so no GIT_* variable of the caller leaks in. */
export function gitEnvironment(target: GitTarget): Record<string, string> {
  const env: Record<string, string> = {
    PATH: `${dirname(resolveGitExecutable())}:/usr/bin:/bin`,
    LC_ALL: "C",
    LANG: "C",
    TZ: "UTC",
    HOME: "/nonexistent",
    XDG_CONFIG_HOME: "/nonexistent",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
    GIT_NO_REPLACE_OBJECTS: "1",
    GIT_OPTIONAL_LOCKS: "0",
    GIT_TERMINAL_PROMPT: "0",
    GIT_ASKPASS: "/bin/false",
    SSH_ASKPASS: "/bin/false",
    GIT_PROTOCOL_FROM_USER: "0",
    GIT_AUTHOR_NAME: "handoff",
    GIT_AUTHOR_EMAIL: "handoff@localhost",
    GIT_COMMITTER_NAME: "handoff",
    GIT_COMMITTER_EMAIL: "handoff@localhost",
  };
  if (target.gitDir) {
    env.GIT_DIR = target.gitDir;
    env.GIT_CEILING_DIRECTORIES = "/";
  }
  if (target.identity) {
    const { name, email, date } = target.identity;
    Object.assign(env, { GIT_AUTHOR_NAME: name, GIT_AUTHOR_EMAIL: email, GIT_AUTHOR_DATE: date });
    Object.assign(env, { GIT_COMMITTER_NAME: name, GIT_COMMITTER_EMAIL: email, GIT_COMMITTER_DATE: date });
  }
  if (target.asUser) {
    const { HOME, XDG_CONFIG_HOME, PATH, SSH_AUTH_SOCK } = process.env;
    for (const key of ["HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_PROTOCOL_FROM_USER"]) delete env[key];
    Object.assign(env, Object.fromEntries(Object.entries({ HOME, XDG_CONFIG_HOME, PATH, SSH_AUTH_SOCK }).filter(([, value]) => value)));
  }
  if (target.workTree) env.GIT_WORK_TREE = target.workTree;
  if (target.indexFile) env.GIT_INDEX_FILE = target.indexFile;
  if (target.config && target.config.length > 0) {
    env.GIT_CONFIG_COUNT = String(target.config.length);
    target.config.forEach(([key, value], index) => {
      env[`GIT_CONFIG_KEY_${index}`] = key;
      env[`GIT_CONFIG_VALUE_${index}`] = value;
    });
  }
  return env;
}

export function hardenedArgs(args: readonly string[], asUser = false): string[] {
  const prefix = ["--no-pager"];
  for (const setting of HARDENING_CONFIG) if (!(asUser && USER_OWNED_SETTINGS.test(setting))) prefix.push("-c", setting);
  return [...prefix, ...args];
}

/** Runs git; a non-zero exit (outside `okExitCodes`) throws GitCommandError with git's stderr. */
export async function git(target: GitTarget, args: readonly string[], options: GitCallOptions = {}): Promise<GitOutput> {
  const fullArgs = hardenedArgs(args, target.asUser);
  const result = await captureProcess({
    file: resolveGitExecutable(),
    args: fullArgs,
    cwd: target.cwd,
    env: gitEnvironment(target),
    input: options.input,
    maxBuffer: options.maxBuffer,
    signal: options.signal,
  });
  const exitCode = result.exitCode ?? -1;
  if (result.truncated || result.timedOut || (exitCode !== 0 && !(options.okExitCodes ?? []).includes(exitCode))) {
    throw new GitCommandError(args, result.exitCode, result.stderr);
  }
  return { exitCode, stdout: result.stdout, stderr: result.stderr };
}

/** git's stdout as trimmed text, for plumbing answers such as shas and ref names. */
export async function gitText(target: GitTarget, args: readonly string[], options: GitCallOptions = {}): Promise<string> {
  return (await git(target, args, options)).stdout.toString("utf8").trim();
}

/** Splits NUL-terminated git output (`-z`) into raw byte records; the paths stay bytes. */
export function splitNul(output: Buffer): Buffer[] {
  const records: Buffer[] = [];
  let start = 0;
  for (;;) {
    const end = output.indexOf(0, start);
    if (end === -1) break;
    records.push(output.subarray(start, end));
    start = end + 1;
  }
  if (start < output.length) records.push(output.subarray(start));
  return records;
}
