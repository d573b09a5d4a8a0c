/** Keeps the first and last bytes of an unbounded stream, and counts what it dropped in between. */
export class HeadTailBuffer {
  readonly #headLimit: number;
  readonly #tailLimit: number;
  #head: Buffer[] = [];
  #headBytes = 0;
  #tail: Buffer[] = [];
  #tailBytes = 0;
  #dropped = 0;

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

  /** Head, a marker naming how much was cut, then tail. */
  toBuffer(): Buffer {
    const parts = [...this.#head];
    if (this.#dropped > 0) parts.push(Buffer.from(`\n[… ${this.#dropped} bytes omitted by handoff …]\n`));
    parts.push(...this.#tail);
    return Buffer.concat(parts);
  }

  /** The last `max` bytes as text, for one-line summaries. */
  tailText(max: number): string {
    const all = this.toBuffer();
    return all.subarray(Math.max(0, all.length - max)).toString("utf8");
  }
}
