import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onTestFinished } from "vitest";
import { inspectSource } from "../../src/clone/source-repo.js";
import { createPristineStore, createWorkspace, removeTree } from "../../src/clone/workspace.js";
import { type Extraction, extractPatch } from "../../src/patch/extract.js";
import { type ChangedEntry, type PatchJudgement, judgeEntries } from "../../src/patch/rules/rule-book.js";
import { DEFAULT_POLICY, type PatchPolicy, compilePolicy } from "../../src/patch/rules/policy.js";

export interface ExtractOutcome {
  readonly extraction: Extraction;
  /** changes.patch as extraction made it. */
  readonly patch: string;
  /** Names of payload markers that appeared (must be empty: nothing ran inside handoff's git calls). */
  readonly payloadsRan: string[];
}

/**
 * Gate 3 on its own: the clone gate makes a workspace of `repo`, a fixture agent script runs in it as a plain shell
 * command (no backend, no sandbox, no verification), and the patch is extracted and judged under `policy`.
 */
export async function extractAfter(repo: string, agentCmd: string, policy: Partial<PatchPolicy> = {}): Promise<ExtractOutcome> {
  const root = mkdtempSync(join(tmpdir(), "handoff-extract-"));
  onTestFinished(() => removeTree(root));
  const source = await inspectSource(repo);
  const scratch = join(root, "scratch");
  const markers = join(root, "markers");
  mkdirSync(scratch);
  mkdirSync(markers);
  const pristine = await createPristineStore(source, scratch);
  const workspace = await createWorkspace(source, pristine, join(root, "ws"));
  execFileSync("/bin/sh", ["-c", agentCmd], {
    cwd: workspace.workTree,
    env: { ...process.env, HOME: workspace.home, TMPDIR: workspace.tmp, HANDOFF_TEST_MARKERS: markers, HANDOFF_TEST_SOURCE: repo },
    stdio: "ignore",
  });
  const extraction = await extractPatch({
    source,
    workspace,
    policy: compilePolicy({ ...DEFAULT_POLICY, ...policy }),
    privateParent: scratch,
    pristine,
  });
  expectListingIsGits(extraction);
  return { extraction, patch: extraction.patch.toString("utf8"), payloadsRan: readdirSync(markers) };
}

/**
 * The staged listing handoff writes from the base index and the change list (staged-listing.ts) is byte for byte
 * git's own `ls-files -s -z` of the index it staged (when anything was staged: a fatal finding stages nothing).
 */
export function expectListingIsGits(extraction: Extraction): void {
  if (extraction.listing.length === 0) return;
  const gits = execFileSync("git", ["ls-files", "-s", "-z"], {
    env: { ...process.env, GIT_DIR: extraction.privateGitDir, GIT_INDEX_FILE: join(extraction.privateGitDir, "handoff.index") },
    cwd: extraction.privateGitDir,
    maxBuffer: 1 << 30,
  });
  if (!gits.equals(extraction.listing))
    throw new Error(`the staged listing differs from git's:\n${extraction.listing.toString("latin1")}\n---\n${gits.toString("latin1")}`);
}

/** git's sha1 object id for these bytes as a blob. */
function blobId(bytes: Buffer): string {
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

/** A changed file as git would stage it: an addition (or `status`/modes given) whose staged blob is `content`. */
export function entry(path: string, content: string | Buffer | null, fields: Partial<Omit<ChangedEntry, "path">> = {}): ChangedEntry {
  const bytes = content === null ? null : Buffer.from(content);
  return {
    path: Buffer.from(path),
    status: "A",
    oldMode: "000000",
    newMode: bytes === null ? "000000" : "100644",
    newId: bytes === null ? "0".repeat(40) : blobId(bytes),
    additions: bytes === null ? 0 : bytes.toString("utf8").split("\n").length,
    ...(bytes === null ? {} : { content: { kind: "bytes" as const, bytes } }),
    ...fields,
  };
}

/** The rule book on a list of entries under `policy`; every entry's path is in the index unless `allPaths` says otherwise. */
export function judge(entries: readonly ChangedEntry[], policy: Partial<PatchPolicy> = {}, allPaths?: readonly string[]): PatchJudgement {
  return judgeEntries(entries, compilePolicy({ ...DEFAULT_POLICY, ...policy }), {
    patchBytes: 0,
    allPaths: allPaths ?? entries.map((change) => change.path.toString("utf8")),
    objectFormat: "sha1",
    addedLines: null,
  });
}
