import { describe, expect, test } from "vitest";
import { clip, clipMarker, clipMarkers } from "../src/lib/clip.js";

describe("clip", () => {
  test("a text up to the limit is kept as it is", () => {
    expect(clip("a b c", 5)).toBe("a b c");
    expect(clip("", 0)).toBe("");
  });

  test("a cut at the limit that splits no word is where it always was: the first `limit` characters and the marker", () => {
    expect(clip("abc def ghi", 4)).toBe("abc … (7 more characters)"); // the limit falls after a space
    expect(clip("abc def ghi", 3)).toBe("abc… (8 more characters)"); // the limit falls before a space
    expect(clip("abc\ndef", 3)).toBe("abc… (4 more characters)");
  });

  test("a cut that would split a word goes back to the word's start, so a secret is never kept in part", () => {
    expect(clip("see abcdefgh more", 8)).toBe("see … (13 more characters)");
    expect(clip("x\ttoken=ghp_abc more", 12)).toBe("x\t… (18 more characters)");
    // Any whitespace ends a word, Unicode spaces too.
    expect(clip("one\u00a0two three", 6)).toBe("one\u00a0… (9 more characters)");
    expect(clip("one\u3000two three", 6)).toBe("one\u3000… (9 more characters)");
  });

  test("a text that is one word up to the limit keeps nothing of it", () => {
    expect(clip("x".repeat(10_000))).toBe(clipMarker(10_000));
    expect(clip("y".repeat(5000), 4000)).toBe("… (5000 more characters)");
  });

  test("a surrogate pair is never split: the cut lands on whitespace", () => {
    const text = `a ${"🙂".repeat(10)}`;
    expect(clip(text, 7)).toBe(`a … (${text.length - 2} more characters)`);
  });

  test("keeps exactly the longest start of the text, up to the limit, that ends in whitespace or before it (random texts, long words too)", () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed % n;
    };
    const pieces = ["a", "b", "🙂", " ", "\n", "\t", "\u00a0", "\u2028", "\ufeff", "x".repeat(70), "y".repeat(700)];
    for (let round = 0; round < 2000; round++) {
      const text = Array.from({ length: random(40) }, () => pieces[random(pieces.length)]).join("");
      const limit = random(text.length + 5);
      let cut = Math.min(limit, text.length);
      if (cut < text.length && !/\s/.test(text[cut]!)) while (cut > 0 && !/\s/.test(text[cut - 1]!)) cut--;
      const expected = text.length <= limit ? text : `${text.slice(0, cut)}${clipMarker(text.length - cut)}`;
      expect(clip(text, limit), JSON.stringify({ text, limit })).toBe(expected);
    }
  });

  test("the marker is what the Redactor looks for, with the characters or bytes left out", () => {
    const text = `one${clipMarker(12)} two${clipMarker(3, "bytes")}`;
    expect([...text.matchAll(clipMarkers())].map((match) => [match.index, match[0]])).toEqual([
      [3, "… (12 more characters)"],
      [29, "… (3 more bytes)"],
    ]);
  });
});
