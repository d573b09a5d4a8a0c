import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { ScratchCopies } from "../src/containment/scratch-copies.js";
import { tempDir } from "./helpers/repo.js";

function shims(): { dir: string; scratch: string } {
  const base = tempDir("handoff-scratch-copies");
  const dir = join(base, "shims");
  mkdirSync(dir);
  writeFileSync(join(dir, "python3"), '#!/bin/sh\nexec pyenv exec python3 "$@"\n', { mode: 0o755 });
  const scratch = join(base, "scratch");
  mkdirSync(scratch);
  return { dir, scratch };
}

test("each take is a fresh copy of the directory: what one jail writes in its copy is not in the next one's", async () => {
  const { dir, scratch } = shims();
  const copies = new ScratchCopies([dir], scratch);
  const first = copies.take(dir);
  expect(first).not.toBeNull();
  expect(readFileSync(join(first!, "python3"), "utf8")).toContain("pyenv exec");
  writeFileSync(join(first!, ".pyenv-shim"), "rehash lock");
  const second = copies.take(dir);
  expect(second).not.toBe(first);
  expect(readdirSync(second!)).toEqual(["python3"]);
  expect(readdirSync(dir)).toEqual(["python3"]);
  await copies.close();
});

test("the next copy is made ahead in the background: once made, a take finds it ready (no copy made at the take)", async () => {
  const { dir, scratch } = shims();
  const copies = new ScratchCopies([dir], scratch);
  // The copy made ahead at the start: there, whole, before any take.
  await copies.settle();
  const madeAhead = readdirSync(scratch);
  expect(madeAhead).toHaveLength(1);
  expect(readdirSync(join(scratch, madeAhead[0]!))).toEqual(["python3"]);
  const taken = copies.take(dir);
  expect(taken).toBe(join(scratch, madeAhead[0]!));
  await copies.close();
  // The take started the next one; close waited for it and made no more.
  expect(readdirSync(scratch)).toHaveLength(2);
});

test("a directory cp cannot copy gives no copy (bound read-only instead), and close leaves nothing running", async () => {
  const { scratch } = shims();
  const missing = join(scratch, "..", "no-such-shims");
  const copies = new ScratchCopies([missing], scratch);
  expect(copies.take(missing)).toBeNull();
  await copies.close();
  expect(existsSync(missing)).toBe(false);
});
