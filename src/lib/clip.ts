/**
 * Clipping long texts (a tool's output can be megabytes) so that redaction still works on what is kept. Redaction
 * (src/run-dir/redact.ts) runs later, on the clipped text; a secret cut in two there would lose the tail its
 * pattern needs, and its head would be logged as it is. So a clip never ends inside a run of non-whitespace: the
 * word that spans the limit goes whole (every credential the scanner knows is one such word, a private key's
 * base64 lines each one), and a value with spaces in it is the Redactor's to recognise by the marker.
 */

/**
 * The one format of the clip marker, `… (N more characters)` (`bytes` where only bytes were counted): the Redactor
 * finds clipped texts by it.
 */
export function clipMarker(more: number, unit: "characters" | "bytes" = "characters"): string {
  return `… (${more} more ${unit})`;
}

/** Every clip marker in a text (a fresh expression each call: it is global); a match's index is where the kept text ends. */
export function clipMarkers(): RegExp {
  return /… \(\d+ more (?:characters|bytes)\)/g;
}

/** A cheap test before looking for markers: how every marker starts. */
export const CLIP_MARKER_START = "… (";

/** Output text in events stays bounded: at most `limit` characters of `text` and the marker, never part of a word. */
export function clip(text: string, limit = 4000): string {
  if (text.length <= limit) return text;
  const cut = wordStart(text, limit);
  return `${text.slice(0, cut)}${clipMarker(text.length - cut)}`;
}

/**
 * Where a cut at `limit` may go: `limit` itself when it falls between two characters of which one is whitespace,
 * else the start of the word it would split, however far back (at most `limit` characters are looked at, the text
 * kept: a text with no whitespace before the limit keeps nothing). A text known only up to `limit` (nothing after
 * it) is taken to go on with a word.
 */
export function wordStart(text: string, limit: number): number {
  if (isWhitespace(text.charCodeAt(limit))) return limit;
  const near = Math.max(0, limit - NEAR);
  for (let cut = limit; cut > near; cut--) if (isWhitespace(text.charCodeAt(cut - 1))) return cut;
  const last = LAST_WHITESPACE.exec(text.slice(0, near));
  return last === null ? 0 : last.index + 1;
}

/** Characters looked at one by one before a word is taken to be long (most words end within a few). */
const NEAR = 64;
/** The last whitespace of a text: over a long word, the regular expression engine is several times faster than a loop. */
const LAST_WHITESPACE = /\s(?=\S*$)/;

/** Exactly what `\s` matches (ECMAScript WhiteSpace and LineTerminator), without a regular expression per character. */
function isWhitespace(code: number): boolean {
  if (code < 0x80) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}
