import { isAbsolute } from "node:path";
import { CLIP_MARKER_START, TAIL_CLIP_MARKER_END, clipMarkers, tailClipMarkers } from "../lib/clip.js";
import { existingRealPath } from "../lib/paths.js";
import { SECRET_KINDS } from "../patch/rules/secrets.js";

/**
 * Redaction of what the agent and the commands said, before it reaches the run directory: the values of the `--env`
 * variables the agent was given, and anything the secret scanner recognises (src/patch/rules/secrets.ts), become a
 * marker such as `[redacted: --env MY_TOKEN]` or `[redacted: AWS access key id]`. The run directory applies it to
 * events.jsonl, backend-result.json, result.json and test.log; changes.patch is never rewritten (a secret in the
 * patch is a violation already), and request.json and checkpoint.json hold only what handoff was asked and made.
 */

/** Shorter `--env` values are left as they are: redacting `1`, `dev` or `yes` would mangle ordinary text, and a credential is longer. */
export const MIN_REDACTED_LENGTH = 4;

const NONE: ReadonlySet<string> = new Set();

export interface EnvSecret {
  readonly name: string;
  readonly value: string;
}

/** The scanner's kinds as one pattern, each kind wrapped in one capture group, and the marker of each. */
const KIND_SOURCES = SECRET_KINDS.map((kind) => (kind.extent ?? kind.pattern).source);
const KINDS = new RegExp(KIND_SOURCES.map((source) => `(${source})`).join("|"), "g");
/** Where each kind's own group sits among the capture groups (a kind's pattern may hold groups of its own). */
const KIND_GROUPS = KIND_SOURCES.map((_, i) => KIND_SOURCES.slice(0, i).reduce((groups, source) => groups + 1 + groupCount(source), 0));
const KIND_MARKERS = SECRET_KINDS.map((kind) => `[redacted: ${kind.name}]`);
/**
 * A private key block's end without its BEGIN line (cut off before a kept tail, or all but the words the tail's
 * token-safe start left of it), read from where the tail starts.
 */
const KEY_BLOCK_END = /(?:[ A-Z0-9]*-----)?[A-Za-z0-9+/=\s]{0,16384}-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/y;
/** The marker of the kind whose extent is a whole block: the private key. */
const KEY_BLOCK_MARKER = KIND_MARKERS[SECRET_KINDS.findIndex((kind) => kind.extent !== undefined)]!;

export class Redactor {
  /** Longest first: a value that contains another is removed whole, under its own name. */
  readonly #values: readonly { readonly text: string; readonly start: string; readonly latin1: string; readonly marker: string }[];

  /** `secrets`: the `--env` values to remove besides the scanner's kinds; each value is taken as given (see `envSecrets`). */
  constructor(secrets: readonly EnvSecret[] = []) {
    this.#values = secrets
      // A value with a quote, a backslash or a control character appears escaped inside a JSON line the agent wrote
      // (a diagnostic keeps such a line raw): that spelling goes too.
      .flatMap((secret) => [secret, { name: secret.name, value: JSON.stringify(secret.value).slice(1, -1) }])
      .filter((secret, i, all) => i % 2 === 0 || secret.value !== all[i - 1]!.value)
      .sort((a, b) => b.value.length - a.value.length)
      .map((secret) => ({
        text: secret.value,
        start: secret.value.slice(0, MIN_REDACTED_LENGTH),
        latin1: Buffer.from(secret.value, "utf8").toString("latin1"),
        marker: `[redacted: --env ${secret.name}]`,
      }));
  }

  text(text: string): string {
    // Values are replaced as plain text (a regular expression of a 70 KB value would be too large for V8).
    // A value's first characters are looked for first: where they are not, neither is the value nor a start of it a
    // clip kept (most texts), and the one search costs what looking for the whole value did.
    let redacted = text;
    let started = false;
    for (const value of this.#values) {
      if (!redacted.includes(value.start)) continue;
      started = true;
      if (redacted.includes(value.text)) redacted = redacted.replaceAll(value.text, value.marker);
    }
    if (started && redacted.includes(CLIP_MARKER_START)) redacted = this.#clippedValues(redacted);
    // A kept end holds no value's start, so it is looked for wherever a tail marker is.
    if (redacted.includes(TAIL_CLIP_MARKER_END)) redacted = this.#tailClipped(redacted);
    return redacted.replace(KINDS, markerOfKind);
  }

