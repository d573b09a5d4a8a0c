import { describe, expect, test } from "vitest";
import { type FramedLine, LfLineSplitter } from "../src/agent/jsonl.js";

/** Feeds the chunks in order, then ends the stream; returns every record. */
function frame(chunks: readonly (string | Buffer)[], maxLineBytes?: number): FramedLine[] {
  const splitter = new LfLineSplitter(maxLineBytes);
  const out: FramedLine[] = [];
  for (const chunk of chunks) out.push(...splitter.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk));
  out.push(...splitter.end());
  return out;
}

const line = (text: string): FramedLine => ({ kind: "line", text });

describe("LfLineSplitter", () => {
  test("U+2028 and U+2029 inside a JSON string stay in one line (node:readline would split there)", () => {
    const json = JSON.stringify({ type: "message", text: "a\u2028b\u2029c" });
    expect(json).toContain("\u2028"); // JSON.stringify leaves both raw, as agent CLIs do
    const records = frame([`${json}\n`]);
    expect(records).toEqual([line(json)]);
    expect(JSON.parse((records[0] as { text: string }).text).text).toBe("a\u2028b\u2029c");
  });

  test("CRLF line ends lose their CR; a lone CR inside a line stays", () => {
    expect(frame(["one\r\ntwo\r\n", "th\rree\n"])).toEqual([line("one"), line("two"), line("th\rree")]);
  });

  test("an unterminated last line is still a record at the end of the stream", () => {
    const splitter = new LfLineSplitter();
    expect(splitter.push(Buffer.from("first\nsecond"))).toEqual([line("first")]);
    expect(splitter.end()).toEqual([line("second")]);
    expect(splitter.end()).toEqual([]);
  });

  test("no output and a trailing newline make no phantom record; an empty line in the middle is kept", () => {
    expect(frame([])).toEqual([]);
    expect(frame(["a\n"])).toEqual([line("a")]);
    expect(frame(["a\n\nb\n"])).toEqual([line("a"), line(""), line("b")]);
  });

  test("a multibyte character split across chunks is decoded whole", () => {
    const bytes = Buffer.from("héllo 🙂 wörld\n");
    const emoji = bytes.indexOf(Buffer.from("🙂"));
    const chunks = [bytes.subarray(0, 2), bytes.subarray(2, emoji + 1), bytes.subarray(emoji + 1, emoji + 3), bytes.subarray(emoji + 3)];
    expect(frame(chunks)).toEqual([line("héllo 🙂 wörld")]);
    // One byte at a time, the hardest split.
    expect(frame([...bytes].map((byte) => Buffer.from([byte])))).toEqual([line("héllo 🙂 wörld")]);
  });

  test("a line split into many chunks is joined, and several lines in one chunk are split", () => {
    expect(frame(['{"a":', "1}\n", '{"b":2}\n{"c"', ":3}\n"])).toEqual([line('{"a":1}'), line('{"b":2}'), line('{"c":3}')]);
  });

  test("an oversized line is reported with its size and head, and the lines after it still come through", () => {
    const big = "x".repeat(100);
    const records = frame(["ok\n", big.slice(0, 40), big.slice(40), "\nafter\n"], 64);
    expect(records).toEqual([line("ok"), { kind: "oversized", head: big, bytes: 100 }, line("after")]);
  });

  test("an oversized line keeps only a 200-byte head (its whole words and the clip marker) and counts every byte, even unterminated", () => {
    const records = frame(["yes ".repeat(75), "y".repeat(700)], 256);
    expect(records).toEqual([{ kind: "oversized", head: `${"yes ".repeat(42)}… (832 more bytes)`, bytes: 1000 }]);
  });

  test("an oversized line's head ends before the word its cut falls in: a secret cut there would not be redacted", () => {
    const records = frame([`${"a".repeat(160)} token-${"x".repeat(2000)}`, "\n"], 256);
    expect(records).toEqual([{ kind: "oversized", head: `${"a".repeat(160)} … (2006 more bytes)`, bytes: 2167 }]);
  });

  test("a line of exactly the limit is a line", () => {
    expect(frame(["z".repeat(64), "\n"], 64)).toEqual([line("z".repeat(64))]);
  });

  test("invalid UTF-8 is replaced, not fatal, and does not leak into the next line", () => {
    expect(frame([Buffer.from([0x61, 0xff, 0x0a, 0x62, 0x0a])])).toEqual([line("a\ufffd"), line("b")]);
    // A truncated multibyte sequence at a line end does not swallow the next line's first byte.
    expect(frame([Buffer.from([0x61, 0xe2, 0x82, 0x0a, 0x62, 0x0a])])).toEqual([line("a\ufffd"), line("b")]);
  });
});
