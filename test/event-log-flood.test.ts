import { readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { progressLine, progressWants } from "../src/cli/progress.js";
import { RunDirectory } from "../src/run-dir/run-dir.js";
import { Redactor } from "../src/run-dir/redact.js";
import { type EventHook, RunRecorder } from "../src/run/run-recorder.js";
import type { RecordedEvent, RunnerEvent } from "../src/vocabulary/events.js";
import { tempDir } from "./helpers/repo.js";
import { readEvents } from "./helpers/run.js";
import { canMountTmpfs, smallFileSystem } from "./helpers/tmpfs.js";

const SECRET = "AKIAABCDEFGHIJKLMNOP"; // an AWS access key id, as the secret scanner knows it
const BIG = `${"z".repeat(64 * 1024)} ${SECRET}`;

/** A run directory whose log an agent floods past its share (64 MiB), with the hook seeing what the recorder passes on. */
function flood(hook: EventHook) {
  const dir = RunDirectory.create(join(tempDir("handoff-flood"), "runs"), "flood", new Redactor());
  const record = new RunRecorder(dir, hook, undefined);
  record.emit({ type: "phase.started", phase: "agent" });
  for (let i = 0; i < 1100; i++) record.emit({ type: "agent.tool.finished", id: `t${i}`, ok: true, output: BIG });
  record.emit({ type: "agent.message", text: `done ${SECRET}` });
  record.emit({ type: "phase.finished", phase: "agent", durationMs: 1, ok: true });
  record.emit({ type: "run.finished", terminalReason: "no_changes", detail: null });
  dir.close();
  return readEvents(dir.path) as RecordedEvent[];
}

describe("an agent's flood past its share of events.jsonl", () => {
  test("a hook without `wants` still gets every event, redacted, also the ones the log leaves out", () => {
    const seen: RecordedEvent[] = [];
    const logged = flood((event) => seen.push(event));
    expect(seen).toHaveLength(1104);
    // The count of left-out events takes its number just before run.finished.
    expect(seen.map((event) => event.seq)).toEqual([...Array.from({ length: 1103 }, (_, i) => i + 1), 1105]);
    for (const event of seen) expect(JSON.stringify(event)).not.toContain(SECRET);
    expect(seen.at(-3)).toMatchObject({ type: "agent.message", text: "done [redacted: AWS access key id]" });
    expect(logged.length).toBeLessThan(seen.length);
  });

  test("a hook that wants only some types gets the left-out events of those types, redacted, and the log is the same", () => {
    const seen: RecordedEvent[] = [];
    const everything = flood(() => {});
    const hook = Object.assign((event: RecordedEvent) => seen.push(event), {
      wants: (type: RecordedEvent["type"]) => type !== "agent.tool.finished",
    });
    const logged = flood(hook);
    // The log holds the same lines (its times aside), and the count of left-out events counts the unredacted ones too.
    const withoutTime = (events: RecordedEvent[]) => events.map(({ time: _, ...event }) => event);
    expect(withoutTime(logged)).toEqual(withoutTime(everything));
    expect(logged.at(-2)).toMatchObject({ type: "diagnostic", message: expect.stringMatching(/^\d+ events were left out/) });
    // What the log keeps still reaches the hook whatever its type; past the share only the wanted types do.
    const keptTools = logged.filter((event) => event.type === "agent.tool.finished").length;
    expect(seen.filter((event) => event.type === "agent.tool.finished")).toHaveLength(keptTools);
    expect(keptTools).toBeLessThan(1100);
    const message = seen.find((event) => event.type === "agent.message");
    expect(message).toMatchObject({ text: "done [redacted: AWS access key id]", seq: 1102 });
    expect(logged.some((event) => event.type === "agent.message")).toBe(false);
    expect(seen.at(-1)).toMatchObject({ type: "run.finished", seq: 1105 });
  });
});

describe("the progress lines' wants", () => {
  const samples: RunnerEvent[] = [
    { type: "agent.session", sessionId: "s" },
    { type: "agent.message", text: "hello" },
    { type: "agent.reasoning", text: "hmm" },
    { type: "agent.tool.started", id: "1", name: "shell", input: { command: "ls" } },
    { type: "agent.tool.finished", id: "1", ok: true, output: "a" },
    { type: "agent.file.changed", path: "a.ts", change: "update" },
    { type: "agent.usage", inputTokens: 1, outputTokens: 1, costUsd: null },
    { type: "agent.error", message: "oops" },
    { type: "agent.final", text: "done" },
    { type: "agent.json", data: {} },
    { type: "agent.text", stream: "stdout", text: "x" },
    { type: "diagnostic", message: "a line that is not JSON" },
    { type: "phase.started", phase: "agent" },
  ];
  for (const agent of [true, false]) {
    test(`every event that has a progress line ${agent ? "with" : "without"} the agent's words is wanted`, () => {
      const wants = progressWants({ agent });
      for (const event of samples) {
        const line = progressLine({ ...event, seq: 1, time: "t" } as RecordedEvent, { agent });
        if (line !== null) expect(wants(event.type), event.type).toBe(true);
      }
      expect(wants("agent.tool.finished")).toBe(false);
      expect(wants("phase.started")).toBe(true);
    });
  }
});

describe("the agent's events are written a burst at a time", () => {
  test("the events of one burst are in the log once it is handled, and always before handoff's next own event", async () => {
    const dir = RunDirectory.create(join(tempDir("handoff-burst"), "runs"), "burst");
    onTestFinished(() => dir.close());
    dir.event({ type: "phase.started", phase: "agent" });
    for (let i = 0; i < 3; i++) dir.event({ type: "agent.message", text: `m${i}` });
    await Promise.resolve();
    expect(readEvents(dir.path).map((event) => event.type)).toEqual(["phase.started", "agent.message", "agent.message", "agent.message"]);
    dir.event({ type: "agent.message", text: "last" });
    dir.event({ type: "phase.finished", phase: "agent", durationMs: 1, ok: true });
    expect(readEvents(dir.path).map((event) => event.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  test.skipIf(!canMountTmpfs)(
    "a burst that meets a full disk is cut back off and its lines tried one by one: whole lines only, each lost one counted",
    () => {
      const disk = smallFileSystem(2);
      const dir = RunDirectory.create(join(disk, "runs"), "events");
      onTestFinished(() => dir.close());
      dir.event({ type: "phase.started", phase: "agent" });
      try {
        writeFileSync(join(disk, "filler"), Buffer.alloc(4 * 1024 * 1024));
      } catch {
        // ENOSPC: the file system is full, as wanted
      }
      // Never asking for writeFailure in between: the lines go out in bursts of a quarter MiB.
      for (let i = 0; i < 200; i++) dir.event({ type: "agent.message", text: "x".repeat(6000) });
      unlinkSync(join(disk, "filler"));
      dir.event({ type: "run.finished", terminalReason: "policy_or_artifact_error", detail: "artifact_write_failed" });
      expect(dir.writeFailure).toEqual({ artifact: "events.jsonl", message: "ENOSPC" });
      const text = readFileSync(join(dir.path, "events.jsonl"), "utf8");
      for (const line of text.trimEnd().split("\n")) expect(() => JSON.parse(line)).not.toThrow();
      const logged = readEvents(dir.path);
      const lost = Number(/^(\d+) events could not be written \(ENOSPC\)/.exec(String(logged.at(-2)?.message))?.[1]);
      expect(lost).toBeGreaterThan(0);
      expect(logged.filter((event) => event.type === "agent.message").length + lost).toBe(200);
      expect(logged.at(-1)).toMatchObject({ type: "run.finished" });
    },
  );
});
