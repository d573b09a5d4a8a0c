import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { expect, test } from "vitest";
import type { StreamParser } from "../../src/agent/stream-contract.js";
import type { AgentEvent } from "../../src/vocabulary/events.js";
import { LfLineSplitter } from "../../src/agent/jsonl.js";

export const TRANSCRIPTS = resolve(import.meta.dirname, "../../fixtures/transcripts");

/** A transcript replayed through a parser: every event, then what finish() decided. */
export function replay(transcript: string, parser: StreamParser): { events: AgentEvent[]; finish: ReturnType<StreamParser["finish"]> } {
  const events: AgentEvent[] = [];
  // The process module's own framing (LF only, CR stripped, oversized records cut), records forwarded as it does.
  const splitter = new LfLineSplitter();
  for (const record of [...splitter.push(Buffer.from(transcript)), ...splitter.end()]) {
    if (record.kind === "oversized") {
      events.push({ type: "diagnostic", message: `an output line of ${record.bytes} bytes was too long to parse`, raw: record.head });
      continue;
    }
    events.push(...parser.push(record.text));
  }
  return { events, finish: parser.finish() };
}

/**
 * One test per recorded transcript `fixtures/transcripts/<cli>/<case>.jsonl`: replaying it must give exactly
 * `<case>.golden.json`. UPDATE_GOLDEN=1 rewrites the golden files (review the diff before committing).
 */
export function goldenTranscriptTests(cli: string, createParser: () => StreamParser): void {
  const dir = join(TRANSCRIPTS, cli);
  const cases = existsSync(dir)
    ? readdirSync(dir)
        .filter((name) => name.endsWith(".jsonl"))
        .sort()
    : [];
  test(`has recorded transcripts for ${cli}`, () => {
    expect(cases.length).toBeGreaterThan(0);
  });
  for (const name of cases) {
    const base = name.slice(0, -".jsonl".length);
    test(`normalizes the recorded ${cli} transcript '${base}' as its golden file says`, () => {
      const actual = replay(readFileSync(join(dir, name), "utf8"), createParser());
      const goldenPath = join(dir, `${base}.golden.json`);
      const serialized = `${JSON.stringify(actual, null, 2)}\n`;
      if (process.env.UPDATE_GOLDEN === "1") writeFileSync(goldenPath, serialized);
      expect(existsSync(goldenPath), `${goldenPath} is missing: record it with UPDATE_GOLDEN=1`).toBe(true);
      expect(JSON.parse(serialized)).toEqual(JSON.parse(readFileSync(goldenPath, "utf8")));
    });
  }
}
