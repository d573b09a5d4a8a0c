import { createCipheriv, createHash } from "node:crypto";

/** A seeded PRNG (mulberry32): the synthetic repositories must come out byte-identical from the same seed. */
export function seededRandom(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (below) => Math.floor(next() * below);
  // Box-Muller: file sizes are lognormal, like real source trees.
  const normal = () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
  return { next, int, normal, pick: (items) => items[int(items.length)] };
}

/** Incompressible bytes, deterministic from a label: AES-CTR keystream (GB/s, unlike a JS loop). */
export function randomBytes(label, length) {
  const key = createHash("sha256").update(label).digest();
  const cipher = createCipheriv("aes-256-ctr", key, Buffer.alloc(16));
  return cipher.update(Buffer.alloc(length));
}
