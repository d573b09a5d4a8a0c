import { tailClipMarker, tokenEndInBytes, tokenStartInBytes } from "../lib/clip.js";

/**
 * Keeps the first and last bytes of an unbounded stream, and counts what it dropped in between. What it gives back is
 * cut outside any token, as src/lib/clip.ts clips: redaction (src/run-dir/redact.ts) runs on it later, and a secret
 * split at a cut would lose the part its pattern needs while the rest was written as it is.
 */
export class HeadTailBuffer {
  readonly #headLimit: number;
  readonly #tailLimit: number;
  #head: Buffer[] = [];
  #headBytes = 0;
  #tail: Buffer[] = [];
  #tailBytes = 0;
  #dropped = 0;
  /** The first and the last byte dropped: whether a cut split a token depends on the bytes on both sides of it. */
  #firstDropped: number | null = null;
  #lastDropped: number | null = null;

  constructor(headLimit: number, tailLimit: number) {
    this.#headLimit = headLimit;
    this.#tailLimit = tailLimit;
  }

  push(chunk: Buffer): void {
    let rest = chunk;
    if (this.#headBytes < this.#headLimit) {
      const take = rest.subarray(0, this.#headLimit - this.#headBytes);
      this.#head.push(Buffer.from(take));
      this.#headBytes += take.length;
      rest = rest.subarray(take.length);
    }
    if (rest.length === 0) return;
    this.#tail.push(Buffer.from(rest));
    this.#tailBytes += rest.length;
    while (this.#tailBytes > this.#tailLimit) {
      const first = this.#tail[0]!;
      const excess = this.#tailBytes - this.#tailLimit;
      const gone = first.subarray(0, Math.min(first.length, excess));
      this.#firstDropped ??= gone[0]!;
      this.#lastDropped = gone[gone.length - 1]!;
      if (first.length <= excess) {
        this.#tail.shift();
        this.#tailBytes -= first.length;
        this.#dropped += first.length;
      } else {
        this.#tail[0] = first.subarray(excess);
        this.#tailBytes -= excess;
        this.#dropped += excess;
      }
    }
  }

  get droppedBytes(): number {
    return this.#dropped;
  }

  get totalBytes(): number {
    return this.#headBytes + this.#tailBytes + this.#dropped;
  }

  /** Head, a marker naming how much was cut, then tail; a token split by either cut is left out whole. */
  toBuffer(): Buffer {
    const head = Buffer.concat(this.#head);
    const tail = Buffer.concat(this.#tail);
    if (this.#dropped === 0) return Buffer.concat([head, tail]);
    const headEnd = tokenStartInBytes(head, head.length, this.#firstDropped);
    const tailStart = tokenEndInBytes(tail, 0, this.#lastDropped);
    const omitted = this.#dropped + (head.length - headEnd) + tailStart;
    return Buffer.concat([
      head.subarray(0, headEnd),
      Buffer.from(`\n[… ${omitted} bytes omitted by handoff …]\n`),
      tail.subarray(tailStart),
    ]);
  }

  /**
   * The last bytes as text, at most `max` characters, for one-line summaries. When bytes came before them, the text
   * starts with the tail clip marker and outside any token.
   */
  tailText(max: number): string {
    const head = Buffer.concat(this.#head);
    const tail = Buffer.concat(this.#tail);
    const stream = this.#dropped === 0 ? Buffer.concat([head, tail]) : tail;
    if (this.#dropped === 0 && stream.length <= max) return stream.toString("utf8");
    const from = Math.max(0, stream.length - Math.max(0, max - MARKER_ROOM));
    const previous = from > 0 ? stream[from - 1]! : this.#lastDropped;
    const start = tokenEndInBytes(stream, from, previous);
    const earlier = this.totalBytes - (stream.length - start);
    return `${tailClipMarker(earlier)}${stream.subarray(start).toString("utf8")}`;
  }
}

/** Room kept for the tail clip marker, `(N earlier bytes) …` with N up to 2^53. */
const MARKER_ROOM = 40;
