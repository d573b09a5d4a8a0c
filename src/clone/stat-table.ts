import type { BigIntStats } from "node:fs";

/**
 * The lstat tuples of a source snapshot (mode with the file type, size, mtime ns, ctime ns, inode, link count), held
 * in columns of 64-bit integers instead of one formatted string per entry: at tens of thousands of files the strings
 * and their garbage were a fifth of the snapshot's time. Exact: no field is rounded or hashed.
 */
const COLUMNS = 6;

export class StatTable {
  readonly #slots = new Map<string, number>();
  readonly #hashes = new Map<string, string>();
  #values = new BigInt64Array(COLUMNS * 1024);

  /** Whether the entry is a regular file (S_IFREG in its mode). */
  isFile(key: string): boolean {
    const slot = this.#slots.get(key);
    return slot !== undefined && (Number(this.#values[slot * COLUMNS]!) & 0o170000) === 0o100000;
  }

  add(key: string, stats: BigIntStats): void {
    let slot = this.#slots.get(key);
    if (slot === undefined) {
      slot = this.#slots.size;
      this.#slots.set(key, slot);
      if ((slot + 1) * COLUMNS > this.#values.length) {
        const grown = new BigInt64Array(this.#values.length * 2);
        grown.set(this.#values);
        this.#values = grown;
      }
    }
    const at = slot * COLUMNS;
    // BigInt64Array wraps values past 2^63 (a 64-bit inode) the same way every time, so equality still holds.
    this.#values[at] = stats.mode;
    this.#values[at + 1] = stats.size;
    this.#values[at + 2] = stats.mtimeNs;
    this.#values[at + 3] = stats.ctimeNs;
    this.#values[at + 4] = stats.ino;
    this.#values[at + 5] = stats.nlink;
  }

  /** The entry's content hash, for files whose bytes stat cannot vouch for (or a word saying why there is none). */
  setHash(key: string, hash: string): void {
    this.#hashes.set(key, hash);
  }

  /** Keys whose tuple or hash differs from `other`'s, or that only one of the two has, in this table's order first. */
  differences(other: StatTable): string[] {
    const changed: string[] = [];
    for (const [key, slot] of this.#slots) {
      const otherSlot = other.#slots.get(key);
      if (otherSlot === undefined || !this.#sameTuple(slot, other, otherSlot) || this.#hashes.get(key) !== other.#hashes.get(key))
        changed.push(key);
    }
    for (const key of other.#slots.keys()) if (!this.#slots.has(key)) changed.push(key);
    return changed;
  }

  #sameTuple(slot: number, other: StatTable, otherSlot: number): boolean {
    for (let column = 0; column < COLUMNS; column++) {
      if (this.#values[slot * COLUMNS + column] !== other.#values[otherSlot * COLUMNS + column]) return false;
    }
    return true;
  }
}
