/**
 * Clipping long texts (a tool's output can be megabytes) so that redaction still works on what is kept. Redaction
 * (src/run-dir/redact.ts) runs later, on the clipped text; a secret cut in two there would lose the tail its
 * pattern needs, and its head would be logged as it is. So a clip never ends inside a run of the characters every
 * token the scanner knows is made of (ASCII letters, digits, `_` and `-`): that run goes whole. A private key cut in
 * its base64 lines is still recognised by its BEGIN line, and an `--env` value cut elsewhere is the Redactor's to
 * recognise by the marker.
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

/** Output text in events stays bounded: at most `limit` characters of `text` and the marker, never part of a token. */
export function clip(text: string, limit = 4000): string {
  if (text.length <= limit) return text;
  const cut = wordStart(text, limit);
  return `${text.slice(0, cut)}${clipMarker(text.length - cut)}`;
}

/**
 * Where a cut at `limit` may go: `limit` itself when one of the two characters it falls between is not a token
 * character, else the start of the token it would split, however far back (at most `limit` characters are looked at,
 * the text kept: a text that is one token up to the limit keeps nothing). A text known only up to `limit` (nothing
 * after it) is taken to go on with a token.
 */
export function wordStart(text: string, limit: number): number {
  const next = text.charCodeAt(limit);
  if (!Number.isNaN(next) && !isTokenChar(next)) return isHighSurrogate(text.charCodeAt(limit - 1)) ? limit - 1 : limit;
  const near = Math.max(0, limit - NEAR);
  for (let cut = limit; cut > near; cut--) if (!isTokenChar(text.charCodeAt(cut - 1))) return cut;
  const last = LAST_NON_TOKEN.exec(text.slice(0, near));
  return last === null ? 0 : last.index + 1;
}

/** Characters looked at one by one before a token is taken to be long (most end within a few). */
const NEAR = 64;
/** The last character that is not a token character: over a long token, the regular expression engine is several times faster than a loop. */
const LAST_NON_TOKEN = /[^A-Za-z0-9_-](?=[A-Za-z0-9_-]*$)/;

/** The first half of a surrogate pair: a cut after it would keep half a character. */
function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * What every credential the scanner knows (src/patch/rules/secrets.ts) is made of after its prefix: ASCII letters,
 * digits, `_` and `-`. Compact JSON, URLs and code are cut at their punctuation instead of losing the whole run.
 */
function isTokenChar(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x5f || code === 0x2d
  );
}

/**
 * The marker before the kept end of a text whose start was left out (a stderr tail), `(N earlier bytes) …`: the
 * Redactor finds such ends by it, as it finds clipped starts by `clipMarker`.
 */
export function tailClipMarker(earlier: number): string {
  return `(${earlier} earlier bytes) …`;
}

/** Every tail clip marker in a text (a fresh expression each call: it is global); a match's end is where the kept text starts. */
export function tailClipMarkers(): RegExp {
  return /\(\d+ earlier bytes\) …/g;
}

/** A cheap test before looking for tail markers: how every one ends. */
export const TAIL_CLIP_MARKER_END = ") …";

/**
 * Bytes cut at both ends, as `clip` cuts text: where the kept start of `bytes` may end when the byte after `end` is
 * `next` (null: unknown, taken to go on with a token). Token characters are ASCII, so bytes can be judged one by one.
 */
export function tokenStartInBytes(bytes: Uint8Array, end: number, next: number | null): number {
  if (end === 0 || !isTokenChar(bytes[end - 1]!) || (next !== null && !isTokenChar(next))) return end;
  let cut = end - 1;
  while (cut > 0 && isTokenChar(bytes[cut - 1]!)) cut--;
  return cut;
}

/**
 * Where the kept end of `bytes` may begin at or after `start` when the byte before it is `previous` (null: unknown,
 * taken to be part of a token): past the rest of a token the cut split, and past the rest of a split UTF-8 character.
 */
export function tokenEndInBytes(bytes: Uint8Array, start: number, previous: number | null): number {
  let cut = start;
  if (previous === null || isTokenChar(previous)) while (cut < bytes.length && isTokenChar(bytes[cut]!)) cut++;
  while (cut < bytes.length && (bytes[cut]! & 0xc0) === 0x80) cut++;
  return cut;
}
