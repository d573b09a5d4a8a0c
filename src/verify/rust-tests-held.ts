import type { Extraction } from "../patch/extract.js";
import type { PolicyFinding } from "../patch/rules/findings.js";
import { blobAt, stagedBlob } from "./changed-inputs.js";
import { type VerificationInputs, inputFor } from "./inputs.js";
import { holdTestModules, rustTestLayout } from "./rust-test-modules.js";
import type { ChangedInput } from "./test-edits.js";

/**
 * The Rust tests a patch changed inside source files that are no verification input (issue 27 item 4): the inline
 * `#[cfg(test)] mod tests { … }` of a `src/lib.rs` the fix itself changes, and a file a base module declares as
 * `#[cfg(test)] mod NAME;`. The first is held module by module (rust-test-modules.ts), the second whole. A test
 * edit the held run cannot isolate (a `#[test]` fn outside any test module) is a violation under `--test-edits base`.
 */
export interface RustTestChanges {
  readonly changed: readonly ChangedInput[];
  /** The patched file with the base's test modules, as the run held to the base gets it. */
  readonly held: ReadonlyMap<string, Buffer>;
  /** Files whose test edits the held run cannot put back alone. */
  readonly notIsolated: readonly PolicyFinding[];
}

export async function rustTestChanges(baseCommit: string, inputs: VerificationInputs, extraction: Extraction): Promise<RustTestChanges> {
  const changed: ChangedInput[] = [];
  const held = new Map<string, Buffer>();
  const notIsolated: PolicyFinding[] = [];
  const target = { gitDir: extraction.privateGitDir, cwd: extraction.privateGitDir };
  // Read once each: many changed files of one directory share the parents declaringTestModule reads.
  const read = new Map<string, Promise<Buffer | null>>();
  const atBase = (path: string) => {
    if (!read.has(path)) read.set(path, blobAt(target, `${baseCommit}:${path}`));
    return read.get(path)!;
  };
  for (const file of extraction.files) {
    if (!file.path.endsWith(".rs") || file.change === "deleted") continue;
    if (inputs.allowConfig.includes(file.path) || inputFor(inputs, file.path, file.change) !== null) continue;
    const parent = file.change === "modified" ? await declaringTestModule(file.path, atBase) : null;
    if (parent !== null) {
      changed.push({ path: file.path, reason: "test_file", why: `a test module (${parent})`, change: file.change });
      continue;
    }
    const base = file.change === "modified" ? await atBase(file.path) : Buffer.alloc(0);
    const patched = await stagedBlob(extraction.privateGitDir, extraction.listing, file.path);
    const outcome =
      base === null || patched === null
        ? ({ kind: "not_isolated", why: "it could not be read to find its test modules" } as const)
        : holdTestModules(base.toString("utf8"), patched.toString("utf8"));
    switch (outcome.kind) {
      case "unchanged":
        break;
      case "held": {
        const names = outcome.modules.map((name) => `mod ${name}`).join(", ");
        changed.push({ path: file.path, reason: "test_file", why: `its inline tests (#[cfg(test)] ${names})`, change: file.change });
        held.set(file.path, Buffer.from(outcome.text, "utf8"));
        break;
      }
      case "not_isolated":
        changed.push({ path: file.path, reason: "test_file", why: `its tests (${outcome.why})`, change: file.change });
        notIsolated.push({
          path: file.path,
          rule: "test_edit_not_isolated",
          message: `${outcome.why}: the run held to the base cannot put its tests back without undoing the fix; keep tests in #[cfg(test)] modules, or --test-edits allow to review it yourself`,
        });
        break;
      default:
        return outcome satisfies never;
    }
  }
  return { changed, held, notIsolated };
}

/** `src/lib.rs (#[cfg(test)] mod tests;)` when a base module file declares `path` as its test module, else null. */
async function declaringTestModule(path: string, atBase: (path: string) => Promise<Buffer | null>): Promise<string | null> {
  const modulePath = path.endsWith("/mod.rs") ? path.slice(0, -"/mod.rs".length) : path.slice(0, -".rs".length);
  const slash = modulePath.lastIndexOf("/");
  const [moduleDir, name] = [modulePath.slice(0, Math.max(0, slash)), modulePath.slice(slash + 1)];
  const inDir = (file: string) => (moduleDir === "" ? file : `${moduleDir}/${file}`);
  const parents = [inDir("lib.rs"), inDir("main.rs"), inDir("mod.rs"), ...(moduleDir === "" ? [] : [`${moduleDir}.rs`])];
  for (const parent of parents.filter((candidate) => candidate !== path)) {
    const text = await atBase(parent);
    const layout = text === null ? null : rustTestLayout(text.toString("utf8"));
    if (layout?.testModuleFiles.includes(name)) return `${parent}: #[cfg(test)] mod ${name};`;
  }
  return null;
}
