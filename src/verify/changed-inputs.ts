import type { PatchFile } from "../patch/extract.js";
import { type GitTarget, git, splitNul } from "../process/git.js";
import { type SourceRepo, sourceTarget } from "../clone/source-repo.js";
import { MANIFEST } from "./config-kinds.js";
import { type InputsRequest, type VerificationInputs, findVerificationInputs, inputFor, mentionOf } from "./inputs.js";
import { manifestChanges } from "./manifest.js";
import type { ChangedInput, NotHeld } from "./test-edits.js";

/** The most bytes of a package.json or a shell script handoff reads: a manifest is kilobytes; more is not one. */
const MAX_READ_BYTES = 4 * 1024 * 1024;
/** How many rounds of reading the shell scripts that scripts run: each round reads what the last one found. */
const MAX_READ_ROUNDS = 8;

/** What verification inputs are found from: every path of the base commit, and its root package.json. */
export interface BaseForInputs {
  readonly paths: readonly string[];
  readonly packageJson: Buffer | null;
}

/** Read from the base commit in the source's object store (never its work tree, never the agent's clone). */
export async function readBaseForInputs(source: SourceRepo, signal?: AbortSignal): Promise<BaseForInputs> {
  const target = sourceTarget(source);
  // Side by side: neither reads the other.
  const [listing, packageJson] = await Promise.all([
    git(target, ["ls-tree", "-r", "-z", "--name-only", "--full-tree", source.baseCommit], { signal }),
    blobAt(target, `${source.baseCommit}:package.json`),
  ]);
  const paths = splitNul(listing.stdout).map((path) => path.toString("utf8"));
  return { paths, packageJson };
}

/**
 * The verification inputs of the base: found, then found again with the content of the shell scripts the commands
 * run (read from the base commit), until no script is left unread.
 */
export async function findInputsAtBase(
  source: SourceRepo,
  base: BaseForInputs,
  request: Omit<InputsRequest, "basePaths" | "readBase">,
): Promise<VerificationInputs> {
  const read = new Map<string, Buffer | null>([[MANIFEST, base.packageJson]]);
  const find = () => findVerificationInputs({ ...request, basePaths: base.paths, readBase: (path) => read.get(path) ?? null });
  let inputs = find();
  for (let round = 0; round < MAX_READ_ROUNDS && inputs.wanted.some((path) => !read.has(path)); round++) {
    for (const path of inputs.wanted)
      if (!read.has(path)) read.set(path, await blobAt(sourceTarget(source), `${source.baseCommit}:${path}`));
    inputs = find();
  }
  return inputs;
}

export async function blobAt(target: GitTarget, object: string): Promise<Buffer | null> {
  if (!object.includes("\n")) {
    const read = await blobInOneCall(target, object);
    if (read !== undefined) return read;
  }
  const { type, size } = object.includes("\n") ? await typeAndSizeByName(target, object) : await typeAndSize(target, object);
  if (type !== "blob" || !(size <= MAX_READ_BYTES)) return null;
  return (await git(target, ["cat-file", "blob", object], { maxBuffer: MAX_READ_BYTES })).stdout;
}

/**
 * The usual case in one process instead of two (`--batch`: a header, then the content): the blob, or null when the
 * object is missing or not a blob. Undefined when that call failed for any reason (an object over MAX_READ_BYTES
 * overflows it): blobAt then asks as it always did, type and size first, and answers or throws as before.
 */
async function blobInOneCall(target: GitTarget, object: string): Promise<Buffer | null | undefined> {
  let out: Buffer;
  try {
    out = (await git(target, ["cat-file", "--batch"], { input: `${object}\n`, maxBuffer: MAX_READ_BYTES + 1024 })).stdout;
  } catch {
    return undefined;
  }
  const headerEnd = out.indexOf(0x0a);
  const header = /^[0-9a-f]+ ([a-z]+) ([0-9]+)$/.exec(out.toString("latin1", 0, headerEnd === -1 ? out.length : headerEnd));
  if (header === null) return /^.* (missing|ambiguous)$/.test(out.toString("utf8").trimEnd()) ? null : undefined;
  const size = Number(header[2]);
  if (header[1] !== "blob") return null;
  if (size > MAX_READ_BYTES || out.length !== headerEnd + 1 + size + 1) return undefined;
  return out.subarray(headerEnd + 1, headerEnd + 1 + size);
}

/** Type and size in one process (a missing object prints `<name> missing`, whose first word is never `blob`). */
async function typeAndSize(target: GitTarget, object: string): Promise<{ type: string; size: number }> {
  const check = await git(target, ["cat-file", "--batch-check=%(objecttype) %(objectsize)"], { input: `${object}\n` });
  const [type = "", size = ""] = check.stdout.toString("utf8").trim().split(" ");
  return { type, size: Number(size) };
}

/** A name with a newline (a path holding one) cannot be a line of input: asked on the command line, twice. */
async function typeAndSizeByName(target: GitTarget, object: string): Promise<{ type: string; size: number }> {
  const size = await git(target, ["cat-file", "-s", object], { okExitCodes: [128] });
  if (size.exitCode !== 0) return { type: "missing", size: Number.NaN };
  const type = (await git(target, ["cat-file", "-t", object])).stdout.toString("utf8").trim();
  return { type, size: Number(size.stdout.toString("utf8").trim()) };
}

/** A file as handoff staged it after the agent (from the extraction's own index listing), or null when absent. */
export async function stagedBlob(privateGitDir: string, listing: Buffer, path: string): Promise<Buffer | null> {
  for (const record of splitNul(listing)) {
    const tab = record.indexOf(9);
    if (tab === -1 || record.subarray(tab + 1).toString("utf8") !== path) continue;
    const oid = record.subarray(0, tab).toString("utf8").split(" ")[1];
    return oid ? blobAt({ gitDir: privateGitDir, cwd: privateGitDir }, oid) : null;
  }
  return null;
}

/** A package.json the patch modified, both sides as bytes (null: unreadable, then compared as "not JSON"). */
export interface ManifestSides {
  readonly base: Buffer | null;
  readonly patched: Buffer | null;
}

/**
 * The verification inputs the patch changed, and the changed files a command names that are not held (and why).
 * A modified package.json counts only when a field other than its dependencies changed; its `entries` name them.
 */
export function changedInputs(
  inputs: VerificationInputs,
  files: readonly PatchFile[],
  manifests: ReadonlyMap<string, ManifestSides>,
): { changed: ChangedInput[]; notHeld: NotHeld[] } {
  const changed: ChangedInput[] = [];
  const notHeld: NotHeld[] = [];
  for (const file of files) {
    if (inputs.allowConfig.includes(file.path)) {
      notHeld.push({ path: file.path, why: "named by --allow-config: the task may change it" });
      continue;
    }
    const input = inputFor(inputs, file.path, file.change);
    if (input === null) {
      const mention = mentionOf(inputs, file.path);
      if (mention !== null) notHeld.push({ path: file.path, why: `${mention}: data or a target, not what runs` });
      continue;
    }
    const sides = manifests.get(file.path);
    if (input.reason === "manifest" && file.change === "modified" && sides) {
      const entries = sides.base && sides.patched ? manifestChanges(sides.base, sides.patched) : ["(unreadable)"];
      if (entries.length === 0) {
        notHeld.push({ path: file.path, why: "only its dependencies changed" });
        continue;
      }
      changed.push({ path: file.path, reason: input.reason, why: input.why, change: file.change, entries });
      continue;
    }
    changed.push({ path: file.path, reason: input.reason, why: input.why, change: file.change });
  }
  return { changed, notHeld };
}
