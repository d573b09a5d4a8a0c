import { StringDecoder } from "node:string_decoder";

/** One framed record from a byte stream. */
export type FramedLine =
  | { readonly kind: "line"; readonly text: string }
  /** A record longer than the limit: its start is kept, the rest skipped up to the next LF. */
  | { readonly kind: "oversized"; readonly head: string; readonly bytes: number };

/**
 * Splits a byte stream into records on LF only. Not `node:readline`: it also splits on U+2028/U+2029,
 * which are legal inside JSON strings. A trailing CR is stripped (CRLF writers). Memory is bounded by
 * `maxLineBytes`: a longer record is reported as oversized instead of being buffered.
 */
export class LfLineSplitter {
  readonly #maxLineBytes: number;
  #decoder = new StringDecoder("utf8");
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #oversized: { head: string; bytes: number } | null = null;

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
      this.#accumulate(chunk.subarray(start, nl));
      out.push(this.#flushRecord());
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
      const head = Buffer.concat([...this.#pending, part]).subarray(0, 200);
      this.#oversized = { head: head.toString("utf8"), bytes: this.#pendingBytes + part.length };
      this.#pending = [];
      this.#pendingBytes = 0;
      return;
    }
    this.#pending.push(Buffer.from(part));
    this.#pendingBytes += part.length;
  }

  #flushRecord(): FramedLine {
    if (this.#oversized) {
      const record: FramedLine = { kind: "oversized", ...this.#oversized };
      this.#oversized = null;
      this.#decoder = new StringDecoder("utf8");
      return record;
    }
    const bytes = Buffer.concat(this.#pending);
    this.#pending = [];
    this.#pendingBytes = 0;
    let text = this.#decoder.write(bytes) + this.#decoder.end();
    this.#decoder = new StringDecoder("utf8");
    if (text.endsWith("\r")) text = text.slice(0, -1);
    return { kind: "line", text };
  }
}
