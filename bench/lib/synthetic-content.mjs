import { randomBytes, seededRandom } from "./random.mjs";

/**
 * File contents for the synthetic repositories: code-like text drawn from a Zipf-weighted vocabulary (zlib packs it
 * to about a third, like real source), or incompressible bytes for the binary files. Every file is a pure function
 * of (seed, path, version), so a repository can be rebuilt byte for byte and a file edited without storing it.
 */
const KEYWORDS = [
  "const",
  "let",
  "return",
  "if",
  "else",
  "for",
  "while",
  "function",
  "class",
  "import",
  "export",
  "from",
  "new",
  "this",
  "await",
  "async",
  "try",
  "catch",
  "throw",
  "null",
  "true",
  "false",
  "=",
  "==",
  "!==",
  "+",
  "-",
  "*",
  "(",
  ")",
  "{",
  "}",
  "[",
  "]",
  ";",
  ",",
  ".",
  "=>",
  "&&",
  "||",
];
const SYLLABLES = [
  "get",
  "set",
  "user",
  "item",
  "list",
  "map",
  "node",
  "tree",
  "read",
  "write",
  "file",
  "path",
  "data",
  "value",
  "key",
  "count",
  "index",
  "parse",
  "render",
  "state",
  "config",
  "handle",
  "event",
  "error",
  "result",
  "buffer",
  "stream",
  "cache",
  "load",
  "save",
  "check",
  "build",
];
const VOCABULARY_SIZE = 4096;
const LINE_POOL_SIZE = 1 << 16;

export const TEXT_EXTENSIONS = ["js", "ts", "py", "c", "h", "md", "json", "go", "rs", "java"];

let linePool = null;

/** 65,536 distinct code-like lines (4–80 bytes, indented), built once from a fixed seed. */
function lines() {
  if (linePool) return linePool;
  const random = seededRandom(0x5eed);
  const vocabulary = [...KEYWORDS];
  while (vocabulary.length < VOCABULARY_SIZE) {
    const parts = 1 + random.int(3);
    let word = "";
    for (let i = 0; i < parts; i++) {
      const syllable = random.pick(SYLLABLES);
      word += i === 0 ? syllable : syllable[0].toUpperCase() + syllable.slice(1);
    }
    vocabulary.push(random.next() < 0.2 ? `${word}${random.int(100)}` : word);
  }
  // Zipf (s = 1) by inverse CDF over the ranks.
  const weights = vocabulary.map((_, rank) => 1 / (rank + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  const cdf = [];
  let sum = 0;
  for (const w of weights) {
    sum += w / total;
    cdf.push(sum);
  }
  const zipf = () => {
    const u = random.next();
    let lo = 0;
    let hi = cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return vocabulary[lo];
  };
  linePool = [];
  for (let i = 0; i < LINE_POOL_SIZE; i++) {
    const tokens = 1 + random.int(10);
    let line = "  ".repeat(random.int(5));
    for (let t = 0; t < tokens; t++) line += (t === 0 ? "" : " ") + zipf();
    linePool.push(Buffer.from(`${line}\n`));
  }
  return linePool;
}

function labelSeed(label) {
  let h = 2166136261;
  for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** `size` bytes of code-like text, starting with a header naming the file (so no two files are the same blob). */
export function textContent(label, size) {
  const pool = lines();
  const random = seededRandom(labelSeed(label));
  const out = Buffer.allocUnsafe(size);
  let at = out.write(`// ${label}\n`.slice(0, size));
  while (at < size) at += pool[random.int(LINE_POOL_SIZE)].copy(out, at, 0, Math.min(size - at, 200));
  return out;
}

export function binaryContent(label, size) {
  return randomBytes(label, size);
}

/** The file as it stands after `edits` edits: each inserts one line near the middle (as the measurements in docs/performance.md did). */
export function editedContent(base, label, edits) {
  let bytes = base;
  for (let edit = 1; edit <= edits; edit++) {
    const middle = bytes.indexOf(0x0a, Math.floor(bytes.length / 2));
    const at = middle === -1 ? bytes.length : middle + 1;
    bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from(`// edit ${edit} of ${label}\n`), bytes.subarray(at)]);
  }
  return bytes;
}
