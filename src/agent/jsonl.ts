import { clipMarker, wordStart } from "../lib/clip.js";

/** One framed record from a byte stream. */
export type FramedLine =
  | { readonly kind: "line"; readonly text: string }
  /**
   * A record longer than the limit: its start is kept (cut outside any token, then the clip marker with the bytes left
   * out, as src/lib/clip.ts clips, so that redaction still sees what it must), the rest skipped up to the next LF.
   */
  | { readonly kind: "oversized"; readonly head: string; readonly bytes: number };

/** Bytes of an oversized record kept (decoded) as its head. */
const HEAD_BYTES = 200;
/** Room in the head for the clip marker, `… (N more bytes)` with N up to 2^53. */
const MARKER_ROOM = 32;

/**
 * Splits a byte stream into records on LF only. Not `node:readline`: it also splits on U+2028/U+2029,
 * which are legal inside JSON strings. A trailing CR is stripped (CRLF writers). Memory is bounded by
 * `maxLineBytes`: a longer record is reported as oversized instead of being buffered. Each record is decoded
 * whole, once (invalid UTF-8 becomes U+FFFD and never reaches into the next record); a record that lies inside
 * one chunk is decoded straight from it, so a flood of short lines costs no copies.
 */
export class LfLineSplitter {
  readonly #maxLineBytes: number;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #oversized: { head: Buffer; bytes: number } | null = null;

  constructor(maxLineBytes = 16 * 1024 * 1024) {
    this.#maxLineBytes = maxLineBytes;
  }

  push(chunk: Buffer): FramedLine[] {
    const out: FramedLine[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl === -1) {
        this.#accumulate(chunk.subarray(start));
        break;
      }
      if (this.#pendingBytes === 0 && this.#oversized === null) {
        out.push(recordOf(chunk.subarray(start, nl), this.#maxLineBytes));
      } else {
        this.#accumulate(chunk.subarray(start, nl));
        out.push(this.#flushRecord());
      }
      start = nl + 1;
    }
    return out;
  }

  /** Call once the stream has ended: an unterminated last record is still a record. */
  end(): FramedLine[] {
    if (this.#pendingBytes === 0 && this.#oversized === null) return [];
    return [this.#flushRecord()];
  }

  #accumulate(part: Buffer): void {
    if (part.length === 0) return;
    if (this.#oversized) {
      this.#oversized.bytes += part.length;
      return;
    }
    if (this.#pendingBytes + part.length > this.#maxLineBytes) {
      const head = Buffer.concat([...this.#pending, part.subarray(0, HEAD_BYTES)]).subarray(0, HEAD_BYTES);
      this.#oversized = { head, bytes: this.#pendingBytes + part.length };
      this.#pending = [];
      this.#pendingBytes = 0;
      return;
    }
    this.#pending.push(Buffer.from(part));
    this.#pendingBytes += part.length;
  }

  #flushRecord(): FramedLine {
    if (this.#oversized) {
      const record = oversized(this.#oversized.head, this.#oversized.bytes);
      this.#oversized = null;
      return record;
    }
    const bytes = Buffer.concat(this.#pending);
    this.#pending = [];
    this.#pendingBytes = 0;
    return recordOf(bytes, this.#maxLineBytes);
  }
}

/** One complete record's bytes (without its LF) as a line, or as oversized past the limit. */
function recordOf(bytes: Buffer, maxLineBytes: number): FramedLine {
  if (bytes.length > maxLineBytes) return oversized(bytes.subarray(0, HEAD_BYTES), bytes.length);
  const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length;
  return { kind: "line", text: bytes.toString("utf8", 0, end) };
}

/**
 * An oversized record of `bytes` bytes, from the first of them (`head`): the head whole when it is the record, else
 * its start cut outside any token and the marker, together no longer than the head.
 */
function oversized(head: Buffer, bytes: number): FramedLine {
  const text = head.toString("utf8");
  if (head.length >= bytes) return { kind: "oversized", head: text, bytes };
  const kept = text.slice(0, wordStart(text, Math.max(0, text.length - MARKER_ROOM)));
  return { kind: "oversized", head: `${kept}${clipMarker(bytes - Buffer.byteLength(kept), "bytes")}`, bytes };
}
