import { describe, expect, test } from "vitest";
import { tokenEndInBytes, tokenStartInBytes } from "../src/lib/clip.js";
import { HeadTailBuffer } from "../src/process/head-tail.js";

const bytes = (text: string) => Buffer.from(text, "utf8");

/** A buffer that kept `head` and `tail` bytes of `text`, pushed in chunks of `chunk` bytes. */
function buffered(text: string, head: number, tail: number, chunk = 7): HeadTailBuffer {
  const buffer = new HeadTailBuffer(head, tail);
  const all = bytes(text);
  for (let at = 0; at < all.length; at += chunk) buffer.push(all.subarray(at, at + chunk));
  return buffer;
}

describe("byte cuts outside tokens (src/lib/clip.ts)", () => {
  test("a kept start ends where it was cut unless the cut splits a token, then at the token's start", () => {
    expect(tokenStartInBytes(bytes("say abc"), 7, 0x20)).toBe(7);
    expect(tokenStartInBytes(bytes("say abc"), 7, 0x64)).toBe(4);
    expect(tokenStartInBytes(bytes("say abc"), 7, null)).toBe(4); // unknown next byte: taken to go on with the token
    expect(tokenStartInBytes(bytes("say "), 4, 0x64)).toBe(4);
    expect(tokenStartInBytes(bytes("abcdef"), 6, null)).toBe(0);
  });

  test("a kept end starts where it was cut unless the cut splits a token or a character, then after them", () => {
    expect(tokenEndInBytes(bytes("abc def"), 0, 0x20)).toBe(0);
    expect(tokenEndInBytes(bytes("abc def"), 0, 0x7a)).toBe(3);
    expect(tokenEndInBytes(bytes("abc def"), 0, null)).toBe(3);
    expect(tokenEndInBytes(bytes("xyz"), 0, null)).toBe(3);
    // The last two bytes of "é" (0xc3 0xa9) after a cut inside it: the half character goes too.
    expect(tokenEndInBytes(bytes("é ok").subarray(1), 0, 0xc3)).toBe(1);
  });
});

describe("HeadTailBuffer", () => {
  test("a stream that fits is given back whole, as bytes and as text", () => {
    const buffer = buffered("line one\nline two\n", 8, 16);
    expect(buffer.toBuffer().toString()).toBe("line one\nline two\n");
    expect(buffer.tailText(4096)).toBe("line one\nline two\n");
  });

  test("the omission marker counts every byte left out, a token split at either cut included", () => {
    const text = `start ghp_abcdef middle ${"m".repeat(50)} tokenxyz end`;
    const buffer = buffered(text, 10, 7);
    const kept = buffer.toBuffer().toString();
    // Head "start ghp_" would keep half a token, tail "xyz end" its end: both go whole.
    expect(kept).toBe(`start \n[… ${text.length - 6 - 4} bytes omitted by handoff …]\n end`);
    expect(buffer.totalBytes).toBe(text.length);
  });

  test("a tail text past its limit starts with the marker, outside any token, and fits the limit", () => {
    const text = `${"word ".repeat(30)}secret-token-abcdef and the end`;
    const tail = buffered(text, 0, 4096).tailText(60);
    expect(tail.length).toBeLessThanOrEqual(60);
    expect(tail).toBe(`(${text.length - " and the end".length} earlier bytes) … and the end`);
  });

  test("a tail text whose start was dropped by the buffer itself judges the cut by the last byte dropped", () => {
    const tail = buffered(`${"x".repeat(100)} kept words`, 0, 14, 3).tailText(4096);
    // The buffer holds "xxx kept words"; the x's before it were dropped, so "xxx" is the end of a cut token.
    expect(tail).toBe("(100 earlier bytes) … kept words");
  });

  test("a stream that is one token longer than the tail keeps none of it", () => {
    expect(buffered("e".repeat(10_000), 0, 4096).tailText(4096)).toBe("(10000 earlier bytes) …");
  });
});
