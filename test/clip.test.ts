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

  test("a cut that would split a token goes back to the token's start, so a secret is never kept in part", () => {
    expect(clip("see abcdefgh more", 8)).toBe("see … (13 more characters)");
    expect(clip("x\ttoken=ghp_abc more", 12)).toBe("x\ttoken=… (12 more characters)");
    expect(clip("key sk-proj-ABC_def-123 more", 14)).toBe("key … (24 more characters)");
    // Anything but ASCII letters, digits, `_` and `-` ends a token: Unicode spaces, punctuation, other letters.
    expect(clip("one\u00a0two three", 6)).toBe("one\u00a0… (9 more characters)");
    expect(clip('{"a":"bcdef","g":1}', 9)).toBe('{"a":"… (13 more characters)');
    expect(clip("café123 x", 6)).toBe("café… (5 more characters)");
  });

  test("compact JSON or a minified line longer than the limit keeps its start up to the last punctuation", () => {
    const json = JSON.stringify(Array.from({ length: 2000 }, (_, i) => ({ id: i, name: `item${i}` })));
    const clipped = clip(json);
    expect(clipped.length).toBeGreaterThan(3900);
    expect(json.startsWith(clipped.slice(0, clipped.indexOf("… (")))).toBe(true);
  });

  test("a text that is one token up to the limit keeps nothing of it", () => {
    expect(clip("x".repeat(10_000))).toBe(clipMarker(10_000));
    expect(clip("y".repeat(5000), 4000)).toBe("… (5000 more characters)");
  });

  test("a surrogate pair is never split: it is not a token character, so the cut lands beside it", () => {
    const text = `a ${"🙂".repeat(10)}`;
    expect(clip(text, 7)).toBe(`a 🙂🙂… (${text.length - 6} more characters)`);
    expect(clip(text, 8)).toBe(`a 🙂🙂🙂… (${text.length - 8} more characters)`);
  });

  test("keeps exactly the longest start of the text, up to the limit, that does not end inside a token (random texts, long tokens too)", () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed % n;
    };
    const pieces = ["a", "Z", "_", "-", "7", "🙂", " ", "\n", ".", "=", '"', "é", "x".repeat(70), "y".repeat(700)];
    const token = /[A-Za-z0-9_-]/;
    for (let round = 0; round < 2000; round++) {
      const text = Array.from({ length: random(40) }, () => pieces[random(pieces.length)]).join("");
      const limit = random(text.length + 5);
      let cut = Math.min(limit, text.length);
      if (cut < text.length && token.test(text[cut]!)) while (cut > 0 && token.test(text[cut - 1]!)) cut--;
      else if (cut < text.length && /[\ud800-\udbff]/.test(text[cut - 1] ?? "")) cut--;
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