  /**
   * A clipped text (src/lib/clip.ts) never ends inside a token, but an `--env` value can still be cut at one of its
   * other characters (a space, a dot): the start of a value (MIN_REDACTED_LENGTH characters or more) that ends where a clip marker
   * begins goes as the whole value would. The longest such start of any value wins.
   */
  #clippedValues(text: string): string {
    let redacted = "";
    let from = 0;
    for (const match of text.matchAll(clipMarkers())) {
      const end = match.index;
      let start = end;
      let marker = "";
      for (const value of this.#values) {
        const at = valueStartEndingAt(text, end, value.text, Math.max(from, end - value.text.length + 1));
        if (at !== -1 && at < start) [start, marker] = [at, value.marker];
      }
      redacted += text.slice(from, start) + marker;
      from = end;
    }
    return from === 0 ? text : redacted + text.slice(from);
  }

  /**
   * The mirror of #clippedValues for a text whose start was left out (src/lib/clip.ts `tailClipMarker`): the end of a
   * value (MIN_REDACTED_LENGTH characters or more) that begins where a tail marker ends goes as the whole value would,
   * and so do a private key's last base64 lines up to its END line. The longest such end wins.
   */
  #tailClipped(text: string): string {
    let redacted = "";
    let from = 0;
    for (const match of text.matchAll(tailClipMarkers())) {
      const start = match.index + match[0].length;
      KEY_BLOCK_END.lastIndex = start;
      const keyEnd = KEY_BLOCK_END.exec(text);
      let end = keyEnd === null ? start : start + keyEnd[0].length;
      let marker = keyEnd === null ? "" : KEY_BLOCK_MARKER;
      for (const value of this.#values) {
        const length = valueEndStartingAt(text, start, value.text);
        if (start + length > end) [end, marker] = [start + length, value.marker];
      }
      redacted += text.slice(from, start) + marker;
      from = end;
    }
    return from === 0 ? text : redacted + text.slice(from);
  }

  /** Bytes read as latin1 (one character a byte), so that output that is not UTF-8 stays as it was around a marker. */
  bytes(bytes: Buffer): Buffer {
    const latin1 = bytes.toString("latin1");
    let redacted = latin1;
    for (const value of this.#values) if (redacted.includes(value.latin1)) redacted = redacted.replaceAll(value.latin1, value.marker);
    redacted = redacted.replace(KINDS, markerOfKind);
    return redacted === latin1 ? bytes : Buffer.from(redacted, "latin1");
  }

  /** A copy of a JSON value with every string (and key) redacted but under its `verbatim` keys; the value itself when nothing changed. */
  json<T>(value: T, verbatim: readonly string[] = []): T {
    return this.#walk(value, new Set(verbatim)) as T;
  }

  // Nothing is allocated until something changes: most events hold no secret, and every event is walked.
  #walk(value: unknown, verbatim: ReadonlySet<string> = NONE): unknown {
    if (typeof value === "string") return this.text(value);
    if (typeof value !== "object" || value === null) return value;
    if (Array.isArray(value)) {
      let items: unknown[] | null = null;
      for (let i = 0; i < value.length; i++) {
        const item = this.#walk(value[i]);
        if (item === value[i] && items === null) continue;
        items ??= value.slice(0, i);
        items.push(item);
      }
      return items ?? value;
    }
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    // Built with Object.fromEntries once a key or value changed, so that a key such as `__proto__` stays a plain key.
    let entries: (readonly [string, unknown])[] | null = null;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const item = record[key];
      const kept = verbatim.has(key);
      const newKey = kept ? key : this.text(key);
      const newItem = kept ? item : this.#walk(item);
      if (entries === null) {
        if (newKey === key && newItem === item) continue;
        entries = keys.slice(0, i).map((earlier) => [earlier, record[earlier]] as const);
      }
      entries.push([newKey, newItem]);
    }
    return entries === null ? value : Object.fromEntries(entries);
  }
}

/**
 * The `--env` variables as handoff passes them to the agent (from `env`, its own environment), without those
 * not worth redacting: a value under MIN_REDACTED_LENGTH characters, and one that names an existing file or
 * directory by absolute path (JAVA_HOME, a credentials file's location: a place, not the secret itself).
 */
export function envSecrets(names: readonly string[], env: NodeJS.ProcessEnv = process.env): EnvSecret[] {
  const secrets: EnvSecret[] = [];
  for (const name of new Set(names)) {
    const value = env[name];
    if (value === undefined || value.length < MIN_REDACTED_LENGTH || namesAPlace(value)) continue;
    secrets.push({ name, value });
  }
  return secrets;
}

/**
 * Where, from `earliest` on, the longest start of `value` (MIN_REDACTED_LENGTH characters or more, shorter than the
 * value) begins that ends exactly at `end` in `text`; -1 when none does.
 */
function valueStartEndingAt(text: string, end: number, value: string, earliest: number): number {
  const head = value.slice(0, MIN_REDACTED_LENGTH);
  for (let at = text.indexOf(head, Math.max(earliest, 0)); at !== -1 && at <= end - MIN_REDACTED_LENGTH; at = text.indexOf(head, at + 1)) {
    if (value.startsWith(text.slice(at, end))) return at;
  }
  return -1;
}

/**
 * The length of the longest end of `value` (MIN_REDACTED_LENGTH characters or more, shorter than the value) that
 * `text` holds from `start` on; 0 when none does. Only ends as long as the rest of the text are tried.
 */
function valueEndStartingAt(text: string, start: number, value: string): number {
  const room = text.length - start;
  for (let from = Math.max(1, value.length - room); from <= value.length - MIN_REDACTED_LENGTH; from++) {
    if (value.charCodeAt(from) === text.charCodeAt(start) && text.startsWith(value.slice(from), start)) return value.length - from;
  }
  return 0;
}

function namesAPlace(value: string): boolean {
  return isAbsolute(value) && existingRealPath(value) !== null;
}

/** The marker of the kind that matched: the kind whose own capture group is set. */
function markerOfKind(...args: unknown[]): string {
  const groups = args.slice(1);
  return KIND_MARKERS[KIND_GROUPS.findIndex((start) => groups[start] !== undefined)] ?? "[redacted]";
}

/** How many capture groups a pattern holds: the length of a match of the pattern or nothing, less the whole match. */
function groupCount(source: string): number {
  return new RegExp(`${source}|`).exec("")!.length - 1;
}
