import { chmodSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { z } from "zod";
import { cachedProbe } from "../src/containment/boot-probes.js";
import { tempDir } from "./helpers/repo.js";

/**
 * Issue 32: what a run probes before it starts (bubblewrap's trial, the network namespace, an overlay mount) is
 * remembered for this boot in handoff's cache, and probed again whenever anything the answer rests on changed, the
 * file is not handoff's own private, whole file, or the last probe failed.
 */

const Answer = z.object({ ok: z.boolean(), version: z.string().optional() });
type Answer = z.infer<typeof Answer>;

function setting() {
  const root = tempDir("handoff-probes");
  const cacheDir = join(root, "cache");
  const bootIdFile = join(root, "boot_id");
  const program = join(root, "bwrap");
  writeFileSync(bootIdFile, "5b1f3c2e-0000-4000-8000-000000000001\n");
  writeFileSync(program, "#!/bin/sh\n", { mode: 0o755 });
  let calls = 0;
  let answer: Answer = { ok: true, version: "0.8.0" };
  const ask = () =>
    cachedProbe(
      cacheDir,
      "bwrap",
      { programs: [program], extra: ["--unshare-all"], bootIdFile },
      Answer,
      async () => {
        calls++;
        return answer;
      },
      (value) => value.ok,
    );
  return {
    cacheDir,
    bootIdFile,
    program,
    file: join(cacheDir, "probes", "bwrap.json"),
    ask,
    calls: () => calls,
    answer: (next: Answer) => {
      answer = next;
    },
  };
}

describe("a probe that passed is remembered for this boot", () => {
  test("probed once, then read back: the file is 0600 in a 0700 directory of the cache", async () => {
    const s = setting();
    expect(await s.ask()).toEqual({ ok: true, version: "0.8.0" });
    expect(await s.ask()).toEqual({ ok: true, version: "0.8.0" });
    expect(s.calls()).toBe(1);
    expect(lstatSync(s.file).mode & 0o777).toBe(0o600);
    expect(lstatSync(join(s.cacheDir, "probes")).mode & 0o777).toBe(0o700);
  });

  test("another boot (a new boot id) probes again", async () => {
    const s = setting();
    await s.ask();
    writeFileSync(s.bootIdFile, "5b1f3c2e-0000-4000-8000-000000000002\n");
    await s.ask();
    expect(s.calls()).toBe(2);
    await s.ask();
    expect(s.calls()).toBe(2);
  });

  test("a replaced program (another mtime, size or inode) probes again", async () => {
    const s = setting();
    await s.ask();
    utimesSync(s.program, new Date(2000, 1, 1), new Date(2000, 1, 1));
    await s.ask();
    expect(s.calls()).toBe(2);
    writeFileSync(s.program, "#!/bin/sh\nexit 0\n");
    await s.ask();
    expect(s.calls()).toBe(3);
  });

  test("no boot id to read (no /proc): nothing is cached, every run probes", async () => {
    const s = setting();
    writeFileSync(s.bootIdFile, "");
    await s.ask();
    await s.ask();
    expect(s.calls()).toBe(2);
  });
});

describe("a failure is never remembered", () => {
  test("a failed probe is probed again next time, and its later success is seen at once", async () => {
    const s = setting();
    s.answer({ ok: false });
    expect(await s.ask()).toEqual({ ok: false });
    expect(await s.ask()).toEqual({ ok: false });
    expect(s.calls()).toBe(2);
    s.answer({ ok: true, version: "0.9.0" });
    expect(await s.ask()).toEqual({ ok: true, version: "0.9.0" });
    expect(s.calls()).toBe(3);
  });
});

describe("a cache file that is not handoff's own, private and whole is probed again", () => {
  test("corrupt: not JSON, another format, a value that does not parse", async () => {
    const s = setting();
    await s.ask();
    for (const garbage of ["{not json", JSON.stringify({ format: 99, context: "x", value: { ok: true } })]) {
      writeFileSync(s.file, garbage, { mode: 0o600 });
      const before = s.calls();
      expect(await s.ask()).toEqual({ ok: true, version: "0.8.0" });
      expect(s.calls()).toBe(before + 1);
    }
    // The right context, a value the schema refuses.
    const stored = JSON.parse(readFileSync(s.file, "utf8"));
    writeFileSync(s.file, JSON.stringify({ ...stored, value: { ok: "yes" } }), { mode: 0o600 });
    const before = s.calls();
    await s.ask();
    expect(s.calls()).toBe(before + 1);
    // Written whole again: the next run reads it.
    await s.ask();
    expect(s.calls()).toBe(before + 1);
  });

  test("readable by others (not 0600) is not believed", async () => {
    const s = setting();
    await s.ask();
    chmodSync(s.file, 0o644);
    await s.ask();
    expect(s.calls()).toBe(2);
    expect(lstatSync(s.file).mode & 0o777).toBe(0o600);
  });

  test("a symbolic link in its place is never followed", async () => {
    const s = setting();
    await s.ask();
    const elsewhere = join(tempDir("handoff-probes-elsewhere"), "bwrap.json");
    writeFileSync(elsewhere, readFileSync(s.file), { mode: 0o600 });
    mkdirSync(join(s.cacheDir, "probes"), { recursive: true });
    rmSync(s.file);
    symlinkSync(elsewhere, s.file);
    await s.ask();
    expect(s.calls()).toBe(2);
    expect(lstatSync(s.file).isFile()).toBe(true);
  });

  test("without a cache directory every call probes", async () => {
    let calls = 0;
    const probe = () =>
      cachedProbe(
        null,
        "bwrap",
        { programs: [] },
        Answer,
        async () => ({ ok: true, version: String(++calls) }),
        () => true,
      );
    await probe();
    await probe();
    expect(calls).toBe(2);
  });
});
